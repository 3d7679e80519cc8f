"""The base of the Python task classes: a task model that reads raw text.

A ``TextTask`` holds one of the package's task models (``SequenceClassifier``
and the others) and the host-side tokenizer its encoder carries, and turns
Python texts into the model's inputs the way ``albert-keras finetune`` turns
a file's rows: the same task unit (``albert_keras.tasks.registry``), the
same length-bucketed batches, the same AdamW schedule by default. Its
``save_to_preset`` folder is the command line's model folder, and the
command line's folders load back with ``from_preset``.
"""

import contextlib
import dataclasses
import functools
import importlib
import logging
import os

import keras

from albert_keras.files import writing_into
from albert_keras.precision import resolve_precision
from albert_keras.sources.folder_writing import write_task_folder
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.finetune_config import fit_length
from albert_keras.tasks.finetune_config import kept_settings
from albert_keras.tasks.litert_runtime import PredictionRuntime
from albert_keras.tasks.preprocessor import TaskPreprocessor
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import TaskSpec
from albert_keras.tasks.task_run import TaskSets
from albert_keras.tasks.task_run import bucketed
from albert_keras.tasks.task_run import fit_with_selection
from albert_keras.tasks.task_run import make_dataset
from albert_keras.tasks.task_run import predict_outputs
from albert_keras.tasks.task_run import task_optimizer
from albert_keras.tasks.task_run import task_spec
from albert_keras.tasks.task_run import truncation_report
from albert_keras.tasks.task_run import with_size_defaults
from albert_keras.tasks.tokenizer_fit import check_tokenizer_fit
from albert_keras.training import adversarial as adversarial_training
from albert_keras.training.unused_weights import unused_pooler_quiet

logger = logging.getLogger(__name__)

# the rows ``fit`` saw, kept by ``save_to_preset`` (up to 500)
SEEN_ROWS_FILE = "train_rows.csv"


