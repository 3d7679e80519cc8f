"""The reader of published checkpoint folders: HF, TF1 and keras-hub,
converted on the fly into our models (``albert_keras.convert`` reads each
format; the families build their models).

A converted model is kept (``_CHECKPOINTS``), so a folder read twice, as a
teacher and for its tokenizer, is converted once.

Example:
>>> claims("/no/such/folder")
False
"""

import logging
import os

from albert_keras.convert import is_hf_folder
from albert_keras.convert import is_tf1_checkpoint
from albert_keras.convert import load_checkpoint
from albert_keras.convert import load_hf
from albert_keras.convert import source_format_of
from albert_keras.convert.hf import hf_task_spec
from albert_keras.convert.keras_hub_preset import is_keras_hub_preset
from albert_keras.convert.keras_hub_preset import preset_tokenizer
from albert_keras.sources.layout import holds_our_model
from albert_keras.sources.model_rebuild import rebuilt_encoder
from albert_keras.sources.tokenizers import carry_tokenizer
from albert_keras.sources.tokenizers import read_folder_tokenizer

logger = logging.getLogger(__name__)
# Converted checkpoints, most recent last, two at most (a teacher and a
# student): a folder read twice is converted once, and no more is kept alive.
_CHECKPOINTS, _CHECKPOINTS_KEPT = {}, 2


# a published checkpoint (fine-tuning another task from it takes its encoder)
PUBLISHED = True


def claims(path):
    """True for an HF, TF1 or keras-hub folder that is not one of ours."""
    return not holds_our_model(path) and (is_hf_folder(path) or is_tf1_checkpoint(path))


def tokenizer(path):
    """The folder's tokenizer (a keras-hub preset's from its assets)."""
    if os.path.isdir(path) and is_keras_hub_preset(path):
        return preset_tokenizer(path)
    return read_folder_tokenizer(path)


def model(path):
    """Our model of the checkpoint (its MLM head too, where it has one),
    converted once and kept; a fine-tuned head's tensors are logged and
    left out."""
    key = os.path.abspath(path)
    if key not in _CHECKPOINTS:
        converted, report = load_checkpoint(path, strict=False)
        _log_conversion(path, converted, report)
        _attach_tokenizer(converted, path)
        _CHECKPOINTS[key] = converted
    _CHECKPOINTS[key] = _CHECKPOINTS.pop(key)  # the most recent last
    while len(_CHECKPOINTS) > _CHECKPOINTS_KEPT:
        _CHECKPOINTS.pop(next(iter(_CHECKPOINTS)))
    return _CHECKPOINTS[key]


def pretrainer(path):
    """``(model, path)``: the checkpoint with its MLM head."""
    return model(path), path


def encoder(path, settings, stored=None):
    """The encoder with the run's ``settings`` (an ``EncoderSettings``): an
    HF folder not converted yet is converted straight into it (building a
    Keras encoder is most of the cost, so it is built once), anything else
    rebuilt from the stored model."""
    if stored is None and source_format_of(path) == "hf" \
            and os.path.abspath(path) not in _CHECKPOINTS:
        converted, report = load_hf(path, strict=False, only_encoder=settings)
        _log_conversion(path, converted, report)
        _attach_tokenizer(converted, path)
        return converted
    return rebuilt_encoder(stored if stored is not None else model(path), path, settings)


def task_model(path):
    """``(model, task_spec_dict)`` of an HF ``...For<Task>`` folder: its task
    model, converted afresh (not the kept copy: a task object trains it in
    place), with the folder's tokenizer."""
    converted, _ = load_checkpoint(path, strict=False)
    if not getattr(converted, "task_spec", None):
        raise FileNotFoundError(f"{path}: a checkpoint with no task head we read (not "
                                "a ...For<Task> folder)")
    _attach_tokenizer(converted, path)
    return converted, converted.task_spec


def task_spec(path):
    """An HF ``...For<Task>`` folder's task, read from its ``config.json``."""
    return hf_task_spec(path)


def _log_conversion(path, converted, report):
    logger.info(f"{path}: converted {type(converted).__name__} "
                f"(loaded {', '.join(report['loaded'])})")
    if report["unused"]:
        logger.info(f"{path}: left out {len(report['unused'])} tensors that are not "
                    f"ours, e.g. {report['unused'][0]}")


def _attach_tokenizer(converted, path):
    """Gives a converted checkpoint's encoder the folder's tokenizer, so a
    model built on it (and saved) knows its special ids. A folder without
    one keeps none; a broken one is said, and kept out."""
    try:
        carry_tokenizer(converted, tokenizer(path))
    except FileNotFoundError:
        return
    except ValueError as e:  # a broken file, or one too big for the model
        logger.warning(f"{path}: its tokenizer does not fit ({e}); the model carries none")
