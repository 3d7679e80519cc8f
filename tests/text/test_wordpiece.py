import json
import os
import unicodedata

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from albert_keras.sources.registry import read_tokenizer
from albert_keras.sources.tokenizers import write_tokenizer
from albert_keras.text.normalizer_table import bert_normalizer_model
from albert_keras.text.normalizer_table import build_double_array
from albert_keras.text.registry import load_tokenizer
from albert_keras.text.wordpiece_tokenizer import WordPiece
from albert_keras.text.wordpiece_tokenizer import WordPieceTokenizer
from tests.helpers import WORDPIECE_TEXTS
from tests.helpers import hf_bert_tokenizer
from tests.helpers import make_wordpiece_vocab

CODEPOINTS = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def vocab(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("uncased" if request.param else "cased")
    return make_wordpiece_vocab(folder, lowercase=request.param), request.param


def test_ids_equal_hf_bert_tokenizer_fast(vocab):
    path, lowercase = vocab
    hf = hf_bert_tokenizer(path, lowercase)
    ours = WordPiece(path)
    assert ours.options["lowercase"] == lowercase  # found from the vocabulary
    layer = ours.keras_layer()
    in_graph = layer(tf.constant(WORDPIECE_TEXTS)).to_list()
    host = ours.encode(WORDPIECE_TEXTS)
    unknown = ours.special_ids["unk"]
    for text, graph_ids, host_ids in zip(WORDPIECE_TEXTS, in_graph, host):
        expected = hf(text, add_special_tokens=False)["input_ids"]
        assert host_ids == expected, text
        assert graph_ids == expected, text
    # The corpus does reach unknown pieces and long-word [UNK]s.
    assert sum(ids.count(unknown) for ids in host) >= 3


def test_special_token_strings_in_text_are_text(vocab):
    """HF matches "[MASK]" typed in the text as the special token; the
    in-graph tokenizer cannot, so both of our sides read it as text (as
    keras-hub does), and text cannot inject a separator."""
    path, _ = vocab
    tokenizer = WordPiece(path)
    text = "a [SEP] b [MASK]"
    host = tokenizer.encode([text])[0]
    assert host == tokenizer.keras_layer()(tf.constant([text])).to_list()[0]
    assert tokenizer.special_ids["sep"] not in host and tokenizer.special_ids["mask"] not in host


def test_special_ids_come_from_the_vocabulary(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(["[UNK]", "a", "[SEP]", "[PAD]", "b", "[CLS]", "[MASK]"]) + "\n")
    ids = WordPiece(str(path)).special_ids
    assert ids == {"unk": 0, "sep": 2, "pad": 3, "cls": 5, "mask": 6}
    path.write_text("[UNK]\n[PAD]\n[CLS]\n[SEP]\na\n")
    with pytest.raises(ValueError, match=r"vocab.txt: the vocabulary has no \[MASK\]"):
        WordPiece(str(path))
    path.write_text("[UNK]\na\na\n")
    with pytest.raises(ValueError, match=r"vocab.txt:3: piece 'a' repeats line 2"):
        WordPiece(str(path))


def test_tokenizer_config_and_hf_tokenizer_json_are_read(vocab, tmp_path):
    path, lowercase = vocab
    hf = hf_bert_tokenizer(path, lowercase)
    hf.save_pretrained(str(tmp_path))  # tokenizer.json + tokenizer_config.json
    assert read_tokenizer(str(tmp_path)).kind == "wordpiece"  # from tokenizer.json alone
    (tmp_path / "vocab.txt").write_text(open(path, encoding="utf-8").read(), encoding="utf-8")
    from_json = load_tokenizer(str(tmp_path / "tokenizer.json"))
    assert from_json.kind == "wordpiece" and from_json.options["lowercase"] == lowercase
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    config["do_lower_case"] = not lowercase
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    assert WordPiece(str(tmp_path / "vocab.txt")).options["lowercase"] == (not lowercase)
    # A folder's tokenizer: HF's own tokenizer.json has no "kind"; vocab.txt is read.
    assert read_tokenizer(str(tmp_path)).kind == "wordpiece"


def test_offsets_cover_the_pieces(vocab):
    path, _ = vocab
    tokenizer = WordPiece(path)
    text = "Naïve café, 中文 don't!"
    ids, starts, ends = tokenizer.encode_with_offsets(text)
    assert ids == tokenizer.encode([text])[0]
    pieces = [text[s:e] for s, e in zip(starts, ends)]
    assert pieces[0].lower().startswith("na") and "中" in pieces and "!" in pieces


def test_folder_round_trip_keeps_options(vocab, tmp_path):
    path, lowercase = vocab
    tokenizer = WordPiece(path, lowercase=not lowercase)
    write_tokenizer(str(tmp_path), tokenizer)
    again = read_tokenizer(str(tmp_path))
    assert again.options == tokenizer.options
    assert again.encode(WORDPIECE_TEXTS) == tokenizer.encode(WORDPIECE_TEXTS)
    # The folder also loads in HF transformers with the same ids.
    from transformers import AutoTokenizer

    hf = AutoTokenizer.from_pretrained(str(tmp_path))
    assert [hf(t, add_special_tokens=False)["input_ids"] for t in WORDPIECE_TEXTS] == \
        tokenizer.encode(WORDPIECE_TEXTS)


def test_layer_serializes_and_runs_in_tf_data(vocab):
    path, _ = vocab
    layer = WordPiece(path).keras_layer()
    restored = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert restored(tf.constant(WORDPIECE_TEXTS)).to_list() == \
        layer(tf.constant(WORDPIECE_TEXTS)).to_list()
    ds = tf.data.Dataset.from_tensor_slices(WORDPIECE_TEXTS).map(layer)
    assert [x.numpy().tolist() for x in ds] == layer(tf.constant(WORDPIECE_TEXTS)).to_list()
    assert WordPieceTokenizer.from_config(layer.get_config()).get_config() == layer.get_config()


# -- every codepoint ------------------------------------------------------------------------


@pytest.mark.parametrize("lowercase", [True, False], ids=["uncased", "cased"])
def test_normalizer_table_equals_hf_on_every_codepoint(lowercase):
    from tokenizers import normalizers

    ours = tf_text.FastBertNormalizer(model_buffer=bert_normalizer_model(lowercase, None))
    hf = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False,
                                    strip_accents=None, lowercase=lowercase)
    texts = ["a" + chr(c) + "b" for c in CODEPOINTS]
    out = ours.normalize(tf.constant(texts)).numpy()
    bad = [c for c, text, got in zip(CODEPOINTS, texts, out)
           if got.decode("utf-8") != hf.normalize_str(text)]
    assert bad == []


