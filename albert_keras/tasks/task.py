"""What every fine-tuning task provides, and the immutable task description.

A task (``classify``, ``tag``, ``qa``, ``choice``) is one ``Task`` subclass
in its own module plus one line in ``albert_keras.tasks.registry``.
Fine-tuning, evaluation, prediction, quantization-aware training and the
export's validation only talk to this interface.
"""

import dataclasses

import keras
import numpy as np

from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.tasks.task_fields import TaskFields


@dataclasses.dataclass(eq=True)
class TaskSpec(TaskFields):
    """What a fine-tuned model needs to read, score and decode (``task.json``).

    Readers return a new spec when the training file defines something (the
    labels, the number of choices); a spec is never changed in place.

    Args:
        (``TaskFields``'s fields): the task, its sequence length and cut,
            its columns, QA's decoding.
        labels: label names by id; None until the training file is read
            (``()`` for tasks without named labels).
        num_choices: multiple choice: answers per question (from the
            training file).
    """

    labels: tuple = None
    num_choices: int = None

    # Frozen by hand: a frozen dataclass cannot extend TaskFields, which
    # FinetuneConfig (a mutable config) extends too.
    def __post_init__(self):
        object.__setattr__(self, "_sealed", True)

    def __setattr__(self, name, value):
        if getattr(self, "_sealed", False):
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super().__setattr__(name, value)

    def __hash__(self):
        values = (getattr(self, f.name) for f in dataclasses.fields(self))
        return hash(tuple(tuple(v) if isinstance(v, list) else v for v in values))

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)

    def to_json(self):
        data = dataclasses.asdict(self)
        data["labels"] = None if self.labels is None else list(self.labels)
        if self.num_choices is None:
            del data["num_choices"]
        return data

    @classmethod
    def from_json(cls, data, source="task.json"):
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - fields)
        if unknown:
            raise ValueError(f"{source}: unknown task key {unknown[0]!r}")
        data = dict(data)
        if data.get("labels") is not None:
            data["labels"] = tuple(data["labels"])
        return cls(**data)


class TaskData:
    """Features (``x``), targets (``y``, ``sample_weight``) and what decoding
    and scoring need (``extra``), for one file."""

    def __init__(self, x, y=None, sample_weight=None, extra=None):
        self.x, self.y, self.sample_weight, self.extra = x, y, sample_weight, extra or {}

    def __len__(self):
        first = next(iter(self.x.values()))
        while isinstance(first, dict):  # inputs of several texts a row (an embedder's pairs)
            first = next(iter(first.values()))
        return len(first)

    def take(self, rows, extra):
        """The feature rows ``rows`` (a boolean mask or indices) with a new
        ``extra`` (which the task rebuilds: only it knows what is per row)."""
        def pick(arrays):
            return None if arrays is None else {k: v[rows] for k, v in arrays.items()}
        return TaskData(pick(self.x), pick(self.y), pick(self.sample_weight), extra)


@dataclasses.dataclass
class ValidationTexts:
    """What the export validates a task model on: texts (and pairs, labels),
    or ready features ``x`` for tasks whose input is not one text."""

    texts: list = None
    pairs: list = None
    labels: list = None
    x: dict = None


