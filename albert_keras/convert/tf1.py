"""Original TF1 checkpoints of google-research/albert, google-research/bert and
google-research/mobilebert (a ``bert_config.json`` with MobileBERT's keys).

Variable names are those of the original ``modeling.py`` (for instance
``bert/encoder/transformer/group_1/inner_group_0/attention_1/self/query/kernel``).
All groups are read, not only group 0. Optimizer slots and ``global_step``
are ignored.
"""

import glob
import json
import os
import re

import tensorflow as tf

from albert_keras.convert.assign import ConversionError
from albert_keras.convert.assign import assign_tensors
from albert_keras.convert.config_files import read_config_file
from albert_keras.convert.weight_layout import tf1_albert_names
from albert_keras.convert.weight_layout import tf1_bert_names
from albert_keras.models.mobilebert.tf1 import is_original_mobilebert_config
from albert_keras.models.mobilebert.tf1 import load_original

_CONFIG_NAMES = ("albert_config.json", "bert_config.json")
_SLOT_SUFFIXES = (
    "adam_m",
    "adam_v",
    "lamb_m",
    "lamb_v",
    "Adam",
    "Adam_1",
    "Momentum",
    "ExponentialMovingAverage",
)


def _is_optimizer_state(name):
    last = name.rsplit("/", 1)[-1]
    return (
        name in ("global_step", "good_steps", "loss_scale")
        or last in _SLOT_SUFFIXES
        or name.startswith("_CHECKPOINTABLE_OBJECT_GRAPH")
    )


def find_checkpoint(path):
    """Returns the checkpoint prefix for a folder or a prefix.

    In a folder: the ``checkpoint`` file's latest entry, else the
    ``*.index`` file with the highest step number.
    """
    if os.path.isfile(path + ".index"):
        return path
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest and os.path.isfile(latest + ".index"):
            return latest
        indexes = glob.glob(os.path.join(path, "*.index"))

        def step(p):
            m = re.search(r"-(\d+)\.index$", p)
            return int(m.group(1)) if m else -1

        if indexes:
            return max(indexes, key=step)[: -len(".index")]
    raise ConversionError(f"{path}: no TF1 checkpoint (no *.index file)")


def find_config(prefix, config_path=None):
    if config_path:
        return config_path
    folder = os.path.dirname(os.path.abspath(prefix))
    for name in _CONFIG_NAMES:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
    raise ConversionError(
        f"{folder}: no albert_config.json or bert_config.json; pass --config"
    )


def is_tf1_checkpoint(path):
    try:
        find_checkpoint(path)
        return True
    except ConversionError:
        return False


def read_tf1_tensors(prefix):
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        out = {}
        for name in shapes:
            if _is_optimizer_state(name):
                continue
            key = name[len("module/") :] if name.startswith("module/") else name
            out[key] = reader.get_tensor(name)
        return out
    except (tf.errors.OpError, ValueError) as e:
        raise ConversionError(f"{prefix}: cannot read checkpoint: {e}") from None


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConversionError(f"{path}: cannot read config: {e}") from None


def load_tf1(path, config_path=None, strict=True, dtype=None):
    """Builds our model from an original TF1 checkpoint.

    Args:
        path: the checkpoint prefix (``.../model.ckpt-125000``) or its folder.
        config_path: ``albert_config.json`` / ``bert_config.json``; by
            default looked up next to the checkpoint.
        strict: unexpected tensors are errors.
        dtype: a dtype policy for the built model.

    Returns:
        ``(model, report)`` as ``load_hf``.

    Example:
    >>> model, report = load_tf1("albert_base/model.ckpt-best")  # doctest: +SKIP
    """
    from albert_keras.models.albert.albert_encoder import AlbertEncoder
    from albert_keras.models.albert_pretrainer import AlbertPretrainer

    prefix = find_checkpoint(path)
    config_file = find_config(prefix, config_path)
    data = _read_json(config_file)
    tensors = read_tf1_tensors(prefix)
    if is_original_mobilebert_config(data):
        return load_original(prefix, data, tensors, config_file, strict=strict, dtype=dtype)
    config = read_config_file(config_file, "original")
    names = (tf1_albert_names if config.sharing == "all" else tf1_bert_names)(config)
    has_heads = any(k.startswith("cls/") for k in tensors)
    encoder = AlbertEncoder(config, dtype=dtype)
    model = AlbertPretrainer(encoder, dtype=dtype) if has_heads else encoder
    report = assign_tensors(model, tensors, names, prefix, strict=strict)
    return model, report
