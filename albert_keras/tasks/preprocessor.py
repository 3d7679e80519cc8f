"""The task preprocessors: raw texts to a task model's input arrays.

A preprocessor is the reading step of a task class on its own: the same
task unit turns Python texts (and labels) into the packed ids the task
model takes, exactly as ``fit``, ``evaluate`` and ``predict`` do, for users
who write their own training loop or ``tf.data`` pipeline. It holds no
weights: ``from_preset`` reads a source's tokenizer and, for a fine-tuned
folder, its ``task.json`` (sequence length, labels, pair column).
"""

import os

from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.finetune_config import fit_length
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import TaskSpec
from albert_keras.tasks.task_run import task_spec


class TaskPreprocessor:
    """Texts (and labels) in, ``(x, y, sample_weight)`` arrays out.

    ``x`` is the dict of ``[n, sequence_length]`` int32 arrays the task
    model reads (``token_ids``, ``segment_ids``, ``padding_mask``; a
    multiple-choice model's are ``[n, choices, sequence_length]``); ``y``
    and ``sample_weight`` are the task model's targets, or None without
    labels. A new classifier's or tagger's preprocessor names its classes
    from the first labels it is given, as ``fit`` does, and keeps them.

    Args:
        tokenizer: the host-side tokenizer (a source's ``tokenizer``).
        spec: the ``TaskSpec`` (its ``task`` must be this class's).

    Example:
    >>> pre = TextClassifierPreprocessor.from_preset("runs/reviews")  # doctest: +SKIP
    >>> x, y, _ = pre(["a fine film", "a dull film"], ["pos", "neg"])  # doctest: +SKIP
    >>> x["token_ids"].shape, y["logits"].tolist()  # doctest: +SKIP
    ((2, 128), [1, 0])
    """

    task_name = None

    def __init__(self, tokenizer, spec):
        if isinstance(spec, dict):
            spec = TaskSpec.from_json(spec)
        if spec.task != self.task_name:
            raise ValueError(f"spec: a {spec.task} spec, not {self.task_name}")
        self.tokenizer, self.spec = tokenizer, spec

    @classmethod
    def for_task(cls, name):
        """The preprocessor class of the task unit ``name``."""
        get_task(name)  # an unknown name is the registry's error
        known = next((c for c in _PREPROCESSORS if c.task_name == name), None)
        # a task the user registered reads Python inputs through its own unit too
        return known or type(f"{name.title()}Preprocessor", (cls,), {"task_name": name})

    @classmethod
    def from_preset(cls, source, tokenizer=None, **settings):
        """The preprocessor of ``source`` (anything the task class's
        ``from_preset`` takes): a fine-tuned folder of this task gives its
        own spec; any other source a new one from ``settings``
        (``FinetuneConfig`` fields: ``sequence_length``, ``truncate``, the
        columns), its length cut to the model's ``max_position_embeddings``
        as the task class cuts it."""
        origin = ModelSource(os.fspath(source), tokenizer)
        carried = origin.fine_tuned_spec(cls.task_name)
        if carried:
            if settings:
                raise ValueError(f"{origin.path}: a fine-tuned folder keeps its own "
                                 f"settings; {sorted(settings)[0]} does not apply")
            return cls(origin.tokenizer, TaskSpec.from_json(carried))
        cfg = finetune_settings(cls.task_name, settings, f"{cls.__name__}.from_preset")
        # the config alone says how long an input may be: no model is loaded
        cfg = fit_length(cfg, origin.max_position_embeddings, origin.path)
        return cls(origin.tokenizer, task_spec(cfg))

    @property
    def sequence_length(self):
        return self.spec.sequence_length

    @property
    def labels(self):
        """The class names by id (``()`` for tasks without any; None while
        a new preprocessor has seen no labels)."""
        return self.spec.labels

    def __call__(self, x, y=None):
        """``(x, y, sample_weight)`` of Python inputs, in the task class's
        formats (texts, pairs, sentences, questions, choices)."""
        data, spec = get_task(self.task_name).from_python(x, y, self.spec, self.tokenizer)
        if y is not None:
            self.spec = spec  # the labels the first call discovered stay
        return data.x, data.y, data.sample_weight


class TextClassifierPreprocessor(TaskPreprocessor):
    """``TextClassifier``'s reading: texts or pairs, labels or scores."""

    task_name = "classify"


class TokenClassifierPreprocessor(TaskPreprocessor):
    """``TokenClassifier``'s reading: sentences (word lists) and tags."""

    task_name = "tag"


class QuestionAnswererPreprocessor(TaskPreprocessor):
    """``QuestionAnswerer``'s reading: ``(questions, contexts)`` and answers,
    a long context as several windows (rows)."""

    task_name = "qa"


class MultipleChoicePreprocessor(TaskPreprocessor):
    """``MultipleChoice``'s reading: ``(contexts, questions, choices)``."""

    task_name = "choice"


_PREPROCESSORS = (TextClassifierPreprocessor, TokenClassifierPreprocessor,
                  QuestionAnswererPreprocessor, MultipleChoicePreprocessor)
