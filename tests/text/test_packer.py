import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_keras.text.packer import SegmentPacker
from albert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer
from tests.helpers import run_layer_test


def test_layer_contract():
    run_layer_test(
        SegmentPacker,
        dict(sequence_length=10),
        lambda b, s: (tf.ragged.constant([[7] * s] * b), tf.ragged.constant([[8] * 3] * b)),
        lambda b, s: {k: (b, 10) for k in ("token_ids", "segment_ids", "padding_mask")},
        mixed_precision=False,
    )


def test_single_and_pair_layout():
    packer = SegmentPacker(9)
    single = packer(tf.ragged.constant([[10, 11, 12]]))
    assert single["token_ids"].numpy().tolist() == [[2, 10, 11, 12, 3, 0, 0, 0, 0]]
    assert single["padding_mask"].numpy().tolist() == [[1, 1, 1, 1, 1, 0, 0, 0, 0]]
    assert single["segment_ids"].numpy().sum() == 0
    pair = packer(tf.ragged.constant([[10, 11]]), tf.ragged.constant([[20, 21, 22]]))
    assert pair["token_ids"].numpy().tolist() == [[2, 10, 11, 3, 20, 21, 22, 3, 0]]
    assert pair["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 0]]


def test_truncation_modes():
    a = tf.ragged.constant([[10, 11, 12, 13, 14, 15]])
    b = tf.ragged.constant([[20, 21]])
    # 8 - 3 specials = 5 tokens: longest_first trims the long side only.
    out = SegmentPacker(8)(a, b)["token_ids"].numpy().tolist()
    assert out == [[2, 10, 11, 12, 3, 20, 21, 3]]
    out = SegmentPacker(8, truncate="waterfall")(a, b)["token_ids"].numpy().tolist()
    assert out == [[2, 10, 11, 12, 13, 14, 3, 3]]



def test_single_text_truncation_keeps_the_start_the_end_or_both():
    # 10 - 2 specials = 8 ids; the short row is never cut or repeated
    text = tf.ragged.constant([list(range(10, 22)), [10, 11, 12]])
    expected = {"head": [10, 11, 12, 13, 14, 15, 16, 17],
                "tail": [14, 15, 16, 17, 18, 19, 20, 21],
                "head+tail": [10, 11, 16, 17, 18, 19, 20, 21]}  # 8 // 4 from the start
    for mode, kept in expected.items():
        out = SegmentPacker(10, truncate=mode)(text)["token_ids"].numpy().tolist()
        assert out == [[2, *kept, 3], [2, 10, 11, 12, 3, 0, 0, 0, 0, 0]], mode
    with pytest.raises(ValueError, match="for single texts"):
        SegmentPacker(10, truncate="tail")(text, text)


def test_in_tf_data_and_in_a_model(spm_path):
    tokenizer = SentencePieceTokenizer(spm_path)
    packer = SegmentPacker(16)
    ds = tf.data.Dataset.from_tensor_slices((["the fox", "a dog"], ["jumps", "runs far"]))
    ds = ds.map(lambda x, y: packer(tokenizer(x), tokenizer(y)))
    items = list(ds)
    assert all(item["token_ids"].shape == (16,) for item in items)
    batched = packer(tokenizer(tf.constant(["the fox", "a dog"])),
                     tokenizer(tf.constant(["jumps", "runs far"])))
    np.testing.assert_array_equal(batched["token_ids"][1].numpy(), items[1]["token_ids"].numpy())

    strings = keras.Input(shape=(), dtype="string")
    outputs = packer(tokenizer(strings))
    model = keras.Model(strings, outputs)
    out = model(tf.constant(["the fox"]))
    assert out["token_ids"].shape == (1, 16)


def test_bad_arguments():
    with pytest.raises(ValueError, match="truncate"):
        SegmentPacker(8, truncate="middle")
    with pytest.raises(ValueError, match="sequence_length"):
        SegmentPacker(2)


def test_pack_texts_reports_each_inputs_whole_length(spm_path):
    from albert_keras.text.packer import pack_texts
    from albert_keras.text.sentencepiece_tokenizer import SentencePiece

    tokenizer = SentencePiece(spm_path)
    texts = ["the fox", "a dog " * 20, "x", "the quick brown fox jumps over the lazy dog " * 3]
    pairs = ["jumps", "runs far", "the dog " * 30, "y"]
    for second in (None, pairs):
        lengths = []
        cut = pack_texts(tokenizer, texts, second, 12, lengths=lengths, batch=3)
        # the reference: the same inputs packed long enough that nothing is cut
        whole = pack_texts(tokenizer, texts, second, 512)["padding_mask"].sum(1)
        assert lengths == whole.tolist()
        assert (cut["padding_mask"].sum(1) == np.minimum(whole, 12)).all()
        assert 0 < sum(n > 12 for n in lengths) < len(texts)
