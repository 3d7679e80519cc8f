"""The ``tokenizer.json`` of an HF folder gives transformers' own ids, special
tokens included (its post-processor), for every tokenizer form we write, and
tokenizers.js (what transformers.js uses) reads it to the same ids."""

import json
import os
import shutil

import pytest
import sentencepiece as spm

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.convert import save_hf
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.wordpiece_tokenizer import WordPiece
from tests.helpers import SMALL
from tests.helpers import WORDPIECE_TEXTS
from tests.helpers import hf_albert_tokenizer
from tests.helpers import make_deberta_spm
from tests.helpers import make_sentences
from tests.helpers import make_wordpiece_vocab
from tests.web.driver import encode_hf_folder_in_node

# the shared hard set (accents, CJK, emoji, control characters, runs of
# spaces, very long words), a text far longer than any model, the special
# tokens written out, and ALBERT's `` '' quotes (which its class rewrites)
TEXTS = [t for t in WORDPIECE_TEXTS if t] + [
    " ".join(make_sentences(120, seed=3)), "the [MASK] sat on [SEP] the mat [CLS]",
    "``quoted'' and ''back``", "Hello WORLD, naïve CAFÉ crème BRÛLÉE 1,000,000."]
PAIRS = [("a question?", "an answer, naïve."), (TEXTS[1], TEXTS[2])]


def _encoder_with(tokenizer):
    encoder = AlbertEncoder(AlbertConfig(vocab_size=tokenizer.vocabulary_size, **SMALL))
    encoder.tokenizer = tokenizer
    return encoder


def _reference(folder, config):
    """transformers' tokenizer of the folder's class, built from its
    vocabulary file and options alone (no tokenizer.json)."""
    import transformers

    kind = config["tokenizer_class"]
    options = {k: v for k, v in config.items() if k != "tokenizer_class"}
    if kind == "AlbertTokenizer":
        return hf_albert_tokenizer(os.path.join(folder, "spiece.model"), **options)
    if kind == "DebertaV2Tokenizer":
        processor = spm.SentencePieceProcessor(model_file=os.path.join(folder, "spm.model"))
        vocab = [(processor.id_to_piece(i), processor.get_score(i))
                 for i in range(processor.get_piece_size())]
        return transformers.DebertaV2Tokenizer(vocab=vocab, **options)
    bare = os.path.join(folder, "bare")
    os.makedirs(bare)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(folder, name), os.path.join(bare, name))
    return transformers.AutoTokenizer.from_pretrained(bare)


@pytest.fixture(scope="module")
def cased_spm(tmp_path_factory):
    from albert_keras.text.spm_trainer import train_sentencepiece

    path = tmp_path_factory.mktemp("cased") / "spm.model"
    return train_sentencepiece(make_sentences(3000), str(path), vocab_size=120, lowercase=False)


def _tokenizer(kind, cased_spm, tmp_path, spm_path=None):
    if kind == "albert_case_folding":  # the shared model: nmt_nfkc_cf
        return SentencePiece(spm_path)
    if kind == "wordpiece_cased":
        return WordPiece(make_wordpiece_vocab(tmp_path / "vocab", lowercase=False))
    if kind == "wordpiece_uncased":
        return WordPiece(make_wordpiece_vocab(tmp_path / "vocab", lowercase=True))
    if kind == "albert_cased":
        return SentencePiece(cased_spm)
    if kind == "albert_lowercase_stripped":
        return SentencePiece(cased_spm, lowercase=True, keep_accents=False)
    (tmp_path / "src").mkdir()
    return SentencePiece(make_deberta_spm(tmp_path / "src"))


@pytest.mark.parametrize("kind", ["wordpiece_cased", "wordpiece_uncased", "albert_cased",
                                  "albert_lowercase_stripped", "albert_case_folding",
                                  "deberta"])
def test_tokenizer_json_gives_transformers_ids(kind, cased_spm, spm_path, tmp_path):
    import tokenizers
    import transformers

    folder = str(tmp_path / "hf")
    save_hf(_encoder_with(_tokenizer(kind, cased_spm, tmp_path, spm_path)), folder)
    config = json.load(open(os.path.join(folder, "tokenizer_config.json")))
    reference = _reference(folder, config)
    ours = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    assert ours.padding is None and ours.truncation is None
    loaded = transformers.AutoTokenizer.from_pretrained(folder)  # now from tokenizer.json
    texts = [t for t in TEXTS if kind != "albert_lowercase_stripped"
             or not any(0xAC00 <= ord(c) <= 0xD7A3 for c in t)]  # see test_hf_tokenizer
    for text in texts:
        want = reference(text)
        got = ours.encode(text)
        assert got.ids == want["input_ids"], text
        assert got.ids[0] == reference.cls_token_id and got.ids[-1] == reference.sep_token_id
        assert loaded(text)["input_ids"] == want["input_ids"], text
    for a, b in PAIRS:
        want = reference(a, b, return_token_type_ids=True)
        got = ours.encode(a, b)
        assert got.ids == want["input_ids"], (a, b)
        assert got.type_ids == want["token_type_ids"], (a, b)
    assert loaded.mask_token_id == reference.mask_token_id
    assert loaded.pad_token_id == reference.pad_token_id


@pytest.mark.parametrize("kind", ["wordpiece_uncased", "albert_lowercase_stripped",
                                  "albert_case_folding"])
def test_tokenizers_js_reads_the_folder_to_transformers_ids(kind, cased_spm, spm_path,
                                                            tmp_path):
    """tokenizers.js (transformers.js's tokenizer) on the folder's
    tokenizer.json and tokenizer_config.json, special tokens added (a
    case-folding SentencePiece model was read there without its folding)."""
    folder = str(tmp_path / "hf")
    save_hf(_encoder_with(_tokenizer(kind, cased_spm, tmp_path, spm_path)), folder)
    config = json.load(open(os.path.join(folder, "tokenizer_config.json")))
    reference = _reference(folder, config)
    texts = [t for t in TEXTS[:4] + TEXTS[-4:] if kind != "albert_lowercase_stripped"
             or not any(0xAC00 <= ord(c) <= 0xD7A3 for c in t)]
    assert encode_hf_folder_in_node(folder, texts) == [reference(t)["input_ids"]
                                                       for t in texts]
