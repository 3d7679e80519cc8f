import keras
import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer
from albert_keras.text.spm_model import TokenizerError
from albert_keras.text.spm_trainer import train_sentencepiece
from tests.helpers import make_sentences

STRINGS = [
    "The quick brown fox.",
    "안녕하세요 세계",
    "Café naïve RÉSUMÉ",
    "emoji 😀 and 🤖 robots",
    "",
    "   ",
    "東京 the windows",
]


def test_special_ids(spm_path):
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    assert [sp.id_to_piece(i) for i in range(5)] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    assert sp.bos_id() == -1 and sp.eos_id() == -1


def test_ids_equal_the_sentencepiece_library(spm_path):
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    tokenizer = SentencePieceTokenizer(spm_path)
    batch = tokenizer(tf.constant(STRINGS)).to_list()
    for text, ids in zip(STRINGS, batch):
        assert ids == sp.encode(text), text
    assert tokenizer(tf.constant(STRINGS[0])).numpy().tolist() == sp.encode(STRINGS[0])


def test_tokenizer_runs_in_tf_data_and_in_a_model(spm_path):
    sp = spm.SentencePieceProcessor(model_file=spm_path)
    tokenizer = SentencePieceTokenizer(spm_path)
    ds = tf.data.Dataset.from_tensor_slices(STRINGS).map(tokenizer)
    assert [x.numpy().tolist() for x in ds] == [sp.encode(s) for s in STRINGS]


def test_config_round_trip_keeps_the_model(spm_path):
    tokenizer = SentencePieceTokenizer(spm_path)
    clone = SentencePieceTokenizer.from_config(tokenizer.get_config())
    assert clone.get_config() == tokenizer.get_config()
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(tokenizer))
    assert restored(tf.constant(STRINGS)).to_list() == tokenizer(tf.constant(STRINGS)).to_list()


def test_lowercasing(tmp_path):
    cased = train_sentencepiece(make_sentences(500), str(tmp_path / "c.model"),
                                vocab_size=80, lowercase=False)
    uncased = train_sentencepiece(make_sentences(500), str(tmp_path / "u.model"),
                                  vocab_size=80, lowercase=True)
    u = spm.SentencePieceProcessor(model_file=uncased)
    c = spm.SentencePieceProcessor(model_file=cased)
    assert u.encode("THE FOX") == u.encode("the fox")
    assert c.encode("THE FOX") != c.encode("the fox")


def test_bpe_model_is_refused(tmp_path):
    prefix = str(tmp_path / "bpe")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(make_sentences(500)), model_prefix=prefix,
        model_type="bpe", vocab_size=80, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], minloglevel=2,
    )
    with pytest.raises(TokenizerError, match=r"bpe.model: a BPE SentencePiece model"):
        SentencePieceTokenizer(prefix + ".model")


def test_a_model_with_an_unused_piece_is_refused_in_one_line(spm_path, tmp_path):
    """tf-text's converter refuses pieces of type UNUSED with an internal
    error; we name the file and the piece first. The piece is appended to
    a trained model as protobuf bytes: SentencePiece{piece, score, type 5}."""
    import struct

    body = b"[spare]"
    piece = b"\x0a" + bytes([len(body)]) + body + b"\x15" + struct.pack("<f", -1e4) + b"\x18\x05"
    path = tmp_path / "unused.model"
    path.write_bytes(open(spm_path, "rb").read() + b"\x0a" + bytes([len(piece)]) + piece)
    last = spm.SentencePieceProcessor(model_file=spm_path).get_piece_size()
    assert spm.SentencePieceProcessor(model_file=str(path)).id_to_piece(last) == "[spare]"
    with pytest.raises(TokenizerError, match=rf"unused.model: piece {last} \('\[spare\]'\) "
                                             "has type UNUSED"):
        SentencePieceTokenizer(str(path))


def test_wrong_special_ids_and_garbage_are_refused(tmp_path):
    prefix = str(tmp_path / "plain")
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(make_sentences(500)), model_prefix=prefix,
        vocab_size=80, minloglevel=2,
    )
    with pytest.raises(TokenizerError, match="id 0 must be '<pad>'"):
        SentencePieceTokenizer(prefix + ".model")
    garbage = tmp_path / "garbage.model"
    garbage.write_bytes(b"\x00\x01 not a model")
    with pytest.raises(TokenizerError, match="garbage.model"):
        SentencePieceTokenizer(str(garbage))


def test_trainer_refuses_to_overwrite_and_empty_input(tmp_path, spm_path):
    with pytest.raises(FileExistsError):
        train_sentencepiece(["a b"], spm_path)
    with pytest.raises(ValueError):
        train_sentencepiece([], str(tmp_path / "empty.model"), vocab_size=50)
    assert not (tmp_path / "empty.model").exists()
