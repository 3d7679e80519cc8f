"""The base of the Python task classes: a task model that reads raw text.

A ``TextTask`` holds one of the package's task models (``AlbertClassifier``
and the others) and the host-side tokenizer its encoder carries, and turns
Python texts into the model's inputs the way ``albert-keras finetune`` turns
a file's rows: the same task unit (``albert_keras.tasks.registry``), the
same length-bucketed batches, the same AdamW schedule by default. Its
``save_to_preset`` folder is the command line's model folder, and the
command line's folders load back with ``from_preset``.
"""

import dataclasses
import os

import keras

from albert_keras.files import writing_folder
from albert_keras.model_folder import ModelSource
from albert_keras.model_folder import write_task_folder
from albert_keras.optimizers.optimizer import build_optimizer
from albert_keras.tasks.finetune import make_dataset
from albert_keras.tasks.finetune import task_spec
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import TaskSpec
from albert_keras.tasks.task_run import predict_outputs
from albert_keras.tasks.task_run import task_optimizer
from albert_keras.tasks.task_run import with_size_defaults
from albert_keras.training.unused_weights import unused_pooler_quiet


def finetune_settings(task_name, options, where):
    """A checked ``FinetuneConfig`` of ``task_name`` from keyword ``options``."""
    options = {k: v for k, v in options.items() if k != "task"}
    fields = {f.name for f in dataclasses.fields(FinetuneConfig)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(f"{where}: unknown setting {unknown[0]!r}; the settings are "
                         f"FinetuneConfig's fields")
    cfg = FinetuneConfig(task=task_name, **options)
    cfg.validate()
    return cfg


@dataclasses.dataclass
class _CompileRequest:
    """What ``compile`` was asked for (a dataclass: Keras leaves it untracked)."""

    optimizer: object = "auto"
    loss: object = "auto"
    metrics: object = "auto"
    kwargs: dict = dataclasses.field(default_factory=dict)


def _fit_length(settings, encoder, source):
    """``settings`` with a sequence length the encoder reads: the default
    (128) shortened to a shorter model's ``max_position_embeddings``; a
    length asked for that is longer is an error."""
    longest = encoder.config.max_position_embeddings
    if settings.sequence_length <= longest:
        return settings
    default = FinetuneConfig().sequence_length
    if settings.sequence_length != default:
        raise ValueError(f"sequence_length {settings.sequence_length} exceeds {source}'s "
                         f"max_position_embeddings {longest}")
    return dataclasses.replace(settings, sequence_length=longest)


class TextTask(keras.Model):
    """A task model with its tokenizer: ``fit``, ``evaluate`` and ``predict``
    on raw texts.

    Subclasses name their task unit (``task_name``) and build the task
    model (``_build_task_model``); ``TextClassifier`` is one.

    Args:
        task_model: the package's task model (its encoder carries the
            tokenizer), or None until ``fit`` has seen the labels.
        encoder: the encoder to build the task model on, when it is None.
        settings: the ``FinetuneConfig`` as a dict (sequence length,
            truncation, the head's choices, the training defaults).
    """

    task_name = None

    def __init__(self, task_model=None, encoder=None, settings=None, **kwargs):
        super().__init__(**kwargs)
        if isinstance(task_model, dict):
            task_model = keras.saving.deserialize_keras_object(task_model)
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        self.settings = finetune_settings(self.task_name, dict(settings or {}), type(self).__name__)
        self.task_model = task_model
        self.pending_encoder = None if task_model is not None else encoder
        self._defaults_compile = True
        self.built = task_model is not None

    # -- what it is -----------------------------------------------------------------

    @property
    def encoder(self):
        """The encoder (the backbone) the task model runs on."""
        return self.task_model.encoder if self.task_model is not None else self.pending_encoder

    @property
    def tokenizer(self):
        """The host-side tokenizer the encoder carries."""
        return self.encoder.tokenizer

    @property
    def task(self):
        return get_task(self.task_name)

    @property
    def spec(self):
        """The ``TaskSpec``: the task model's, else a new one from the settings."""
        carried = self.task_model.task_spec if self.task_model is not None else None
        return TaskSpec.from_json(carried) if carried else task_spec(self.settings)

    def call(self, inputs, training=False):
        return self.task_model(inputs, training=training)

    # -- raw text in ----------------------------------------------------------------

    def _data(self, x, y, name="x", spec=None):
        """``(TaskData, spec)`` of Python inputs (and labels)."""
        if self.tokenizer is None:
            raise ValueError(f"{type(self).__name__}: the encoder carries no tokenizer; "
                             "from_preset(..., tokenizer=FILE) gives it one")
        return self._task_data(x, y, name, spec or self.spec)

    def _task_data(self, x, y, name, spec):
        """The task's reading of Python inputs (each subclass has its own)."""
        raise NotImplementedError

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Keras' ``compile``; ``"auto"`` takes the task's loss and metrics and,
        for the optimizer, the command line's AdamW with warmup and linear
        decay (built at ``fit``, when the number of steps is known)."""
        self._defaults_compile = optimizer == "auto"
        self._compile_request = _CompileRequest(optimizer, loss, metrics, kwargs)
        if self.task_model is not None:
            self._apply_compile(total_steps=1)

    def _apply_compile(self, total_steps):
        request = getattr(self, "_compile_request", None) or _CompileRequest()
        args = self.task.compile_args(self.spec)  # loss, metrics (and weights)
        if request.loss != "auto":
            args["loss"] = request.loss
        if request.metrics != "auto":
            args["metrics"] = request.metrics
        optimizer = request.optimizer
        if optimizer == "auto":
            optimizer = task_optimizer(self.settings, self.encoder, total_steps)
        super().compile(optimizer=optimizer, **args, **request.kwargs)

    def fit(self, x=None, y=None, batch_size=None, epochs=None, validation_data=None,  # noqa: PLR0913 (Keras' fit arguments)
            callbacks=None, verbose="auto", **kwargs):
        """Trains on Python texts and labels (names or numbers).

        ``batch_size``, ``epochs`` and the learning rate default to the
        settings (by the encoder's width when not given, as on the command
        line). ``validation_data`` is ``(texts, labels)``.
        """
        data, spec = self._data(x, y)
        if self.task_model is None:
            self._build(spec)
        else:  # what the training rows settle (the number of choices, a pair column)
            self.task_model.task_spec = spec.to_json()
        changes = {k: v for k, v in (("batch_size", batch_size), ("epochs", epochs)) if v}
        self.settings = with_size_defaults(dataclasses.replace(self.settings, **changes),
                                           self.encoder.config.hidden_size)
        cfg = self.settings
        steps = max(1, len(data) // cfg.batch_size) * cfg.epochs
        if self._defaults_compile or self.optimizer is None:
            self._apply_compile(steps)
        dataset = make_dataset(data, cfg.batch_size, True, cfg.seed,
                               self.task if cfg.length_buckets else None)
        validation = None
        if validation_data is not None:
            held_out, _ = self._data(*validation_data, name="validation_data")
            validation = make_dataset(held_out, 64, False, cfg.seed)
        build_optimizer(self)  # the training step is then traced once, not twice
        with unused_pooler_quiet():  # a tagger reads no pooler: Keras' warning is noise
            return super().fit(dataset, epochs=cfg.epochs, validation_data=validation,
                               callbacks=callbacks, verbose=verbose, shuffle=False, **kwargs)

    def _build(self, spec):
        """The task model, once the training labels have completed ``spec``."""
        self.task_model = self._build_task_model(spec, self.pending_encoder)
        self.task_model.task_spec = spec.to_json()
        self.pending_encoder = None
        self.built = True

    def evaluate(self, x=None, y=None, batch_size=64, return_dict=True, **kwargs):
        """The task's metrics on labelled Python texts (as ``albert-keras
        evaluate`` scores a file)."""
        self._need_model("evaluate")
        data, spec = self._data(x, y)
        outputs = predict_outputs(self.task_model, data, batch_size,
                                  self.settings.length_buckets)
        return self.task.score(spec, data, outputs)

    def _outputs(self, x, batch_size):
        self._need_model("predict")
        data, spec = self._data(x, None)
        return predict_outputs(self.task_model, data, batch_size,
                               self.settings.length_buckets), data, spec

    def _need_model(self, what):
        if self.task_model is None:
            raise ValueError(f"{type(self).__name__}.{what}: the head is not built yet; give "
                             "num_classes (or labels) to from_preset, or fit first")

    # -- saving ---------------------------------------------------------------------

    def save_to_preset(self, folder):
        """Writes the command line's model folder (``model.keras``, the
        tokenizer, ``task.json``): ``albert-keras evaluate``, ``predict`` and
        ``export`` read it, and ``from_preset(folder)`` loads it back.
        Nothing is left half-written."""
        self._need_model("save_to_preset")
        if self.tokenizer is None:
            raise ValueError(f"{folder}: the model carries no tokenizer to save")
        settings = {**dataclasses.asdict(self.settings), "init": None}
        with writing_folder(folder) as tmp:
            write_task_folder(tmp, self.task_model, self.tokenizer, self.spec.to_json(), {},
                              settings)
        return folder

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable,
                  "settings": dataclasses.asdict(self.settings)}
        if self.task_model is None:
            config["encoder"] = keras.saving.serialize_keras_object(self.pending_encoder)
        else:
            config["task_model"] = keras.saving.serialize_keras_object(self.task_model)
        return config

    @classmethod
    def _source_model(cls, source, tokenizer, settings):
        """``(task model or None, encoder, settings)`` from ``source``: a
        fine-tuned folder of this task keeps its head, anything else gives
        its encoder."""
        if isinstance(source, TextTask):
            raise ValueError("source: already a task object; use it directly")
        origin = ModelSource(os.fspath(source), tokenizer)
        spec = origin.task_spec if os.path.isdir(origin.path) else {}
        if spec:
            if spec.get("task") != cls.task_name:
                raise ValueError(f"{origin.path}: a fine-tuned {spec.get('task')} folder, "
                                 f"not {cls.task_name}")
            model, _ = origin.task_model()
            return model, None, settings
        encoder = origin.encoder(dtype=settings.precision, from_scratch=settings.from_scratch,
                                 dropout=settings.encoder_dropout)
        if encoder.tokenizer is None or tokenizer:
            encoder.tokenizer = origin.tokenizer
        return None, encoder, _fit_length(settings, encoder, origin.path)
