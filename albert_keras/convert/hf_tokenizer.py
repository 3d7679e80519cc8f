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

Works from the asset's bytes, so no TensorFlow is imported (the JAX and
torch installs convert too).
"""

import os

from albert_keras.config import CLS_ID
from albert_keras.files import write_json
from albert_keras.text.spm_model import read_model_proto
from albert_keras.text.spm_model import special_ids_of

CONFIG_FILE = "tokenizer_config.json"
# the vocabulary file of each form written here, in the order a reader tries them
VOCABULARY_FILES = ("spiece.model", "spm.model", "vocab.txt")


def write_hf_tokenizer(folder, asset):
    """Writes ``asset``'s tokenizer into ``folder`` in transformers' form.

    Args:
        folder: the HF folder (it exists).
        asset: a ``TokenizerAsset`` (a model's ``tokenizer_asset``).

    Returns:
        The names of the files written.

    Raises:
        ValueError: a tokenizer transformers cannot reproduce.

    Example:
    >>> write_hf_tokenizer("hf_folder", encoder.tokenizer_asset)  # doctest: +SKIP
    ['spiece.model', 'tokenizer_config.json']
    """
    if asset.kind == "wordpiece":
        names = sorted(name for name in asset.files if name in ("vocab.txt", CONFIG_FILE))
        for name in names:
            _write_bytes(folder, name, asset.files[name])
        return names
    if asset.kind != "sentencepiece":
        raise ValueError(f"a {asset.kind} tokenizer has no HF form here")
    return _write_sentencepiece(folder, asset)


def _write_sentencepiece(folder, asset):
    data = asset.files[asset.record["file"]]
    _, facts, source = read_model_proto(data)
    pieces = [piece for piece, _ in facts.pieces]
    ids = special_ids_of(facts, source)
    options = {"lowercase": False, "keep_accents": True, **asset.record.get("options", {})}
    deberta = ids["cls"] != CLS_ID  # special_ids_of tries ALBERT's convention first
    tokens = {f"{name}_token": pieces[i] if i < len(pieces) else "[MASK]"
              for name, i in ids.items()}
    if deberta:
        if not options["keep_accents"]:
            raise ValueError("the tokenizer strips accents, which transformers' "
                             "DebertaV2Tokenizer cannot do; the HF folder would cut text "
                             "differently")
        name, config = "spm.model", {"tokenizer_class": "DebertaV2Tokenizer",
                                     "split_by_punct": False}
    else:
        name, config = "spiece.model", {"tokenizer_class": "AlbertTokenizer",
                                        "keep_accents": options["keep_accents"],
                                        "remove_space": True}
    _write_bytes(folder, name, data)
    write_json(os.path.join(folder, CONFIG_FILE),
               {**config, "do_lower_case": options["lowercase"], **tokens})
    return [name, CONFIG_FILE]


def _write_bytes(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