def _in_common_blocks(cp):
    return cp < 0x600 or 0x2000 <= cp <= 0x2E42 or 0x3000 <= cp <= 0x303F or \
        0x3040 <= cp <= 0x30FF or 0x4E00 <= cp <= 0x9FFF or 0xAC00 <= cp <= 0xD7AF or \
        0xFF00 <= cp <= 0xFFEF or 0x1F300 <= cp <= 0x1FAFF


def test_word_splitting_equals_hf_except_rare_unicode_version_differences():
    """Each codepoint between two letters: removed, a separator, punctuation
    (its own piece) or part of the word. HF's Unicode tables are older than
    ICU's, so a few hundred rare characters are classed differently; none is
    in a commonly used block."""
    from tokenizers import Tokenizer
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers
    from tokenizers.models import WordPiece as HFWordPiece

    vocabulary = ["[UNK]", "a", "b", "##a", "##b"]
    ours = tf_text.FastBertTokenizer(
        vocab=vocabulary, token_out_type=tf.int32,
        fast_bert_normalizer_model_buffer=bert_normalizer_model(True, None))
    hf = Tokenizer(HFWordPiece({v: i for i, v in enumerate(vocabulary)}, unk_token="[UNK]"))
    hf.normalizer = normalizers.BertNormalizer(lowercase=True)
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    texts = ["a" + chr(c) + "b" for c in CODEPOINTS]
    got = ours.tokenize(tf.constant(texts)).to_list()
    want = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    bad = [c for c, g, w in zip(CODEPOINTS, got, want) if g != w]
    assert len(bad) < 500, len(bad)
    common = [f"U+{c:04X} {unicodedata.name(chr(c), '?')}" for c in bad if _in_common_blocks(c)]
    assert common == []


def test_double_array_finds_every_key_and_nothing_else():
    rng = np.random.default_rng(0)
    keys = sorted({bytes(rng.integers(1, 256, rng.integers(1, 5)).tolist()) for _ in range(3000)})
    keys = [k for k in keys if not any(o != k and o.startswith(k) for o in keys)]
    values = list(range(1, len(keys) + 1))
    units = build_double_array(keys, values)

    def lookup(key):
        node = 0
        for byte in key:
            offset = (int(units[node]) >> 10) << ((int(units[node]) & 0x200) >> 6)
            nxt = node ^ offset ^ byte
            if nxt >= len(units) or int(units[nxt]) & 0x800000FF != byte:
                return None
            node = nxt
        if not int(units[node]) & 0x100:
            return None
        offset = (int(units[node]) >> 10) << ((int(units[node]) & 0x200) >> 6)
        return int(units[node ^ offset]) & 0x7FFFFFFF

    assert [lookup(k) for k in keys] == values
    absent = {bytes(rng.integers(1, 256, 3).tolist()) for _ in range(2000)} - set(keys)
    assert all(lookup(k) is None for k in absent if not any(k.startswith(x) for x in keys))


def test_can_read_tells_the_kinds_apart(vocab, spm_path, tmp_path):
    path, _ = vocab
    assert load_tokenizer(path).kind == "wordpiece"
    assert load_tokenizer(spm_path).kind == "sentencepiece"
    other = tmp_path / "words.txt"
    other.write_text("just\nsome\nwords\n")
    with pytest.raises(ValueError, match="words.txt: not a tokenizer file"):
        load_tokenizer(str(other))
    assert os.path.basename(WordPiece(path).source) == "vocab.txt"


def test_checkpoint_options_that_cannot_be_honoured_are_refused(vocab, tmp_path):
    path, _ = vocab
    (tmp_path / "vocab.txt").write_text(open(path, encoding="utf-8").read(), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text('{"tokenize_chinese_chars": false}')
    with pytest.raises(ValueError, match="tokenizer_config.json: tokenize_chinese_chars=false"):
        WordPiece(str(tmp_path / "vocab.txt"))
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": true')
    with pytest.raises(ValueError, match=r"tokenizer_config.json:1: not JSON"):
        WordPiece(str(tmp_path / "vocab.txt"))


def test_max_word_length_comes_from_tokenizer_json(vocab, tmp_path):
    path, lowercase = vocab
    hf = hf_bert_tokenizer(path, lowercase)
    hf.save_pretrained(str(tmp_path))
    spec = json.loads((tmp_path / "tokenizer.json").read_text())
    spec["model"]["max_input_chars_per_word"] = 8
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    tokenizer = load_tokenizer(str(tmp_path / "tokenizer.json"))
    unknown = tokenizer.special_ids["unk"]
    text = "internationalization is long"
    assert tokenizer.encode([text])[0][0] == unknown
    assert tokenizer.keras_layer()(tf.constant([text])).to_list()[0] == tokenizer.encode([text])[0]
