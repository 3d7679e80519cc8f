"""The reader of a lone tokenizer file (``spm.model``, ``vocab.txt``, an HF
``tokenizer.json``), or a folder holding one and no model: a tokenizer and
no model.

Example:
>>> claims("runs/model.keras")
False
"""

import os

from albert_keras.convert import is_hf_folder
from albert_keras.convert import is_tf1_checkpoint
from albert_keras.sources.layout import holds_our_model
from albert_keras.sources.tokenizers import folder_tokenizer_path
from albert_keras.sources.tokenizers import read_folder_tokenizer
from albert_keras.text.registry import load_tokenizer

# a published checkpoint (fine-tuning another task from it takes its encoder)
PUBLISHED = False


def claims(path):
    """True for a file that is not a ``.keras`` model, or a folder with a
    tokenizer file and no model of ours nor a checkpoint."""
    if os.path.isfile(path):
        return not path.endswith(".keras")
    if not os.path.isdir(path) or holds_our_model(path) or is_hf_folder(path) \
            or is_tf1_checkpoint(path):
        return False
    try:
        folder_tokenizer_path(path)
    except FileNotFoundError:
        return False
    return True


def tokenizer(path):
    """The tokenizer in the file (of the first kind that reads it), or the
    folder's (of the kind its record names)."""
    return read_folder_tokenizer(path) if os.path.isdir(path) else load_tokenizer(path)


def _no_model(path, *_, **__):
    raise FileNotFoundError(f"{path}: a tokenizer and no model")


model = pretrainer = encoder = task_model = _no_model


def task_spec(path):
    return {}
