"""The model folder: one home for its layout and its readers and writers.

A pretraining folder holds ``pretrainer.keras`` and ``encoder.keras``; a
fine-tuned folder holds ``model.keras`` and ``task.json``. Both hold the
tokenizer's file and ``tokenizer_kind.json``, which names its kind, file and
options (older folders hold it as ``tokenizer.json``, or ``spm.model``
alone; both still read). A lone ``.keras`` file works too, with a tokenizer given.

Pretraining, fine-tuning, inference, export and the command line all go
through these functions, so the file names are written down once.
"""

import dataclasses
import functools
import json
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
from albert_keras.families import build_backbone
from albert_keras.families import preset_config
from albert_keras.families import preset_names
from albert_keras.files import read_json
from albert_keras.model_config_files import configured_positions
from albert_keras.models.backbone import backbone_of
from albert_keras.models.backbone import rebuilt
from albert_keras.models.encoder_settings import EncoderSettings
from albert_keras.saving import load_model
from albert_keras.text.registry import load_tokenizer
from albert_keras.text.tokenizer_asset import RECORD_FILE
from albert_keras.text.tokenizer_asset import write_record

PRETRAINER_FILE = "pretrainer.keras"
DISCRIMINATOR_FILE = "discriminator.keras"  # rtd runs: encoder + RTD head
GENERATOR_FILE = "generator.keras"  # rtd runs: the MLM generator
ENCODER_FILE = "encoder.keras"
TASK_MODEL_FILE = "model.keras"
TASK_FILE = "task.json"
TOKENIZER_FILE = RECORD_FILE
# HF's fast-tokenizer file has this name, so our record moved off it.
_OLD_TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "config.json"
METRICS_FILE = "metrics.json"
METRICS_CSV = "metrics.csv"
TRAIN_CONFIG_FILE = "train_config.json"
CHECKPOINTS = "checkpoints"
LOGS = "logs"
# Which model file ``--part`` picks (``auto``: the task model, else the encoder).
PARTS = {"encoder": ENCODER_FILE, "mlm": PRETRAINER_FILE, "model": TASK_MODEL_FILE,
         "discriminator": DISCRIMINATOR_FILE}
_LEGACY_TOKENIZER = "spm.model"
logger = logging.getLogger(__name__)


def folder_of(path):
    """``path`` itself when it is a folder, else the folder holding the file."""
    return path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))


# -- tokenizer ----------------------------------------------------------------------------


# The tokenizer files a published checkpoint folder (HF or TF1) may hold,
# in the order they are tried.
CHECKPOINT_TOKENIZERS = ("spiece.model", "vocab.txt", "tokenizer.json", "30k-clean.model")


def _record(folder):
    """Our tokenizer record (kind, file, options), or None. Folders written
    before the record moved hold it as ``tokenizer.json``; HF folders hold
    their own ``tokenizer.json``, which has no ``kind``."""
    for name in (TOKENIZER_FILE, _OLD_TOKENIZER_FILE):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            record = read_json(path)
            if isinstance(record, dict) and "kind" in record:
                return record
    return None


def tokenizer_path(init, tokenizer=None):
    """The tokenizer file for ``init`` (a folder or a ``.keras`` file)."""
    if tokenizer:
        path = tokenizer
    else:
        folder = folder_of(init)
        record = _record(folder)
        if record:
            path = os.path.join(folder, record["file"])
        else:
            names = (_LEGACY_TOKENIZER,) + CHECKPOINT_TOKENIZERS
            found = [n for n in names if os.path.isfile(os.path.join(folder, n))]
            if not found:
                _refuse_modelless(init)
                raise FileNotFoundError(f"{folder}: no tokenizer file (looked for "
                                        f"{', '.join(names)}); pass --tokenizer")
            path = os.path.join(folder, found[0])
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such tokenizer file")
    return path


def _refuse_modelless(path):
    """A folder that holds no model at all is named as such, before its
    missing tokenizer."""
    if not os.path.isdir(path) or is_checkpoint_folder(path):
        return
    if not any(os.path.isfile(os.path.join(path, name)) for name in
               (ENCODER_FILE, PRETRAINER_FILE, TASK_MODEL_FILE, DISCRIMINATOR_FILE)):
        raise FileNotFoundError(
            f"{path}: no model here (expected {TASK_MODEL_FILE}, {ENCODER_FILE} or "
            f"{PRETRAINER_FILE}, or an HF or TF1 checkpoint folder)")


