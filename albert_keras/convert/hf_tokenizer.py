"""The tokenizer files of an HF folder, written from a model's own tokenizer.

``convert --to hf`` writes the weights; without the tokenizer beside them a
folder is no use to ``AutoTokenizer.from_pretrained`` nor to ``finetune
--init``. A model carries its tokenizer as a ``TokenizerAsset`` (the files
and a record of the kind and options), and this module turns that into the
files transformers reads:

* SentencePiece, ALBERT's special pieces (``<pad> <unk> [CLS] [SEP]
  [MASK]`` first): ``spiece.model`` and a ``tokenizer_config.json`` naming
  ``AlbertTokenizer`` (whatever the model family: transformers takes the
  class from this file), with the lower-casing and accent options the model
  was trained with.
* SentencePiece, DeBERTa's special pieces: ``spm.model`` and
  ``DebertaV2Tokenizer``, which cannot strip accents (refused then).
* WordPiece: the asset's own ``vocab.txt`` and ``tokenizer_config.json``
  (``BertTokenizer``), which the kind already writes in HF's form.

Every form also gets a ``tokenizer.json`` (``hf_tokenizer_json``): what
transformers' fast tokenizers and transformers.js load (the latter needs it),
built with HF's ``tokenizers`` library as transformers 5 builds that class's
tokenizer (``AlbertTokenizer``, ``DebertaV2Tokenizer``, ``BertTokenizer``):
the same normalizer, pre-tokenizer and model, the post-processor that packs
``[CLS] a [SEP] b [SEP]`` and the special tokens, no padding or truncation.
It is written here rather than by transformers' converters because those
are not installed with this package (and read ``.model`` files only with
protobuf 7, which TensorFlow's pins forbid); the tests check that its ids are
transformers' own, special tokens included.

Works from the asset's bytes, so no TensorFlow is imported (the JAX and
torch installs convert too).
"""

import os

from albert_keras.convert.hf_fast_tokenizers import FAST_TOKENIZERS
from albert_keras.files import write_json

CONFIG_FILE = "tokenizer_config.json"
TOKENIZER_JSON = "tokenizer.json"
# the vocabulary file of each form written here, in the order a reader tries them
VOCABULARY_FILES = ("spiece.model", "spm.model", "vocab.txt")


# what a tokenizer gives a model that reads token types: transformers 5's
# AlbertTokenizer (and its generic fast tokenizer) leave token_type_ids out by
# default, so a text pair would reach the model as one segment
_WITH_TOKEN_TYPES = ["input_ids", "token_type_ids", "attention_mask"]


def write_hf_tokenizer(folder, asset, token_types=True):
    """Writes ``asset``'s tokenizer into ``folder`` in transformers' form.

    Args:
        folder: the HF folder (it exists).
        asset: a ``TokenizerAsset`` (a model's ``tokenizer_asset``).
        token_types: the model reads token types (``type_vocab_size`` > 0):
            the tokenizer gives ``token_type_ids``, whatever its class'
            default.

    Returns:
        The names of the files written.

    Raises:
        ValueError: a tokenizer transformers cannot reproduce.

    Example:
    >>> write_hf_tokenizer("hf_folder", encoder.tokenizer_asset)  # doctest: +SKIP
    ['spiece.model', 'tokenizer_config.json']
    """
    vocabulary, config = asset.kind_class().hf_files(asset.files, asset.record)
    if token_types:
        config = {**config, "model_input_names": _WITH_TOKEN_TYPES}
    for name, data in vocabulary.items():
        _write_bytes(folder, name, data)
    write_json(os.path.join(folder, CONFIG_FILE), config)
    if TOKENIZER_JSON not in vocabulary:  # a kind whose own file is HF's is written as it is
        _write_bytes(folder, TOKENIZER_JSON,
                     hf_tokenizer_json(vocabulary, config).encode("utf-8"))
    return sorted({*vocabulary, CONFIG_FILE, TOKENIZER_JSON})


def hf_tokenizer_json(files, config):
    """The ``tokenizer.json`` text of an HF tokenizer folder's files.

    Args:
        files: the folder's vocabulary file by name (``vocab.txt``,
            ``spiece.model`` or ``spm.model``: its bytes).
        config: its ``tokenizer_config.json`` (the class, the options and
            the special tokens).

    Returns:
        The JSON text of a ``tokenizers.Tokenizer`` that gives the ids of
        transformers' ``config["tokenizer_class"]`` on those files.

    Example:
    >>> hf_tokenizer_json({"vocab.txt": b"[PAD]\\n..."},
    ...                   {"tokenizer_class": "BertTokenizer"})  # doctest: +SKIP
    """
    kind = config.get("tokenizer_class")
    if kind not in FAST_TOKENIZERS:
        raise ValueError(f"no tokenizer.json form for {kind} here (only "
                         f"{', '.join(FAST_TOKENIZERS)})")
    return FAST_TOKENIZERS[kind](files, config).to_str()


def _write_bytes(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
