"""The reader of our own sources: a model folder (a pretraining run's or a
fine-tuned one's) or a lone ``.keras`` file.

Example:
>>> claims("/no/such/model.keras")
False
"""

import os

from albert_keras.saving import load_model
from albert_keras.sources.layout import ENCODER_FILE
from albert_keras.sources.layout import PRETRAINER_FILE
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.sources.layout import folder_of
from albert_keras.sources.layout import holds_our_model
from albert_keras.sources.layout import model_file
from albert_keras.sources.layout import read_task_spec
from albert_keras.sources.model_rebuild import rebuilt_encoder
from albert_keras.sources.tokenizers import read_folder_tokenizer

# a published checkpoint (fine-tuning another task from it takes its encoder)
PUBLISHED = False


def claims(path):
    """True for one of our folders or a file (a ``.keras`` model)."""
    return os.path.isfile(path) or holds_our_model(path)


def tokenizer(path):
    """The tokenizer of the folder (a file's: the folder holding it)."""
    return read_folder_tokenizer(folder_of(path))


def model(path):
    """The folder's encoder, task model or pretrainer, in that order (or the file)."""
    return load_model(model_file(path, (ENCODER_FILE, TASK_MODEL_FILE, PRETRAINER_FILE)))


def pretrainer(path):
    """``(model, path)``: the folder's ``pretrainer.keras`` (or the file)."""
    path = os.path.join(path, PRETRAINER_FILE) if os.path.isdir(path) else path
    return load_model(path), path


def encoder(path, settings, stored=None):
    """The stored encoder, rebuilt with the run's ``settings``."""
    return rebuilt_encoder(stored if stored is not None else model(path), path, settings)


def task_model(path):
    """``(model, task_spec_dict)`` of a fine-tuned folder."""
    spec = read_task_spec(path)
    if not spec:
        raise FileNotFoundError(f"{path}: not a fine-tuned model folder (no {TASK_FILE})")
    return load_model(os.path.join(path, TASK_MODEL_FILE)), spec


def task_spec(path):
    """The folder's ``task.json`` ({} when absent)."""
    return read_task_spec(folder_of(path))
