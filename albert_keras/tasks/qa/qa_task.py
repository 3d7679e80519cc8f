"""``qa``: extractive question answering on SQuAD JSON (v1, or v2 with no-answer)."""

import dataclasses

import keras

from albert_keras.models.task_models.span_extractor import SpanExtractor
from albert_keras.tasks import metrics as task_metrics
from albert_keras.tasks import readers
from albert_keras.tasks.python_inputs import python_questions
from albert_keras.tasks.qa.qa_features import decode_answers
from albert_keras.tasks.qa.qa_features import qa_features
from albert_keras.tasks.task import Task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import ValidationTexts
from albert_keras.tasks.task import rows_of
from albert_keras.tasks.task import take_items


class QuestionAnswering(Task):
    """Span extraction over sliding windows of the context."""

    name = "qa"
    python_class = "albert_keras.tasks.qa.question_answerer:QuestionAnswerer"
    always_pairs = True  # a question and its context

    def read(self, path, spec, tokenizer, require_labels=True):
        examples = readers.read_squad(path, require_answers=require_labels)
        return self.from_examples(examples, spec, tokenizer)

    def from_python(self, x, y, spec, tokenizer, name="x"):
        examples = python_questions(x, y, name)
        for row, example in enumerate(examples):
            if example.is_impossible and not spec.version_2:
                raise ValueError(f"y[{row}]: no answer; questions without one need "
                                 "version_2=True")
        return self.from_examples(examples, spec, tokenizer)

    def from_examples(self, examples, spec, tokenizer):
        """``(TaskData, spec)`` of checked ``QAExample``s (a file's or Python's)."""
        features = qa_features(tokenizer, examples, spec.sequence_length, spec.stride,
                               spec.max_question_length)
        y = {"start_logits": features.start_positions, "end_logits": features.end_positions}
        return TaskData(features.inputs, y,
                        extra={"features": features, "examples": examples}), spec

    def example_of_rows(self, data):
        # a long context gives one window (row) per stride
        return data.extra["features"].example_index.astype("int64")

    def subset(self, data, examples):
        features = data.extra["features"]
        rows, renumber = rows_of(self.example_of_rows(data), examples)
        index = rows.nonzero()[0]
        kept = dataclasses.replace(
            features, inputs={k: v[rows] for k, v in features.inputs.items()},
            start_positions=features.start_positions[rows],
            end_positions=features.end_positions[rows],
            example_index=renumber[features.example_index[rows]].astype("int32"),
            offsets=take_items(features.offsets, index),
            max_context=take_items(features.max_context, index))
        return data.take(rows, {"features": kept,
                                "examples": take_items(data.extra["examples"], examples)})

    def build_model(self, spec, encoder, dropout=0.1):
        return SpanExtractor(encoder, name="question_answerer")

    def compile_args(self, spec):
        def ce():
            return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

        return {"loss": {"start_logits": ce(), "end_logits": ce()},
                "loss_weights": {"start_logits": 0.5, "end_logits": 0.5}}

    def answers(self, spec, data, outputs):
        """The decoded answer per question id, with the spec's decoding knobs."""
        return decode_answers(
            data.extra["features"], outputs["start_logits"], outputs["end_logits"],
            data.extra["examples"], n_best=spec.n_best,
            max_answer_length=spec.max_answer_length, null_threshold=spec.null_threshold,
            allow_no_answer=spec.version_2,
        )

    def main_metric(self, spec):
        return "f1"

    def score(self, spec, data, outputs):
        predictions = {qid: a["text"] for qid, a in self.answers(spec, data, outputs).items()}
        references = {e.qid: [a[0] for a in e.answers] for e in data.extra["examples"]}
        return task_metrics.squad_scores(predictions, references)

    def records(self, spec, data, outputs):
        answers = self.answers(spec, data, outputs)
        return [
            {"id": e.qid, "answer": answers[e.qid]["text"], "start": answers[e.qid]["start"],
             "end": answers[e.qid]["end"], "score": answers[e.qid]["score"],
             "null_score": answers[e.qid]["null_score"]}
            for e in data.extra["examples"]
        ]

    def validation_texts(self, path, spec, tokenizer):
        ex = readers.read_squad(path, require_answers=False)
        return ValidationTexts([e.question for e in ex], [e.context for e in ex])