class Task:
    """One fine-tuning task."""

    name = None
    # The Python task class ("module:Class", a ``TextTask``): what
    # ``albert-keras finetune`` trains, and what Python users call.
    python_class = None
    # The targets (and weights) that run along the sequence, cut with the
    # inputs when batches are bucketed by length (a tagger's labels).
    per_token_targets = ()
    # The fine-tuning config fields this task's head reads (through
    # ``head_options``); a field of another task's head set away from its
    # default is an error, not silently dropped.
    head_fields = ()
    # Whether ``shrink`` takes a fine-tuned model of this task: its students
    # learn the teacher's class probabilities and are scored by accuracy.
    shrinks = False
    # A task whose model is no task object (``python_class`` None) runs the
    # whole ``finetune`` itself (``finetune(run)``, a ``FinetuneRun``) and
    # scores its folders (``evaluate_folder(folder, path, batch_size,
    # length_buckets)``); ``instead`` says what reads its folders.
    finetune = None
    evaluate_folder = None
    instead = None

    def task_object_path(self):
        """``(module, class)`` of the task object; a task without one says
        what reads its folders instead."""
        if self.python_class is None:
            raise ValueError(f"the {self.name} task has no task object; {self.instead}")
        return self.python_class.split(":")

    def new_spec(self, **fields):
        """The spec of a new run; labels are left to the training file."""
        return TaskSpec(task=self.name, labels=(), **fields)

    def read(self, path, spec, tokenizer, require_labels=True):
        """``(TaskData, spec)``: the file's features, and the spec with
        whatever the (training) file defined."""
        raise NotImplementedError

    def from_python(self, x, y, spec, tokenizer, name="x"):
        """``(TaskData, spec)`` of Python inputs ``x`` (and targets ``y``, or
        None), read as the task's file rows are: what the Python task
        classes and their preprocessors call. Errors name ``name`` (or
        ``y``) and the row."""
        raise NotImplementedError

    def head_options(self, cfg, init):
        """Fine-tuning choices this task's head takes from the config, resolved
        for the ``init`` model (a ``ModelSource``): ``{field: value}``, passed
        to ``build_model`` and recorded in the run's config (none by default)."""
        return {}

    def build_model(self, spec, encoder, dropout=0.1):
        raise NotImplementedError

    # Whether every input is a pair (a question and its context), with or
    # without a pair column.
    always_pairs = False

    def corpus_file(self, spec, folder, limit, seed):
        """The built-in corpus as an unlabelled file of this task's format in
        ``folder`` (at most ``limit`` rows, shuffled by ``seed``), for
        distillation's ``--unlabeled corpus``; its path."""
        raise ValueError(f"--unlabeled corpus makes single texts and sentences: it works for "
                         f"classify without text pairs and for tag, not for {self.name}; give "
                         "a file in the task's format")

    def compile_args(self, spec):
        """``model.compile`` arguments: loss, loss weights and metrics."""
        ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        return {"loss": {"logits": ce},
                "metrics": {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}}

    def outputs(self, model, data, batch_size=64, length_buckets=True):
        """The task model's outputs on ``data`` (a ``TaskData``) that
        ``score`` reads, in row order; ``length_buckets``: in batches cut to
        their rows' lengths (the same outputs, less padding computed)."""
        if length_buckets:
            return predict_in_buckets(model, data.x, batch_size)
        return model.predict(data.x, batch_size=batch_size, verbose=0)

    def score(self, spec, data, outputs):
        """The task's metrics on labelled ``data``."""
        raise NotImplementedError

    def main_metric(self, spec):
        """The ``score`` key that picks the best epoch (higher is better)."""
        return "accuracy"

    def metric_for(self, spec, data):
        """The ``score`` key that picks the best epoch on ``data`` (a task
        whose files score in more than one way reads it from them)."""
        return self.main_metric(spec)

    def records(self, spec, data, outputs):
        """One JSON-ready prediction per input row."""
        raise NotImplementedError

    def validation_texts(self, path, spec, tokenizer):
        """``ValidationTexts`` from a task file, for the export's checks."""
        raise NotImplementedError

    # -- holding out a share of the training file ---------------------------------------

    def example_of_rows(self, data):
        """``[rows]``: which of the file's examples each feature row comes
        from (one row per example unless a task splits long inputs)."""
        return np.arange(len(data))

    def example_labels(self, data):
        """One class per example to stratify a held-out share by, or None."""
        return None

    def subset(self, data, examples):
        """``data`` restricted to the sorted example indices ``examples``."""
        raise NotImplementedError

    def split(self, data, fraction, seed=0, source="the training file"):
        """``(train, validation)``: a random ``fraction`` of the examples held out.

        Whole examples go to one side (a long QA context's windows, a long
        sentence's chunks stay together), and a task with class labels is
        stratified: each class gives the same share, at least one example
        where it has two or more, so a rare class is not missing from the
        validation rows by chance.

        Args:
            data: the training file's ``TaskData``.
            fraction: the share to hold out, in (0, 1).
            seed: which examples (the same seed, the same split).
            source: what errors call the file.

        Returns:
            Two ``TaskData``: the examples left for training and those held out.

        Example:
        >>> train, validation = task.split(data, 0.1, seed=0)  # doctest: +SKIP
        """
        if not 0 < fraction < 1:
            raise ValueError(f"validation_split must be in (0, 1), got {fraction}")
        of_rows = self.example_of_rows(data)
        count = int(of_rows.max()) + 1 if len(of_rows) else 0
        labels = self.example_labels(data)
        groups = [np.arange(count)] if labels is None else [
            np.flatnonzero(labels == c) for c in np.unique(labels)]
        rng = np.random.default_rng(seed)
        held = []
        for group in groups:
            share = int(round(fraction * len(group)))
            if len(group) > 1:
                share = min(max(share, 1), len(group) - 1)
            held.extend(rng.permutation(group)[:share])
        held = np.sort(np.asarray(held, np.int64))
        kept = np.setdiff1d(np.arange(count), held)
        if not len(held) or not len(kept):
            raise ValueError(f"{source}: validation_split {fraction} of {count} examples leaves "
                             f"{len(kept)} to train on and {len(held)} to validate on; "
                             "both need at least one")
        return self.subset(data, kept), self.subset(data, held)


def take_items(values, examples):
    """The ``examples`` of a per-example list (None stays None)."""
    return None if values is None else [values[int(i)] for i in examples]


def take_fields(examples_dataclass, examples):
    """A reader's dataclass of per-example lists, restricted to ``examples``."""
    return dataclasses.replace(examples_dataclass, **{
        f.name: take_items(getattr(examples_dataclass, f.name), examples)
        for f in dataclasses.fields(examples_dataclass)})


def rows_of(of_rows, examples):
    """``(mask over rows, new index per old example)`` for kept ``examples``."""
    renumber = np.full(int(of_rows.max()) + 1 if len(of_rows) else 0, -1, np.int64)
    renumber[examples] = np.arange(len(examples))
    return renumber[of_rows] >= 0, renumber


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)