def read_tokenizer(init, tokenizer=None):
    """The host-side tokenizer of a folder (or the ``tokenizer`` file given)."""
    if tokenizer is None and os.path.isdir(init):
        if is_keras_hub_preset(init):
            return preset_tokenizer(init)
    path = tokenizer_path(init, tokenizer)
    record = None if tokenizer else _record(folder_of(init))
    if record:
        return load_tokenizer(path, record["kind"], record.get("options"))
    return load_tokenizer(path)


def tokenizer_from_preset(source):
    """``Tokenizer.from_preset``: the tokenizer file ``source``, or the
    tokenizer of a model folder, ``.keras`` file or checkpoint folder."""
    source = os.fspath(source)
    if os.path.isfile(source) and not source.endswith(".keras"):
        return load_tokenizer(source)
    return read_tokenizer(source)


def write_tokenizer(folder, tokenizer):
    """Puts the tokenizer's file in ``folder`` and records its kind and name."""
    write_record(folder, tokenizer)


# -- published checkpoints -----------------------------------------------------------------


def is_checkpoint_folder(path):
    """True for an HF folder or a TF1 checkpoint that is not one of our folders."""
    if os.path.isdir(path) and any(os.path.isfile(os.path.join(path, name))
                                   for name in (ENCODER_FILE, PRETRAINER_FILE, TASK_MODEL_FILE)):
        return False
    return is_hf_folder(path) or is_tf1_checkpoint(path)


# Converted checkpoints, most recent last, two at most (a teacher and a
# student): a folder read twice is converted once, and no more is kept alive.
_CHECKPOINTS, _CHECKPOINTS_KEPT = {}, 2


def load_checkpoint_folder(path):
    """Our model from a published checkpoint folder, converted on the fly
    (kept: ``_CHECKPOINTS``); a fine-tuned head's tensors are logged and left out."""
    key = os.path.abspath(path)
    if key not in _CHECKPOINTS:
        model, report = load_checkpoint(path, strict=False)
        _log_conversion(path, model, report)
        _attach_tokenizer(model, path)
        _CHECKPOINTS[key] = model
    _CHECKPOINTS[key] = _CHECKPOINTS.pop(key)  # the most recent last
    while len(_CHECKPOINTS) > _CHECKPOINTS_KEPT:
        _CHECKPOINTS.pop(next(iter(_CHECKPOINTS)))
    return _CHECKPOINTS[key]


def converted_encoder(path, settings):
    """The encoder of the HF folder ``path``, built once with the run's
    ``settings`` (an ``EncoderSettings``, which says why), with its tokenizer."""
    encoder, report = load_hf(path, strict=False, only_encoder=settings)
    _log_conversion(path, encoder, report)
    _attach_tokenizer(encoder, path)
    return encoder


def _converts_once(path):
    """An HF folder not converted in this process yet (a kept one is rebuilt)."""
    return (is_checkpoint_folder(path) and source_format_of(path) == "hf"
            and os.path.abspath(path) not in _CHECKPOINTS)


def _log_conversion(path, model, report):
    logger.info(f"{path}: converted {type(model).__name__} "
                f"(loaded {', '.join(report['loaded'])})")
    if report["unused"]:
        logger.info(f"{path}: left out {len(report['unused'])} tensors that are not "
                    f"ours, e.g. {report['unused'][0]}")


def load_checkpoint_task(path):
    """``(model, task_spec_dict)`` of an HF ``...For<Task>`` folder: its task
    model, converted afresh (not the shared copy: a task object trains it in
    place), with the folder's tokenizer."""
    model, _ = load_checkpoint(path, strict=False)
    if not getattr(model, "task_spec", None):
        raise FileNotFoundError(f"{path}: a checkpoint with no task head we read (not "
                                "a ...For<Task> folder)")
    _attach_tokenizer(model, path)
    return model, model.task_spec