@dataclasses.dataclass
class _CompileRequest:
    """What ``compile`` was asked for (a dataclass: Keras leaves it untracked)."""

    optimizer: object = "auto"
    loss: object = "auto"
    metrics: object = "auto"
    kwargs: dict = dataclasses.field(default_factory=dict)


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
        self._runtime = PredictionRuntime()
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

    def use_runtime(self, runtime, threads=None):
        """Where ``predict`` and ``evaluate`` compute: ``auto`` (up to 4 texts in
        the LiteRT file ``finetune`` keeps, else TensorFlow), ``keras`` or ``litert``
        (converted now), with ``threads`` (LiteRT's). Returns the object.

        Example:
        >>> TextClassifier.load("runs/reviews").use_runtime("litert").predict(["Fine."])  # doctest: +SKIP
        """
        self._runtime = PredictionRuntime(runtime, threads)
        self._runtime.runner(self.task_model)  # converted now, not at the first request
        return self

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """Keras' loss, plus the adversarial term (the settings'
        ``adversarial``: SiFT or R3F) in a training step."""
        loss = super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                    training=training)
        setting = self.settings.adversarial_setting()
        if not training or setting is None:
            return loss
        return loss + setting.weight * adversarial_training.text_task_term(self, setting, x, y_pred)

    # -- raw text in ----------------------------------------------------------------

    def _data(self, x, y, name="x", spec=None):
        """``(TaskData, spec)`` of Python inputs (and labels)."""
        if self.tokenizer is None:
            raise ValueError(f"{type(self).__name__}: the encoder carries no tokenizer; "
                             "from_preset(..., tokenizer=FILE) gives it one")
        return self._task_data(x, y, name, spec or self.spec)

    def _task_data(self, x, y, name, spec):
        """The task unit's reading of Python inputs (``Task.from_python``)."""
        return self.task.from_python(x, y, spec, self.tokenizer, name)

    @property
    def preprocessor(self):
        """The ``TaskPreprocessor`` that reads this object's inputs: its
        tokenizer and spec (sequence length, labels, pair column)."""
        return TaskPreprocessor.for_task(self.task_name)(self.tokenizer, self.spec)

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
            # the width's learning rate, also for a compile() before fit
            settings = with_size_defaults(self.settings, self.encoder.config.hidden_size)
            optimizer = task_optimizer(settings, self.encoder, total_steps)
        super().compile(optimizer=optimizer, **args, **request.kwargs)

    def fit(self, x=None, y=None, batch_size=None, epochs=None, validation_data=None,  # noqa: PLR0913 (Keras' fit arguments)
            callbacks=None, verbose="auto", **kwargs):
        """Trains on Python texts and labels (names or numbers).

        ``batch_size``, ``epochs`` and the learning rate default to the
        settings (by the encoder's width when not given, as on the command
        line). ``validation_data`` is ``(texts, labels)``: it is scored with
        the task's own metric after every epoch (``val_<metric>`` in the
        history) and the best epoch's weights are kept, as
        ``albert-keras finetune --validation`` does. Training runs the one
        path the command line runs (``fit_rows``).
        """
        where = f"{type(self).__name__}.fit"
        changes = {k: v for k, v in (("batch_size", batch_size), ("epochs", epochs))
                   if v is not None}
        run_settings = finetune_settings(self.task_name,
                                         {**dataclasses.asdict(self.settings), **changes}, where)
        data, spec = self._data(x, y)
        held_out = None if validation_data is None else self._data(
            *validation_data, name="validation_data", spec=spec)[0]
        keras_fit = functools.partial(super().fit, **kwargs)
        kept, self.settings = self.settings, run_settings
        try:  # this call's epochs and batch size are not the object's settings
            history, _, _ = self.fit_rows(TaskSets(data, validation=held_out), spec,
                                          callbacks or (), fit=keras_fit, verbose=verbose)
        finally:
            self.settings = kept
        return history

    def fit_rows(self, sets, spec, callbacks=(), folder=None, where="x", fit=None,  # noqa: PLR0913 (the rows, and how the run is shown and kept)
                 verbose=2):
        """Trains on rows already read: the one training path of ``fit`` and
        of ``albert-keras finetune``.

        The head is built for ``spec`` when it is not yet; the learning rate
        and batch size take the width's defaults; ``compile``'s choices (by
        default AdamW with warmup and linear decay over the run's steps)
        apply; batches are bucketed by length; the best epoch on
        ``sets.evaluation`` or ``sets.validation`` is kept.

        Args:
            sets: a ``TaskSets`` (``train``, and the optional scored rows).
            spec: the ``TaskSpec`` the training rows completed.
            callbacks: the caller's Keras callbacks.
            folder: where ``metrics.csv`` goes (None: nowhere).
            where: what the training rows are called in errors (a file).
            fit: Keras' fit to call (``fit``'s, with its extra arguments).
            verbose: Keras' ``verbose``.

        Returns:
            ``(history, best, report)``: Keras' history, the epoch selector
            (or None) and the truncation report.
        """
        self._runtime.forget()  # a converted copy would keep the old weights
        with self._strategy_scope():  # the head and optimizer on the model's devices
            self._settle(spec)
            self.settings = with_size_defaults(self.settings, self.encoder.config.hidden_size)
            report = self._check_rows(sets.train, where)
            adversarial = self.settings.adversarial_setting()
            adversarial_training.check_backend(adversarial)
            if adversarial is not None:
                adversarial_training.untracked_seed(self, self.settings.seed)
            cfg = self.settings
            steps = max(1, len(sets.train) // cfg.batch_size) * cfg.epochs
            if self._defaults_compile or self.optimizer is None:
                self._apply_compile(steps)
            dataset = make_dataset(sets.train, cfg.batch_size, True, cfg.seed,
                                   self.task if bucketed(cfg) else None)
            with unused_pooler_quiet():  # a tagger reads no pooler: Keras' warning is noise
                history, best = fit_with_selection(
                    self, dataset, (self.task, spec, sets, cfg, steps), folder, callbacks,
                    fit=fit or super().fit, verbose=verbose)
        return history, best, report

    def _settle(self, spec):
        """The head built for ``spec``, or the built one told what the
        training rows settled (the number of choices, a pair column)."""
        if self.task_model is None:
            self._build(spec)
        else:
            self.task_model.task_spec = spec.to_json()

    def _check_rows(self, train, where):
        """The training rows fit the model (vocabulary, length); returns the
        truncation report."""
        config = self.encoder.config
        check_tokenizer_fit(self.tokenizer, config.vocab_size, train.x["token_ids"],
                            train.x["padding_mask"], where)
        if self.settings.sequence_length > config.max_position_embeddings:
            raise ValueError(f"sequence_length {self.settings.sequence_length} exceeds the "
                             f"model's max_position_embeddings {config.max_position_embeddings}")
        return truncation_report(train, self.settings.sequence_length,
                                 config.max_position_embeddings)

    def _strategy_scope(self):
        """The ``tf.distribute`` strategy the object was made under (a head
        built later, and the optimizer, go on its devices); elsewhere none."""
        strategy = getattr(self, "distribute_strategy", None)  # TensorFlow's Keras only
        return strategy.scope() if strategy is not None else contextlib.nullcontext()

    def _build(self, spec):
        """The task model, once the training labels have completed ``spec``."""
        self.task_model = self._build_task_model(spec, self.pending_encoder)
        self.task_model.task_spec = spec.to_json()
        self.pending_encoder = None
        self.built = True

    def evaluate(self, x=None, y=None, batch_size=64, verbose="auto", return_dict=True):
        """The task's metrics on labelled Python texts (as ``albert-keras
        evaluate`` scores a file): a dict, or its values in order when
        ``return_dict`` is False. ``verbose`` is accepted for Keras' sake;
        nothing is printed."""
        del verbose
        self._need_model("evaluate")
        data, spec = self._data(x, y)
        scores = self.task.score(spec, data, self._predicted(data, batch_size))
        return scores if return_dict else list(scores.values())

    def evaluate_file(self, path, batch_size=64, length_buckets=None):
        """The task's metrics on a labelled task file (CSV/TSV/JSONL, CoNLL,
        SQuAD JSON, as ``--train`` takes): what ``albert-keras evaluate``
        prints. ``length_buckets`` (default: the settings') batches the
        rows by length."""
        self._need_model("evaluate")
        data = self._file_data(path, require_labels=True)
        logger.info(self._runtime.where(self.task_model, batch_size, len(data)))
        return self.task.score(self.spec, data, self._predicted(data, batch_size,
                                                                length_buckets))

    def predict_file(self, path, batch_size=64, length_buckets=None):
        """One JSON-ready prediction per example of a task file (labels not
        needed), each with ``row``, its place in the file from 0, in the
        file's order: what ``albert-keras predict`` writes."""
        self._need_model("predict")
        data = self._file_data(path, require_labels=False)
        logger.info(self._runtime.where(self.task_model, batch_size, len(data)))
        records = self.task.records(self.spec, data, self._predicted(data, batch_size,
                                                                     length_buckets))
        return [{"row": i, **record} for i, record in enumerate(records)]

    def _file_data(self, path, require_labels):
        if self.tokenizer is None:
            raise ValueError(f"{type(self).__name__}: the encoder carries no tokenizer")
        data, _ = self.task.read(path, self.spec, self.tokenizer, require_labels=require_labels)
        truncation_report(data, self.settings.sequence_length,  # says how many are cut
                          what=("predicted", "evaluated")[require_labels])
        return data

    def _predicted(self, data, batch_size, length_buckets=None):
        """The task model's outputs on ``data`` (batched by length unless
        ``length_buckets`` or the settings say not)."""
        buckets = self.settings.length_buckets if length_buckets is None else length_buckets
        return predict_outputs(self.task_model, data, batch_size, buckets,
                               self.settings.precision,
                               self._runtime.runner(self.task_model, len(data)))

    def _outputs(self, x, batch_size):
        self._need_model("predict")
        data, spec = self._data(x, None)
        return self._predicted(data, batch_size), data, spec

    def _need_model(self, what):
        if self.task_model is None:
            raise ValueError(f"{type(self).__name__}.{what}: the head is not built yet; give "
                             "num_classes (or labels) to from_preset, or fit first")

    def save_to_preset(self, folder, overwrite=False):
        """Writes the command line's model folder (``model.keras``, the
        tokenizer, ``task.json``, and a classifier's ``train_rows.csv``, up
        to 500 of the rows ``fit`` saw, which an export of the folder
        validates on): ``albert-keras evaluate``, ``predict`` and ``export``
        read it, and ``from_preset(folder)`` loads it back. Nothing is left
        half-written, and no file the package did not write is removed.

        Args:
            folder: a new or empty folder, or a model folder of ours (its
                files are replaced; the user's files beside them stay).
            overwrite: write into a folder that holds other files.
        """
        self._need_model("save_to_preset")
        if self.tokenizer is None:
            raise ValueError(f"{folder}: the model carries no tokenizer to save")
        settings = {**dataclasses.asdict(self.settings), "init": None}
        with writing_into(os.fspath(folder), (TASK_FILE,), overwrite) as tmp:
            # a sample of the rows fit saw, which an export of the folder
            # validates and calibrates on, as on a command-line folder's files
            writer = getattr(self, "write_seen_rows", None)
            if writer is not None and writer(os.path.join(tmp, SEEN_ROWS_FILE)):
                settings["train"] = SEEN_ROWS_FILE
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
    def load(cls, folder, tokenizer=None, precision="auto", runtime="auto"):
        """The task object of a fine-tuned folder, of its task's class; ``precision``
        and ``runtime``: ``predict``'s (``use_runtime``)."""
        runtime = PredictionRuntime(runtime).name  # a wrong value is refused before the reading
        spec = ModelSource(os.fspath(folder), tokenizer).task_spec
        if not spec:
            raise FileNotFoundError(f"{folder}: not a fine-tuned model folder (no {TASK_FILE})")
        made = cls.for_task(spec.get("task")).from_preset(folder, tokenizer=tokenizer,
                                                          precision=precision)
        if not isinstance(made, cls):
            raise ValueError(f"{folder}: a fine-tuned {spec.get('task')} folder, "
                             f"not {cls.__name__}")
        return made.use_runtime(runtime)

    @classmethod
    def for_task(cls, name):
        """The Python class of the task unit ``name`` (``TextClassifier``
        for ``classify``)."""
        module, attr = get_task(name).task_object_path()
        return getattr(importlib.import_module(module), attr)

    @classmethod
    def on_source(cls, origin, settings, keep_head=True):
        """The one constructor of a task object from a model source, which
        ``from_preset`` and ``albert-keras finetune`` share.

        A fine-tuned folder of this task keeps its head when ``keep_head``
        (``from_preset``); anything else gives its encoder (rebuilt with the
        settings' precision and dropout), the tokenizer given (or else the
        one it carries, or else the folder's), a sequence length it can read
        (the default cut to a shorter model's; one asked for that is longer
        is an error) and the head's choices for this source (``auto``
        pooling resolved); ``fit_rows`` builds the new head.

        Args:
            origin: a ``ModelSource`` (the path and the tokenizer file given).
            settings: a checked ``FinetuneConfig``.
            keep_head: keep a fine-tuned folder's own head (the command line
                fine-tunes a new head on its encoder).

        Returns:
            ``(object, model)``: the task object, and the fine-tuned task
            model it holds (None when its head is new). A kept head keeps
            its folder's settings (sequence length, truncation, pooling,
            dropout, ...) over ``settings``.
        """
        spec = origin.fine_tuned_spec(cls.task_name) if keep_head else {}
        if spec:
            model, _ = origin.task_model()
            origin.give_tokenizer(model.encoder)
            return cls(task_model=model, settings=kept_settings(settings, model)), model
        encoder = origin.give_tokenizer(origin.encoder(
            dtype=resolve_precision(settings.precision), from_scratch=settings.from_scratch,
            dropout=settings.encoder_dropout))
        settings = fit_length(settings, encoder.config.max_position_embeddings, origin.path)
        options = get_task(cls.task_name).head_options(settings, origin)
        if options:
            settings = dataclasses.replace(settings, **options)
            logger.info("head: " + ", ".join(f"{k} {v}" for k, v in options.items()))
        return cls(encoder=encoder, settings=dataclasses.asdict(settings)), None

    @classmethod
    def _from_source(cls, source, tokenizer, settings):
        """``on_source`` for ``from_preset``'s ``source`` (a path)."""
        if isinstance(source, TextTask):
            raise ValueError("source: already a task object; use it directly")
        return cls.on_source(ModelSource(os.fspath(source), tokenizer), settings)
