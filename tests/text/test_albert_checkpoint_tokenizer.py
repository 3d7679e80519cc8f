"""A published ALBERT checkpoint's spiece.model with HF AlbertTokenizer's
steps (lower-case, strip accents) gives HF's ids, on the host and in the graph."""

import json
import shutil

import pytest
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

from albert_keras.sources.registry import read_tokenizer
from albert_keras.text.normalizer_table import albert_normalizer
from albert_keras.text.normalizer_table import albert_normalizer_model
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.spm_trainer import train_sentencepiece
from tests.helpers import WORDPIECE_TEXTS
from tests.helpers import hf_albert_tokenizer
from tests.helpers import make_sentences

CODEPOINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
TEXTS = [t for t in WORDPIECE_TEXTS if "``" not in t and "''" not in t] + [
    "Hello WORLD, The Quick Brown Fox.", "NAÏVE CAFÉ crème BRÛLÉE"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """An ALBERT-style release folder: a case-keeping spiece.model whose
    vocabulary is lower-case, as albert-base-v2's is."""
    folder = tmp_path_factory.mktemp("albert-release")
    texts = [t.lower() for t in make_sentences(3000)] + ["naive cafe resume angstrom"] * 30
    train_sentencepiece(texts, str(folder / "spiece.model"), vocab_size=200, lowercase=False)
    return folder


def _hf_albert(path, lowercase=True, keep_accents=False):
    return hf_albert_tokenizer(path, do_lower_case=lowercase, keep_accents=keep_accents)


def test_ids_equal_hf_albert_tokenizer(checkpoint):
    path = checkpoint / "spiece.model"
    ours = SentencePiece(str(path))
    assert ours.options == {"lowercase": True, "keep_accents": False}  # HF's defaults
    hf = _hf_albert(path)
    layer = ours.keras_layer()
    graph = layer(tf.constant(TEXTS)).to_list()
    for text, host_ids, graph_ids in zip(TEXTS, ours.encode(TEXTS), graph):
        expected = hf(text, add_special_tokens=False)["input_ids"]
        assert host_ids == expected, text
        assert graph_ids == expected, text
    # Without the steps, upper-case words fall apart into unknown pieces.
    plain = spm.SentencePieceProcessor(model_file=str(path)).encode(TEXTS[-2])
    assert plain != ours.encode([TEXTS[-2]])[0]


def test_tokenizer_config_decides_and_the_folder_keeps_it(checkpoint, tmp_path):
    folder = tmp_path / "release"
    shutil.copytree(checkpoint, folder)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": False, "keep_accents": True}))
    tokenizer = read_tokenizer(str(folder))
    assert tokenizer.options == {"lowercase": False, "keep_accents": True}
    hf = _hf_albert(folder / "spiece.model", lowercase=False, keep_accents=True)
    assert tokenizer.encode(TEXTS) == [hf(t, add_special_tokens=False)["input_ids"]
                                       for t in TEXTS]
    ids, starts, ends = SentencePiece(str(checkpoint / "spiece.model")).encode_with_offsets(
        "NAÏVE Café")
    assert len(ids) == len(starts) and starts[0] == 0 and ends[-1] == len("NAÏVE Café")


def test_albert_normalizer_table_equals_hf_on_every_codepoint():
    ours = tf_text.FastBertNormalizer(model_buffer=albert_normalizer_model(True, False))
    hf = albert_normalizer(True, False)
    texts = ["a" + chr(c) + "b" for c in CODEPOINTS]
    out = ours.normalize(tf.constant(texts)).numpy()
    bad = [c for c, text, got in zip(CODEPOINTS, texts, out)
           if got.decode("utf-8") != hf.normalize_str(text)]
    assert bad == []
