"""``tag``: one BIO tag per word (CoNLL files)."""

import os
import random

import keras
import numpy as np

from albert_keras.data.corpus import sotu_files
from albert_keras.data.sentence_split import split_sentences
from albert_keras.models.task_models.token_tagger import TokenTagger
from albert_keras.tasks import metrics as task_metrics
from albert_keras.tasks import readers
from albert_keras.tasks.metrics import bio_spans
from albert_keras.tasks.python_inputs import python_sentences
from albert_keras.tasks.tag.tag_features import TagFeatures
from albert_keras.tasks.tag.tag_features import decode_tags
from albert_keras.tasks.tag.tag_features import tag_features
from albert_keras.tasks.task import Task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import ValidationTexts
from albert_keras.tasks.task import rows_of
from albert_keras.tasks.task import take_items


class Tag(Task):
    """Token classification (named entities, parts of speech) on CoNLL files."""

    name = "tag"
    python_class = "albert_keras.tasks.tag.token_classifier:TokenClassifier"
    per_token_targets = ("logits",)

    def new_spec(self, **fields):
        return super().new_spec(**fields).replace(labels=None)

    def read(self, path, spec, tokenizer, require_labels=True):
        sentences = readers.read_conll(path, require_tags=require_labels)
        return self.from_sentences(sentences, spec, tokenizer, path)

    def from_python(self, x, y, spec, tokenizer, name="x"):
        sentences = python_sentences(x, y, name)
        if spec.labels is not None:  # named here by row and word, as a file's by line
            known = set(spec.labels)
            for words, tags, row in sentences:
                for i, tag in enumerate(tags or ()):
                    if tag not in known:
                        raise ValueError(f"y[{row}][{i}]: unknown tag {tag!r}; the model "
                                         f"knows {', '.join(spec.labels)}")
        return self.from_sentences(sentences, spec, tokenizer, "y")

    def from_sentences(self, sentences, spec, tokenizer, path):
        """``(TaskData, spec)`` of ``(words, tags or None, first line)``
        sentences read from ``path`` (a file, or the name of the Python
        argument they came from); the tags discovered when ``spec`` has none."""
        words = [s[0] for s in sentences]
        tags = [s[1] for s in sentences] if sentences[0][1] is not None else None
        if spec.labels is None:  # the training file: discover the tags
            spec = spec.replace(labels=tuple(readers.discover_labels(
                t for s in tags for t in s)))
        index = {t: i for i, t in enumerate(spec.labels)}
        if tags is not None:
            for (w, t, line) in sentences:
                for offset, tag in enumerate(t):
                    if tag not in index:
                        raise readers.TaskDataError(
                            f"{path}:{line + offset}: unknown tag {tag!r}; the model knows "
                            f"{', '.join(spec.labels)}"
                        )
        features = tag_features(tokenizer, words, spec.sequence_length, tags,
                                index if tags else None)
        y = {"logits": features.labels} if tags is not None else None
        weights = {"logits": features.weights} if tags is not None else None
        data = TaskData(features.inputs, y, weights,
                        extra={"features": features, "words": words, "tags": tags})
        return data, spec

    def corpus_file(self, spec, folder, limit, seed):
        """The corpus's sentences as a CoNLL file of words (no tags)."""
        sentences = []
        for path in sotu_files():
            with open(path, encoding="utf-8") as f:
                for paragraph in f.read().split("\n\n"):
                    sentences += [s.split() for s in split_sentences(" ".join(paragraph.split()))]
        random.Random(seed).shuffle(sentences)
        path = os.path.join(folder, "corpus.conll")
        with open(path, "w", encoding="utf-8") as f:
            for words in sentences[:limit]:
                if words:
                    f.write("\n".join(words) + "\n\n")
        return path

    def build_model(self, spec, encoder, dropout=0.1):
        return TokenTagger(encoder, len(spec.labels), dropout=dropout, name="tagger")

    def compile_args(self, spec):
        # Each position is weighed (1 on a word's first piece, else 0), so
        # the accuracy is a weighted metric. The loss is the mean over the
        # labelled pieces, as BERT's NER recipe and HF's ignore_index give:
        # Keras' default divides by every position of the batch, which made
        # the gradients 5-10x smaller than the task's; Adam's epsilon then
        # swallowed the small ones and the tagger hardly learned at 1e-4
        # (entity F1 0.001 against HF Trainer's 0.33 on the same weights).
        args = super().compile_args(spec)
        loss = keras.losses.SparseCategoricalCrossentropy(
            from_logits=True, reduction="mean_with_sample_weight")
        return {"loss": {"logits": loss}, "weighted_metrics": args["metrics"]}

    def example_of_rows(self, data):
        # a sentence longer than the sequence spans several rows; each row
        # lists its words as (sentence, word, position)
        return np.asarray([words[0][0] for words in data.extra["features"].words], np.int64)

    def subset(self, data, examples):
        features = data.extra["features"]
        rows, renumber = rows_of(self.example_of_rows(data), examples)
        words = [[(int(renumber[s]), w, p) for s, w, p in row]
                 for row, keep in zip(features.words, rows) if keep]
        kept = TagFeatures({k: v[rows] for k, v in features.inputs.items()},
                           features.labels[rows], features.weights[rows], words)
        return data.take(rows, {"features": kept,
                                "words": take_items(data.extra["words"], examples),
                                "tags": take_items(data.extra["tags"], examples)})

    def _decode(self, spec, data, outputs):
        return decode_tags(data.extra["features"], outputs["logits"], data.extra["words"],
                           spec.labels)

    def main_metric(self, spec):
        return "entity_f1"

    def score(self, spec, data, outputs):
        predicted = self._decode(spec, data, outputs)
        entity = task_metrics.entity_scores(data.extra["tags"], predicted)
        flat_true = [t for s in data.extra["tags"] for t in s]
        flat_pred = [t for s in predicted for t in s]
        return {
            "entity_f1": entity["f1"],
            "entity_precision": entity["precision"],
            "entity_recall": entity["recall"],
            "per_type": entity["per_type"],
            "token_accuracy": task_metrics.accuracy(flat_true, flat_pred),
            "sentences": len(predicted),
        }

    def records(self, spec, data, outputs):
        words = data.extra["words"]
        return [
            {"tokens": w, "tags": t,
             "entities": [{"type": kind, "start": a, "end": b + 1, "text": " ".join(w[a:b + 1])}
                          for kind, a, b in bio_spans(t)]}
            for w, t in zip(words, self._decode(spec, data, outputs))
        ]

    def validation_texts(self, path, spec, tokenizer):
        sentences = readers.read_conll(path, require_tags=False)
        return ValidationTexts([" ".join(s[0]) for s in sentences])
