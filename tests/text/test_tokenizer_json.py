"""``tokenizer_json``: tokenizers.js (what the browser page tokenizes with,
run in Node.js) reading the file gives our ids; so does HF's Rust
``tokenizers``, except where its ``Precompiled`` normalizer differs."""

import pytest
from tokenizers import Tokenizer

from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.tokenizer_json import tokenizer_json
from albert_keras.text.wordpiece_tokenizer import WordPiece
from tests.helpers import make_sentences
from tests.helpers import make_wordpiece_vocab
from tests.web.driver import encode_in_node

TEXTS = make_sentences(100, seed=5) + [
    "  Naïve café   déjà vu ", "ÀÉÎÕÜ straße ﬁne ① ＡＢＣ", "tabs\tand\nnewlines", "x" * 150,
    "东京 and 北京", "emoji 😀 ok", "", "   ", "[CLS] is text here"]


def _theirs(tokenizer, texts):
    hf = Tokenizer.from_str(tokenizer_json(tokenizer))
    return [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]


@pytest.mark.parametrize("options", [{}, {"lowercase": True, "keep_accents": False},
                                     {"lowercase": True}])
def test_sentencepiece(spm_path, options):
    tokenizer = SentencePiece(spm_path, **options)
    ours = tokenizer.encode(TEXTS)
    assert encode_in_node(tokenizer, TEXTS) == ours
    # HF's Rust library: its Precompiled normalizer does not recompose the
    # Hangul jamo that NFKD made of a syllable, where SentencePiece's own
    # normalizer and tokenizers.js's NFKC do; the other texts agree
    rust = _theirs(tokenizer, TEXTS)
    differ = [text for text, a, b in zip(TEXTS, ours, rust) if a != b]
    hangul = [text for text in TEXTS if any("\uac00" <= ch <= "\ud7a3" for ch in text)]
    assert differ == ([] if options.get("keep_accents", True) else hangul)


@pytest.mark.parametrize("lowercase", [True, False])
def test_wordpiece(tmp_path, lowercase):
    tokenizer = WordPiece(make_wordpiece_vocab(tmp_path, lowercase=lowercase, vocab_size=400))
    assert tokenizer.options["lowercase"] == lowercase
    ours = tokenizer.encode(TEXTS)
    assert _theirs(tokenizer, TEXTS) == ours
    assert encode_in_node(tokenizer, TEXTS) == ours
