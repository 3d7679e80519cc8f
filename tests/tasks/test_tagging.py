"""Word -> piece alignment for tagging, and decoding back to words."""

import numpy as np
import pytest

from albert_keras.tasks.tag_features import decode_tags
from albert_keras.tasks.tag_features import tag_features
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.special_ids import CLS_ID
from albert_keras.text.special_ids import SEP_ID


def test_first_piece_is_labelled(spm_path):
    encoder = SentencePiece(spm_path)
    words = ["Résumé", "naïve", "foxdogwindows", "😀"]
    tags = ["B-X", "I-X", "O", "B-Y"]
    index = {"B-X": 0, "B-Y": 1, "I-X": 2, "O": 3}
    features = tag_features(encoder, [words], 32, [tags], index)
    pieces = encoder.encode(words)
    ids = features.inputs["token_ids"][0]
    expected = [CLS_ID] + [p for w in pieces for p in w] + [SEP_ID]
    assert ids[:len(expected)].tolist() == expected
    assert features.inputs["padding_mask"][0].sum() == len(expected)
    firsts = np.cumsum([1] + [len(p) for p in pieces[:-1]])
    assert np.flatnonzero(features.weights[0]).tolist() == firsts.tolist()
    assert features.labels[0, firsts].tolist() == [0, 2, 3, 1]
    assert any(len(p) > 1 for p in pieces)  # the test covers multi-piece words


def test_long_sentences_are_cut_at_word_boundaries_and_decoded_back(spm_path):
    encoder = SentencePiece(spm_path)
    words = ("the quick brown fox jumps over a lazy dog café naïve " * 4).split()
    tags = ["B-A" if i % 3 == 0 else "O" for i in range(len(words))]
    names = ["B-A", "O"]
    features = tag_features(encoder, [words, ["dog"]], 12, [tags, ["O"]], {"B-A": 0, "O": 1})
    assert len(features.words) > 2  # the first sentence needed several rows
    covered = [(s, w) for row in features.words for s, w, _ in row]
    assert covered == [(0, i) for i in range(len(words))] + [(1, 0)]
    # Logits that pick each labelled position's gold tag decode back exactly.
    logits = np.zeros(features.labels.shape + (2,), np.float32)
    np.put_along_axis(logits, features.labels[..., None], 1.0, axis=-1)
    assert decode_tags(features, logits, [words, ["dog"]], names) == [tags, ["O"]]


def test_tag_loss_is_the_mean_over_labelled_pieces():
    """As torch's cross-entropy with ignore_index (HF's token classifiers):
    the padding and the later pieces of a word neither count nor dilute."""
    import keras

    from albert_keras.tasks.tag import Tag

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 10, 4)).astype("float32")
    labels = rng.integers(0, 4, size=(3, 10))
    weights = (rng.random((3, 10)) < 0.3).astype("float32")
    weights[0, 0] = 1.0
    loss = Tag().compile_args(None)["loss"]["logits"]
    ours = float(loss(labels, logits, sample_weight=weights))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    expected = -(picked * weights).sum() / weights.sum()
    assert ours == pytest.approx(expected, rel=1e-5)
    assert isinstance(loss, keras.losses.Loss)
