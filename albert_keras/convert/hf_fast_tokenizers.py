"""transformers 5's tokenizer classes, built with HF's ``tokenizers`` library.

An HF folder's ``tokenizer.json`` is what transformers' fast tokenizers and
transformers.js read. transformers 5 builds each class's tokenizer in its
``__init__`` (``models/bert``, ``models/albert``, ``models/deberta_v2``:
``tokenization_*.py``); the builders here make the same ``Tokenizer`` from
the folder's vocabulary file and ``tokenizer_config.json``: the normalizer,
pre-tokenizer, model and decoder of that class, its special tokens as added
tokens, and the post-processor that packs ``[CLS] a [SEP]`` and
``[CLS] a [SEP] b [SEP]`` (segment ids 0 and 1). No padding or truncation is
built in: the caller chooses them per call.

Example:
    >>> tokenizer = FAST_TOKENIZERS["BertTokenizer"](
    ...     {"vocab.txt": vocab_bytes}, {"do_lower_case": True})  # doctest: +SKIP
    >>> tokenizer.encode("a text").ids  # doctest: +SKIP
"""

import sentencepiece
from tokenizers import AddedToken
from tokenizers import Regex
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors

from albert_keras.text.spm_model import normalizer_spec

_ASIDE = "\ufdd0"  # a Unicode noncharacter: never in text, kept by lower-casing

# each class's special tokens and their defaults, in transformers' order
_SPECIALS = {
    "BertTokenizer": {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                      "mask": "[MASK]"},
    "AlbertTokenizer": {"pad": "<pad>", "unk": "<unk>", "cls": "[CLS]", "sep": "[SEP]",
                        "mask": "[MASK]"},
    "DebertaV2Tokenizer": {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                           "mask": "[MASK]"},
}


def _tokens(kind, config):
    """The special tokens' texts by name, as the config gives them."""
    return {name: str(config.get(f"{name}_token") or default)
            for name, default in _SPECIALS[kind].items()}


def _with_specials(hf, kind, config):
    """Adds the special tokens (matched before normalization, as
    transformers registers them) and the ``[CLS] ... [SEP]`` packing."""
    tokens = _tokens(kind, config)
    hf.add_special_tokens([AddedToken(text, special=True, normalized=False)
                           for text in tokens.values()])
    cls, sep = tokens["cls"], tokens["sep"]
    hf.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, hf.token_to_id(cls)), (sep, hf.token_to_id(sep))])
    return hf


def _sentencepiece_vocab(data):
    """``[(piece, score)]`` by id of a SentencePiece model's bytes.
    sentencepiece reads the scores (float fields our own reader skips)."""
    processor = sentencepiece.SentencePieceProcessor(model_proto=data)
    return [(processor.id_to_piece(i), processor.get_score(i))
            for i in range(processor.get_piece_size())]


def bert(files, config):
    """transformers' ``BertTokenizer`` on ``vocab.txt``."""
    # as transformers' load_vocab reads it: one piece a line (split at "\n"
    # only, as its readlines does), a later repeat taking the piece's id
    lines = files["vocab.txt"].decode("utf-8").split("\n")
    vocab = {line: index for index, line in enumerate(lines[:-1] if lines[-1] == "" else lines)}
    tokens = _tokens("BertTokenizer", config)
    hf = Tokenizer(models.WordPiece(vocab, unk_token=tokens["unk"]))
    hf.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=config.get("tokenize_chinese_chars", True),
        strip_accents=config.get("strip_accents"), lowercase=config.get("do_lower_case", True))
    hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    hf.decoder = decoders.WordPiece(prefix="##")
    return _with_specials(hf, "BertTokenizer", config)


def albert(files, config):
    """transformers' ``AlbertTokenizer`` on ``spiece.model``."""
    data = files["spiece.model"]
    hf = Tokenizer(models.Unigram(_sentencepiece_vocab(data), unk_id=1, byte_fallback=False))
    steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"')]
    if not config.get("keep_accents", False):
        steps += [normalizers.NFKD(), normalizers.StripAccents()]
    if config.get("do_lower_case", True):
        steps.append(normalizers.Lowercase())
    spec = normalizer_spec(data)
    if spec["charsmap"]:
        if spec["name"].endswith("_cf") and not config.get("do_lower_case", True):
            # tokenizers.js (transformers.js's) applies NFKC where the Rust
            # library applies the map, so a case-folding map's folding is
            # lost there and every capital is unknown. Lower-casing first
            # holds it in JS and changes nothing in Rust: the map gives the
            # same text for every case of a letter, except "İ" (U+0130,
            # which the map keeps and lower-casing makes two characters;
            # checked over every code point), which is set aside meanwhile
            # as a noncharacter no text holds.
            steps += [normalizers.Replace("\u0130", _ASIDE), normalizers.Lowercase(),
                      normalizers.Replace(_ASIDE, "\u0130")]
        steps.append(normalizers.Precompiled(spec["charsmap"]))
    hf.normalizer = normalizers.Sequence(steps)
    scheme = "always" if config.get("add_prefix_space", True) else "never"
    hf.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme)])
    hf.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme)
    return _with_specials(hf, "AlbertTokenizer", config)


def deberta_v2(files, config):
    """transformers' ``DebertaV2Tokenizer`` on ``spm.model`` (its ``[MASK]``,
    absent from DeBERTa's pieces, is added after the last one)."""
    vocab = _sentencepiece_vocab(files["spm.model"])
    unk = _tokens("DebertaV2Tokenizer", config)["unk"]
    unk_id = next((i for i, (piece, _) in enumerate(vocab) if piece == unk), 1)
    hf = Tokenizer(models.Unigram(vocab, unk_id=unk_id, byte_fallback=False))
    steps = [normalizers.Lowercase()] if config.get("do_lower_case", False) else []
    steps += [normalizers.Replace(Regex(r"\s{2,}|[\n\r\t]"), " "), normalizers.NFC(),
              normalizers.Strip(left=False, right=True)]
    hf.normalizer = normalizers.Sequence(steps)
    words = ([pre_tokenizers.Punctuation(behavior="isolated")]
             if config.get("split_by_punct", False) else [])
    scheme = "always" if config.get("add_prefix_space", True) else "first"
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [*words, pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme)])
    hf.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme)
    return _with_specials(hf, "DebertaV2Tokenizer", config)


FAST_TOKENIZERS = {"BertTokenizer": bert, "AlbertTokenizer": albert,
                   "DebertaV2Tokenizer": deberta_v2}