def _attach_tokenizer(model, path):
    """Gives a converted checkpoint's encoder the folder's tokenizer, so a
    model built on it (and saved) knows its special ids. A folder without
    one keeps none; a broken one is said, and kept out."""
    try:
        carry_tokenizer(model, read_tokenizer(path))
    except FileNotFoundError:
        return
    except ValueError as e:  # a broken file, or one too big for the model
        logger.warning(f"{path}: its tokenizer does not fit ({e}); the model carries none")


# -- models ---------------------------------------------------------------------------------


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


def _stored_model(init):
    """The model a source holds: a converted checkpoint, or our ``.keras``
    file (the folder's encoder, task model or pretrainer, in that order)."""
    if is_checkpoint_folder(init):
        return load_checkpoint_folder(init)
    return load_model(model_file(init, (ENCODER_FILE, TASK_MODEL_FILE, PRETRAINER_FILE)))


def rebuilt_encoder(model, source, settings, from_scratch=False):
    """The encoder of ``model``, rebuilt with the run's ``settings`` (an
    ``EncoderSettings``: the stored policy is the training one, often
    ``mixed_bfloat16``); the weights are copied, unless ``from_scratch``
    (same architecture, new weights). ``source`` names the model in errors.
    """
    encoder = backbone_of(model)
    if encoder is None:
        raise ValueError(f"{source}: {type(model).__name__} has no encoder")
    copy = rebuilt(encoder, settings.config_of(encoder.config), **settings.options())
    if not from_scratch:
        copy.set_weights(encoder.get_weights())
    return copy


def encoder_from_preset(source, dtype=None, tokenizer=None):
    """``Backbone.from_preset``: the encoder of anything ``--init`` takes, or
    of a preset name (new weights); ``tokenizer`` gives it that file."""
    source = os.fspath(source)
    if not os.path.exists(source) and source in preset_names():
        encoder = build_backbone(preset_config(source), dtype=dtype)
        if tokenizer:
            encoder.tokenizer = tokenizer_from_preset(tokenizer)
        return encoder
    origin = ModelSource(source, tokenizer)
    return origin.give_tokenizer(origin.encoder(dtype=dtype))


