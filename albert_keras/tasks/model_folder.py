"""Reading model folders: the pretraining output and fine-tuned models.

A pretraining folder holds ``encoder.keras`` (and ``pretrainer.keras``);
a fine-tuned folder holds ``model.keras`` and ``task.json``. Both hold
``spm.model``. A lone ``.keras`` file works too, with ``tokenizer`` given.
"""

import json
import os

from albert_keras.models.albert_encoder import AlbertEncoder
from albert_keras.saving import load_model

TASK_FILE = "task.json"


def tokenizer_path(init, tokenizer=None):
    """The SentencePiece model for ``init`` (a folder or a ``.keras`` file)."""
    if tokenizer:
        path = tokenizer
    elif os.path.isdir(init):
        path = os.path.join(init, "spm.model")
    else:
        path = os.path.join(os.path.dirname(os.path.abspath(init)), "spm.model")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no tokenizer model; pass --tokenizer")
    return path


def model_file(init, names):
    """``init`` itself, or the first of ``names`` in the folder ``init``."""
    if not os.path.isdir(init):
        return init
    for name in names:
        path = os.path.join(init, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(f"{init}: no {' or '.join(names)} in this folder")


def load_encoder(init, dtype=None, from_scratch=False, output_hidden_states=False):
    """The encoder of any of our models, rebuilt with the ``dtype`` policy.

    The stored policy is the training one (often ``mixed_bfloat16``); the
    encoder is rebuilt from its config with ``dtype`` and the weights are
    copied, unless ``from_scratch`` (same architecture, new weights).
    """
    model = load_model(model_file(init, ("encoder.keras", "model.keras", "pretrainer.keras")))
    encoder = model if isinstance(model, AlbertEncoder) else getattr(model, "encoder", None)
    if not isinstance(encoder, AlbertEncoder):
        raise ValueError(f"{init}: {type(model).__name__} has no AlbertEncoder")
    rebuilt = AlbertEncoder(
        encoder.config,
        output_hidden_states=output_hidden_states,
        mask_value=encoder.mask_value,
        dtype=dtype,
    )
    if not from_scratch:
        rebuilt.set_weights(encoder.get_weights())
    return rebuilt


def load_task_model(folder):
    """``(model, task_spec)`` of a fine-tuned folder."""
    spec_path = os.path.join(folder, TASK_FILE)
    if not os.path.isfile(spec_path):
        raise FileNotFoundError(f"{folder}: not a fine-tuned model folder (no {TASK_FILE})")
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    return load_model(os.path.join(folder, "model.keras")), spec
