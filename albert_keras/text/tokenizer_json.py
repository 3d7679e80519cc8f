"""Our tokenizer as an HF ``tokenizer.json``, for tokenizers in other languages.

A browser page tokenizes with ``@huggingface/tokenizers`` (the JavaScript
implementation transformers.js uses), which reads HF's ``tokenizer.json``.
The file is built with HF's own ``tokenizers`` library from the pieces and
options our tokenizer uses, so the Rust library gives our ids on it (the
tests check), and the JavaScript one where it implements the same steps:

* WordPiece: the host tokenizer is already an HF tokenizer (BERT's
  normalizer and pre-tokenizer, the WordPiece model); it is written as it is.
* SentencePiece (unigram): the pieces and scores, the per-character steps
  our tokenizer applies before the model (NFKD and accent stripping,
  lower-casing), then SentencePiece's own normalization (its precompiled
  character map, trimmed and collapsed whitespace) and the ``▁`` word
  marker. The JavaScript ``Precompiled`` normalizer applies NFKC instead of
  the map (the map of ``nmt_nfkc`` models is NFKC plus whitespace rules,
  which the steps around it repeat), and a case-folding map (``*_cf``) is
  followed by lower-casing so that it holds there too.

Special tokens are not added: the caller packs ``[CLS] ... [SEP]`` itself.
"""

import json

from tokenizers import Tokenizer

UNIGRAM = 1  # sentencepiece's ModelType.UNIGRAM


def tokenizer_json(tokenizer):
    """The ``tokenizer.json`` text of one of our tokenizers.

    Args:
        tokenizer: a ``WordPiece``, ``SentencePiece`` or ``ByteLevelBPE``
            (``text.registry``).

    Returns:
        A JSON string that ``tokenizers.Tokenizer.from_str`` reads.

    Raises:
        ValueError: a tokenizer kind or model type with no such form.

    Example:
    >>> from albert_keras.text.registry import load_tokenizer
    >>> text = tokenizer_json(load_tokenizer("spm.model"))  # doctest: +SKIP
    """
    if tokenizer.kind == "wordpiece":
        return tokenizer.hf_tokenizer.to_str()
    if tokenizer.kind == "sentencepiece":
        return _unigram(tokenizer).to_str()
    if tokenizer.kind == "bpe":  # its own file, without its packing (the caller packs)
        copy = Tokenizer.from_str(tokenizer.hf_tokenizer.to_str())
        copy.post_processor = None
        return copy.to_str()
    raise ValueError(f"a {tokenizer.kind} tokenizer has no tokenizer.json form")


def _unigram(tokenizer):
    from tokenizers import Regex
    from tokenizers import models
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers

    processor = tokenizer.processor
    if tokenizer.model_type != UNIGRAM:
        raise ValueError(f"{tokenizer.source}: only unigram SentencePiece models have a "
                         "tokenizer.json form here")
    vocabulary = [(processor.id_to_piece(i), processor.get_score(i))
                  for i in range(processor.get_piece_size())]
    hf = Tokenizer(models.Unigram(vocabulary, unk_id=processor.unk_id(), byte_fallback=False))
    spec = tokenizer.normalizer_spec
    steps = []
    if not tokenizer.options["keep_accents"]:
        steps += [normalizers.NFKD(), normalizers.StripAccents()]
    if tokenizer.options["lowercase"]:
        steps.append(normalizers.Lowercase())
    if spec["charsmap"]:
        steps.append(normalizers.Precompiled(spec["charsmap"]))
        if spec["name"].endswith("_cf"):
            steps.append(normalizers.Lowercase())
    if spec["remove_extra_whitespaces"]:
        steps += [normalizers.Strip(), normalizers.Replace(Regex(" {2,}"), " ")]
    hf.normalizer = normalizers.Sequence(steps)
    hf.pre_tokenizer = pre_tokenizers.Metaspace(
        replacement="▁", prepend_scheme="always" if spec["add_dummy_prefix"] else "never")
    return hf


def tokenizer_config(tokenizer):
    """The ``tokenizer_config.json`` beside it: what tokenizers.js reads
    besides the file (no special tokens are added; the special ids)."""
    ids = tokenizer.special_ids
    return json.dumps({"add_special_tokens": False,
                       **{f"{name}_token": tokenizer.id_to_piece(i) for name, i in ids.items()
                          if i < tokenizer.vocabulary_size}}, indent=2)
