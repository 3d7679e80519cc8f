"""The files of our model folders, by name, and reading the small ones.

A pretraining folder holds ``pretrainer.keras`` and ``encoder.keras``; a
fine-tuned folder holds ``model.keras`` and ``task.json``. Both hold the
tokenizer's file and ``tokenizer_kind.json``, which names its kind, file and
options (older folders hold it as ``tokenizer.json``, or ``spm.model``
alone; both still read). A lone ``.keras`` file works too, with a tokenizer
given. Every reader and writer takes the names from here.

Example:
>>> PARTS["encoder"], model_file("model.keras", (TASK_MODEL_FILE,))
('encoder.keras', 'model.keras')
"""

import os

from albert_keras.files import read_json
from albert_keras.text.tokenizer_asset import RECORD_FILE

PRETRAINER_FILE = "pretrainer.keras"
DISCRIMINATOR_FILE = "discriminator.keras"  # rtd runs: encoder + RTD head
GENERATOR_FILE = "generator.keras"  # rtd runs: the MLM generator
ENCODER_FILE = "encoder.keras"
TASK_MODEL_FILE = "model.keras"
TASK_FILE = "task.json"
TOKENIZER_FILE = RECORD_FILE
# HF's fast-tokenizer file has this name, so our record moved off it.
OLD_TOKENIZER_FILE = "tokenizer.json"
LEGACY_TOKENIZER = "spm.model"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"
METRICS_CSV = "metrics.csv"
TRAIN_CONFIG_FILE = "train_config.json"
CHECKPOINTS = "checkpoints"
LOGS = "logs"
# The model files a folder may hold, in the order a reader tries them.
MODEL_FILES = (ENCODER_FILE, TASK_MODEL_FILE, PRETRAINER_FILE, DISCRIMINATOR_FILE)
# Which model file ``--part`` picks (``auto``: the task model, else the encoder).
PARTS = {"encoder": ENCODER_FILE, "mlm": PRETRAINER_FILE, "model": TASK_MODEL_FILE,
         "discriminator": DISCRIMINATOR_FILE}


def folder_of(path):
    """``path`` itself when it is a folder, else the folder holding the file."""
    return path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))


def holds_our_model(path):
    """True for one of our folders (it holds a model file we write)."""
    return os.path.isdir(path) and any(
        os.path.isfile(os.path.join(path, name)) for name in MODEL_FILES)


def model_file(init, names):
    """``init`` itself, or the first of ``names`` in the folder ``init``."""
    if not os.path.isdir(init):
        return init
    for name in names:
        path = os.path.join(init, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"{init}: no {' or '.join(names)} in this folder")


def part_file(source, part="auto"):
    """The model file ``export --part`` means in a folder (or the file itself)."""
    if not os.path.isdir(source):
        return source
    if part == "auto":
        return model_file(source, (TASK_MODEL_FILE, ENCODER_FILE))
    if part not in PARTS:
        raise ValueError(f"--part must be one of auto, {', '.join(PARTS)}")
    return os.path.join(source, PARTS[part])


def read_task_spec(folder):
    """The ``task.json`` of a fine-tuned folder, as a dict ({} when absent)."""
    path = os.path.join(folder, TASK_FILE)
    return read_json(path) if os.path.isfile(path) else {}


def read_train_config(folder):
    """The folder's ``train_config.json`` as a dict ({} when absent or not a dict)."""
    path = os.path.join(folder, TRAIN_CONFIG_FILE)
    record = read_json(path) if os.path.isfile(path) else {}
    return record if isinstance(record, dict) else {}


def tokenizer_record(folder):
    """Our tokenizer record (kind, file, options), or None. Folders written
    before the record moved hold it as ``tokenizer.json``; HF folders hold
    their own ``tokenizer.json``, which has no ``kind``."""
    for name in (TOKENIZER_FILE, OLD_TOKENIZER_FILE):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            record = read_json(path)
            if isinstance(record, dict) and "kind" in record:
                return record
    return None
