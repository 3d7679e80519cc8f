"""``similarity``: one score for a pair of sentences, STS-B's shape.

The task unit of a task defined outside albert_keras: its file reader (JSONL
rows of ``sentence1``, ``sentence2`` and ``score``), its Python reader, its
head (a one-output ``SequenceClassifier``, so its export kind and its HF
class come with the head), its loss, metrics and records. Registered with
one line, ``register_task("similarity", "tests.toy_task.similarity:Similarity")``.
"""

import json

import keras
import numpy as np

from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.tasks import metrics as task_metrics
from albert_keras.tasks.readers import TaskDataError
from albert_keras.tasks.task import Task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import ValidationTexts
from albert_keras.tasks.task import take_items
from albert_keras.text.packer import pack_texts


class Similarity(Task):
    """A score per sentence pair (mean squared error, Spearman's rho)."""

    name = "similarity"
    python_class = "tests.toy_task.similarity_scorer:SimilarityScorer"
    always_pairs = True

    def read(self, path, spec, tokenizer, require_labels=True):
        rows = []
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    rows.append(_row(json.loads(line), f"{path}:{number}", require_labels))
        if not rows:
            raise TaskDataError(f"{path}: no sentence pairs")
        return self._data(rows, spec, tokenizer), spec

    def from_python(self, x, y, spec, tokenizer, name="x"):
        firsts, seconds = x
        scores = [None] * len(firsts) if y is None else list(y)
        rows = [_row({"sentence1": a, "sentence2": b, "score": s}, f"{name}[{i}]", y is not None)
                for i, (a, b, s) in enumerate(zip(firsts, seconds, scores))]
        return self._data(rows, spec, tokenizer), spec

    def _data(self, rows, spec, tokenizer):
        x = pack_texts(tokenizer, [r["sentence1"] for r in rows], [r["sentence2"] for r in rows],
                       spec.sequence_length, spec.truncate)
        y = None
        if all(r["score"] is not None for r in rows):
            y = {"logits": np.asarray([[r["score"]] for r in rows], np.float32)}
        return TaskData(x, y, extra={"rows": rows})

    def build_model(self, spec, encoder, dropout=0.1):
        return SequenceClassifier(encoder, 1, dropout=dropout, name="similarity")

    def compile_args(self, spec):
        return {"loss": {"logits": keras.losses.MeanSquaredError()}}

    def main_metric(self, spec):
        return "spearman"

    def score(self, spec, data, outputs):
        scores = task_metrics.regression_scores(data.y["logits"][:, 0], outputs["logits"][:, 0])
        return {**scores, "examples": len(data)}

    def records(self, spec, data, outputs):
        return [{"sentence1": r["sentence1"], "sentence2": r["sentence2"], "similarity": float(v)}
                for r, v in zip(data.extra["rows"], outputs["logits"][:, 0])]

    def subset(self, data, examples):
        return data.take(examples, {"rows": take_items(data.extra["rows"], examples)})

    def validation_texts(self, path, spec, tokenizer):
        data, _ = self.read(path, spec, tokenizer, require_labels=False)
        rows = data.extra["rows"]
        return ValidationTexts([r["sentence1"] for r in rows], [r["sentence2"] for r in rows])


def _row(row, where, require_score):
    """A checked row: two strings and a number (or no score)."""
    for key in ("sentence1", "sentence2"):
        if not isinstance(row.get(key), str):
            raise TaskDataError(f"{where}: {key} must be a string")
    score = row.get("score")
    if score is None and require_score:
        raise TaskDataError(f"{where}: no score")
    if score is not None and (isinstance(score, bool) or not isinstance(score, (int, float))):
        raise TaskDataError(f"{where}: score must be a number, got {score!r}")
    return {"sentence1": row["sentence1"], "sentence2": row["sentence2"],
            "score": None if score is None else float(score)}
