"""Original TF1 checkpoints of google-research/albert, google-research/bert and
google-research/mobilebert (a ``bert_config.json`` with MobileBERT's keys):
finding the checkpoint and its config and reading its variables (optimizer
slots and ``global_step`` left out); each family's TF1 module
(``Family.tf1``) builds its model from them. This module imports no model.
"""

import glob
import json
import os
import re

import tensorflow as tf

from albert_keras.convert.conversion_error import ConversionError
from albert_keras.families import families

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
    prefix = find_checkpoint(path)
    config_file = find_config(prefix, config_path)
    data = _read_json(config_file)
    tensors = read_tf1_tensors(prefix)
    return _tf1_reader(data, config_file).load_tf1(prefix, data, tensors, config_file,
                                                   strict=strict, dtype=dtype)


def _tf1_reader(data, source):
    """The TF1 module of the family whose config ``data`` is: one that
    claims it (MobileBERT's keys) before one that reads any config."""
    modules = {f.tf1: f.tf1_module() for f in families() if f.tf1}
    readers = [m for m in modules.values() if m.reads_tf1_config(data)]
    if not readers:
        raise ConversionError(f"{source}: no model family reads this TF1 config")
    return min(readers, key=lambda m: getattr(m, "READS_ANY_CONFIG", False))
