"""The tokenizer file of a folder: finding it, reading it with its recorded
kind and options, writing it, and giving it to a model's encoder.

Example:
>>> folder_tokenizer_path("runs/pretrain")  # doctest: +SKIP
'runs/pretrain/spm.model'
"""

import os

from albert_keras.models.backbone import backbone_of
from albert_keras.sources.layout import LEGACY_TOKENIZER
from albert_keras.sources.layout import tokenizer_record
from albert_keras.text.registry import load_tokenizer
from albert_keras.text.tokenizer_asset import write_record

# The tokenizer files a published checkpoint folder (HF or TF1) may hold,
# in the order they are tried.
CHECKPOINT_TOKENIZERS = ("spiece.model", "vocab.txt", "tokenizer.json", "30k-clean.model")


def folder_tokenizer_path(folder):
    """The tokenizer file of ``folder``: the one its record names, else the
    first file of a known name."""
    record = tokenizer_record(folder)
    if record:
        path = os.path.join(folder, record["file"])
    else:
        names = (LEGACY_TOKENIZER,) + CHECKPOINT_TOKENIZERS
        found = [n for n in names if os.path.isfile(os.path.join(folder, n))]
        if not found:
            raise FileNotFoundError(f"{folder}: no tokenizer file (looked for "
                                    f"{', '.join(names)}); pass --tokenizer")
        path = os.path.join(folder, found[0])
    return tokenizer_file(path)


def tokenizer_file(path):
    """``path``, checked to be a file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such tokenizer file")
    return path


def read_folder_tokenizer(folder):
    """The host-side tokenizer of ``folder``, of the kind and options its
    record says (else the kind that reads the file)."""
    path = folder_tokenizer_path(folder)
    record = tokenizer_record(folder)
    if record:
        return load_tokenizer(path, record["kind"], record.get("options"))
    return load_tokenizer(path)


def write_tokenizer(folder, tokenizer):
    """Puts the tokenizer's file in ``folder`` and records its kind and name."""
    write_record(folder, tokenizer)


def carry_tokenizer(model, tokenizer):
    """Gives ``model``'s encoder ``tokenizer`` (its ``.keras`` file then
    carries it); returns ``model``."""
    encoder = backbone_of(model)
    if encoder is not None:
        encoder.tokenizer = tokenizer
    return model