@dataclasses.dataclass
class ModelSource:
    """A model to start from (``--init``, ``--teacher``, ``--student-init``),
    resolved once.

    It carries what every step needs from it: the tokenizer, the stored
    model (read on first use, then kept), and what the folder records about
    its training (``train_config.json``: objective, pooling) and its task
    (``task.json``). The kind of source (our folder, a ``.keras`` file, an
    HF, TF1 or keras-hub folder) is settled here, not by each step.

    Args:
        path: the folder or ``.keras`` file.
        tokenizer_file: a tokenizer file given by the user (default: the
            folder's own).

    Example:
    >>> source = ModelSource("runs/pretrain")  # doctest: +SKIP
    >>> source.tokenizer.vocabulary_size, source.train_config["objective"]  # doctest: +SKIP
    (8000, 'mlm')
    """

    path: str
    tokenizer_file: str = None

    def __post_init__(self):
        self._tokenizer = self._model = None

    @property
    def tokenizer(self):
        """The host-side tokenizer (read once)."""
        if self._tokenizer is None:
            self._tokenizer = read_tokenizer(self.path, self.tokenizer_file)
        return self._tokenizer

    @property
    def model(self):
        """The stored model (read once)."""
        if self._model is None:
            self._model = _stored_model(self.path)
        return self._model

    @functools.cached_property
    def train_config(self):
        """The folder's ``train_config.json`` as a dict ({} when absent; read once)."""
        path = os.path.join(folder_of(self.path), TRAIN_CONFIG_FILE)
        record = read_json(path) if os.path.isfile(path) else {}
        return record if isinstance(record, dict) else {}

    @functools.cached_property
    def task_spec(self):
        """The folder's ``task.json`` as a dict, or an HF ``...For<Task>``
        folder's, read from its ``config.json`` ({} when absent; read once)."""
        if is_checkpoint_folder(self.path):
            return hf_task_spec(self.path)
        return read_task_spec(folder_of(self.path))

    def data_file(self, key):
        """The ``train`` or ``eval`` file the folder was fine-tuned on, if it
        still exists (from ``train_config.json``; a relative name is a file
        in the folder, as ``save_to_preset`` keeps the rows it was fit on),
        else None."""
        value = self.train_config.get(key)
        if not isinstance(value, str):
            return None
        path = os.path.join(folder_of(self.path), value)  # an absolute value stays as it is
        return path if os.path.isfile(path) else None

    @functools.cached_property
    def max_position_embeddings(self):
        """The longest input the model reads, from its config alone (a
        ``.keras`` file's, a checkpoint's ``config.json``); the model is
        loaded only when no config says it."""
        try:
            file = model_file(self.path, (ENCODER_FILE, TASK_MODEL_FILE, PRETRAINER_FILE))
        except FileNotFoundError:
            file = None  # a checkpoint folder: its config files say it
        found = configured_positions(file, folder_of(self.path))
        if found is None:
            found = backbone_of(self.model).config.max_position_embeddings
        return int(found)

    def give_tokenizer(self, encoder):
        """``encoder``, given the file named, else keeping its own, else the folder's."""
        if encoder.tokenizer is None or self.tokenizer_file:
            encoder.tokenizer = self.tokenizer
        return encoder

    def fine_tuned_spec(self, task_name):
        """The ``task.json`` of a fine-tuned folder of ``task_name`` as a
        dict; {} for any other source; a folder fine-tuned for another task
        is an error naming both."""
        spec = self.task_spec if os.path.isdir(self.path) else {}
        if spec and spec.get("task") != task_name:
            if is_checkpoint_folder(self.path):
                return {}  # a published checkpoint of another task: its encoder starts this one
            raise ValueError(f"{self.path}: a fine-tuned {spec.get('task')} folder, "
                             f"not {task_name}")
        return spec

    def task_model(self):
        """``(model, task_spec_dict)`` of a fine-tuned folder (ours, or an HF
        ``...For<Task>`` folder, converted afresh: the caller may train it)."""
        load = load_checkpoint_task if is_checkpoint_folder(self.path) else load_task_model
        model, spec = load(self.path)
        self._model = model
        return model, spec

    def pretrainer(self):
        """``(model, path)``: the model with the masked-LM head (a folder's
        ``pretrainer.keras``, or a published checkpoint with its MLM head)."""
        model, path = load_pretrainer(self.path)
        self._model = model
        return model, path

    def encoder(self, dtype=None, from_scratch=False, output_hidden_states=False,
                dropout=None):
        """The source's encoder with the run's settings (see
        ``EncoderSettings``): an HF folder not read yet is converted straight
        into it (``converted_encoder``), anything else rebuilt from the
        stored model (``rebuilt_encoder``)."""
        settings = EncoderSettings(dtype=dtype, dropout=dropout,
                                   output_hidden_states=output_hidden_states)
        if self._model is None and not from_scratch and _converts_once(self.path):
            return converted_encoder(self.path, settings)
        return rebuilt_encoder(self.model, self.path, settings, from_scratch=from_scratch)


def load_pretrainer(init):
    """The model with the masked-LM head: a folder's ``pretrainer.keras``, or a
    published checkpoint with its MLM head."""
    if is_checkpoint_folder(init):
        return load_checkpoint_folder(init), init
    path = os.path.join(init, PRETRAINER_FILE) if os.path.isdir(init) else init
    return load_model(path), path


def read_task_spec(folder):
    """The ``task.json`` of a fine-tuned folder, as a dict ({} when absent)."""
    path = os.path.join(folder, TASK_FILE)
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def load_task_model(folder):
    """``(model, task_spec_dict)`` of a fine-tuned folder."""
    spec = read_task_spec(folder)
    if not spec:
        raise FileNotFoundError(f"{folder}: not a fine-tuned model folder (no {TASK_FILE})")
    return load_model(os.path.join(folder, TASK_MODEL_FILE)), spec


def carry_tokenizer(model, tokenizer):
    """Gives ``model``'s encoder ``tokenizer`` (its ``.keras`` file then
    carries it); returns ``model``."""
    encoder = backbone_of(model)
    if encoder is not None:
        encoder.tokenizer = tokenizer
    return model
