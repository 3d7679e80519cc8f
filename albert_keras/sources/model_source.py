"""A model to start from, resolved once: ``ModelSource``."""

import dataclasses
import functools
import os

from albert_keras.models.backbone import backbone_of
from albert_keras.models.encoder_settings import EncoderSettings
from albert_keras.sources.config_files import configured_positions
from albert_keras.sources.layout import ENCODER_FILE
from albert_keras.sources.layout import PRETRAINER_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.sources.layout import folder_of
from albert_keras.sources.layout import model_file
from albert_keras.sources.layout import read_train_config
from albert_keras.sources.model_rebuild import rebuilt_encoder
from albert_keras.sources.registry import read_tokenizer
from albert_keras.sources.registry import reader_of
from albert_keras.sources.tokenizers import folder_tokenizer_path


@dataclasses.dataclass
class ModelSource:
    """A model to start from (``--init``, ``--teacher``, ``--student-init``),
    resolved once.

    It carries what every step needs from it: the tokenizer, the stored
    model (read on first use, then kept), and what the folder records about
    its training (``train_config.json``: objective, pooling) and its task
    (``task.json``). The kind of source (our folder, a ``.keras`` file, an
    HF, TF1 or keras-hub folder, a preset name) is settled once, by the
    first reader in ``albert_keras.sources.registry`` that claims it.

    Args:
        path: the folder, ``.keras`` file or preset name.
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

    @functools.cached_property
    def reader(self):
        """The reader module of this kind of source (see the registry)."""
        return reader_of(self.path)

    @property
    def is_checkpoint(self):
        """True for an HF, TF1 or keras-hub folder (converted when read)."""
        return self.reader.PUBLISHED

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
            self._model = self.reader.model(self.path)
        return self._model

    @functools.cached_property
    def train_config(self):
        """The folder's ``train_config.json`` as a dict ({} when absent; read once)."""
        return read_train_config(folder_of(self.path))

    @functools.cached_property
    def task_spec(self):
        """The folder's ``task.json`` as a dict, or an HF ``...For<Task>``
        folder's, read from its ``config.json`` ({} when absent; read once)."""
        return self.reader.task_spec(self.path)

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
            if self.is_checkpoint:
                return {}  # a published checkpoint of another task: its encoder starts this one
            raise ValueError(f"{self.path}: a fine-tuned {spec.get('task')} folder, "
                             f"not {task_name}")
        return spec

    def task_model(self):
        """``(model, task_spec_dict)`` of a fine-tuned folder (ours, or an HF
        ``...For<Task>`` folder, converted afresh: the caller may train it)."""
        model, spec = self.reader.task_model(self.path)
        self._model = model
        return model, spec

    def pretrainer(self):
        """``(model, path)``: the model with the masked-LM head (a folder's
        ``pretrainer.keras``, or a published checkpoint with its MLM head)."""
        model, path = self.reader.pretrainer(self.path)
        self._model = model
        return model, path

    def encoder(self, dtype=None, from_scratch=False, output_hidden_states=False,
                dropout=None):
        """The source's encoder with the run's settings (see
        ``EncoderSettings``), built once: an HF folder not read yet is
        converted straight into it, anything else rebuilt from the stored
        model (with new weights when ``from_scratch``)."""
        settings = EncoderSettings(dtype=dtype, dropout=dropout,
                                   output_hidden_states=output_hidden_states)
        if from_scratch:
            return rebuilt_encoder(self.model, self.path, settings, from_scratch=True)
        return self.reader.encoder(self.path, settings, stored=self._model)


def tokenizer_path(init):
    """The tokenizer file of the folder ``init`` (or of the folder holding
    the file ``init``); a folder holding no model is named as such first."""
    reader_of(init)
    return folder_tokenizer_path(folder_of(init))
