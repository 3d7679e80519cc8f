"""``TextClassifier``: classification (or regression) of raw texts and pairs."""


import keras
import numpy as np

from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.task import softmax
from albert_keras.tasks.text_task import TextTask


@keras.saving.register_keras_serializable(package="albert_keras")
class TextClassifier(TextTask):
    """Classifies texts (or text pairs) into named labels, or scores them.

    ``from_preset`` starts from anything ``--init`` takes; ``fit`` trains on
    Python texts with label names or ids, the command line's recipe by
    default; ``predict`` gives probabilities in ``labels`` order (a
    regression: one score per text); ``save_to_preset`` writes the command
    line's model folder.

    Example:
    >>> model = TextClassifier.from_preset("runs/pretrain", num_classes=2)  # doctest: +SKIP
    >>> model.fit(["a fine film", "a dull film"], ["pos", "neg"], epochs=3)  # doctest: +SKIP
    >>> model.labels, model.predict(["a fine film"]).shape  # doctest: +SKIP
    (('neg', 'pos'), (1, 2))
    >>> model.save_to_preset("runs/reviews")  # doctest: +SKIP
    """

    task_name = "classify"

    @classmethod
    def from_preset(cls, source, num_classes=None, labels=None, tokenizer=None, **settings):
        """A classifier on ``source``'s encoder (or ``source``'s own head).

        Args:
            source: a model folder (a fine-tuned classify folder keeps its
                head and labels), an HF, TF1 or keras-hub folder, or a
                ``.keras`` file (with ``tokenizer``).
            num_classes: the number of classes (1 with ``regression=True``);
                None: the labels ``fit`` sees, or ``labels``.
            labels: the class names by id, when known before ``fit``.
            tokenizer: a tokenizer file (default: the source's own).
            **settings: ``FinetuneConfig`` fields: ``sequence_length``,
                ``truncate``, ``pooling``, ``dropout``, ``regression``, the
                training defaults (``learning_rate``, ``epochs``,
                ``batch_size``, ``layer_decay``, ``seed``, ...).
        """
        cfg = finetune_settings(cls.task_name, settings, "TextClassifier.from_preset")
        made, kept = cls._from_source(source, tokenizer, cfg)
        if kept is not None:
            return made
        labels = _labels(num_classes, labels, cfg.regression)
        if labels is not None:
            made._build(made.spec.replace(labels=labels))
        return made

    def _task_data(self, x, y, name, spec):
        data, read = super()._task_data(x, y, name, spec)
        if read.text_pair_column != spec.text_pair_column and self.task_model is not None:
            # pairs given in Python: the folder's files name their second column so
            spec = spec.replace(text_pair_column=read.text_pair_column)
            self.task_model.task_spec = spec.to_json()
        if y is not None and name == "x":  # kept to validate an export of this object on
            self._seen = data.extra["examples"]
        return data, read

    def write_seen_rows(self, path, limit=500):
        """Writes up to ``limit`` of the rows the last ``fit`` or ``evaluate``
        saw as a CSV file in the task's columns (what an export of this
        object validates on when given no file); returns ``path``, or None
        when it has seen none."""
        import csv

        seen = getattr(self, "_seen", None)
        if seen is None:
            return None
        spec = self.spec
        columns = [spec.text_column] + ([spec.text_pair_column] if seen.pairs else []) + [
            spec.label_column]
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(columns)
            for i in range(min(limit, len(seen.texts))):
                writer.writerow([seen.texts[i]] + ([seen.pairs[i]] if seen.pairs else [])
                                + [seen.labels[i]])
        return path

    def _build_task_model(self, spec, encoder):
        return self.task.build_model(spec, encoder, self.settings.dropout,
                                     pooling=self.settings.pooling)

    @property
    def labels(self):
        """The class names by id (``()`` for a regression or before ``fit``)."""
        return tuple(self.spec.labels or ())

    @property
    def num_classes(self):
        return None if self.task_model is None else self.task_model.num_classes

    def fit(self, x=None, y=None, **kwargs):
        if y is not None and self.task_model is not None and not self.spec.regression:
            self._name_the_classes(y)
        return super().fit(x, y, **kwargs)

    def _name_the_classes(self, y):
        """A head built for ``num_classes`` has classes named by id; the first
        labels ``fit`` sees name them, when they are as many."""
        from albert_keras.tasks.readers import discover_labels

        values = list(y.tolist() if hasattr(y, "tolist") else y)
        if any(v is None for v in values):
            return  # python_examples names the row
        found = discover_labels(values)
        by_id = tuple(str(i) for i in range(self.num_classes))
        if self.labels == by_id and not set(found) <= set(by_id):
            if len(found) != self.num_classes:
                raise ValueError(f"num_classes {self.num_classes} contradicts y, which holds "
                                 f"{len(found)} labels ({', '.join(found[:5])}...)")
            spec = self.spec.replace(labels=tuple(found))
            self.task_model.task_spec = spec.to_json()
            return
        _check_labels(self.labels, values)

    def predict(self, x, batch_size=64, verbose="auto"):
        """``[n, classes]`` probabilities in ``labels`` order (a regression:
        ``[n]`` scores) for Python texts or pairs."""
        outputs, _, spec = self._outputs(x, batch_size)
        logits = np.asarray(outputs["logits"], np.float32)
        return logits[:, 0] if spec.regression else softmax(logits)


def _labels(num_classes, labels, regression):
    """The label names a new head is built with, or None (``fit`` finds them)."""
    if regression:
        if num_classes not in (None, 1) or labels:
            raise ValueError("num_classes: a regression has one output and no labels")
        return ()
    if labels is not None:
        labels = tuple(str(name) for name in labels)
        if len(set(labels)) != len(labels) or len(labels) < 2:
            raise ValueError(f"labels: {len(labels)} names, not 2 or more distinct ones")
        if num_classes is not None and num_classes != len(labels):
            raise ValueError(f"num_classes {num_classes} contradicts the {len(labels)} labels")
        return labels
    if num_classes is None:
        return None
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer of 2 or more, got {num_classes!r}")
    return tuple(str(i) for i in range(num_classes))


def _check_labels(known, y):
    """``y`` holds only the head's labels (names, or ids when they are numbers)."""
    from albert_keras.tasks.readers import canonical_label

    names = set(known)
    for row, label in enumerate(list(y.tolist() if hasattr(y, "tolist") else y)):
        if label is not None and canonical_label(label) not in names:
            raise ValueError(f"y[{row}]: unknown label {canonical_label(label)!r}; the model "
                             f"knows {', '.join(known)}")
