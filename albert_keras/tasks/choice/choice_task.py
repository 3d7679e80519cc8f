"""``choice``: pick one of N answers per question (JSONL)."""

import numpy as np

from albert_keras.models.task_models.choice_scorer import ChoiceScorer
from albert_keras.tasks import metrics as task_metrics
from albert_keras.tasks import readers
from albert_keras.tasks.python_inputs import python_choices
from albert_keras.tasks.task import Task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import ValidationTexts
from albert_keras.tasks.task import softmax
from albert_keras.tasks.task import take_fields
from albert_keras.text.packer import pack_texts


class Choice(Task):
    """Each (context, choice) pair is scored; the best-scored choice wins."""

    name = "choice"
    python_class = "albert_keras.tasks.choice.multiple_choice:MultipleChoice"

    def read(self, path, spec, tokenizer, require_labels=True):
        examples = readers.read_choices(
            path, spec.context_column, spec.question_column, spec.choices_column,
            spec.label_column, require_labels=require_labels,
        )
        return self.from_examples(examples, spec, tokenizer, path)

    def from_python(self, x, y, spec, tokenizer, name="x"):
        return self.from_examples(python_choices(x, y, name), spec, tokenizer, "y")

    def from_examples(self, examples, spec, tokenizer, path):
        """``(TaskData, spec)`` of ``ChoiceExamples`` read from ``path`` (a
        file, or the Python argument they came from)."""
        count = len(examples.choices[0])
        if spec.num_choices is None:  # the training file sets it
            spec = spec.replace(num_choices=count)
        if count != spec.num_choices:
            raise readers.TaskDataError(
                f"{path}: {count} choices per question, but the model was trained with "
                f"{spec.num_choices}"
            )
        seq = spec.sequence_length
        firsts = [c for c in examples.contexts for _ in range(count)]
        seconds = [s for choices in examples.choices for s in choices]
        flat = pack_texts(tokenizer, firsts, seconds, seq, spec.truncate)
        x = {k: v.reshape(len(examples.contexts), count, seq) for k, v in flat.items()}
        y = None
        if examples.labels is not None:
            y = {"logits": np.asarray(examples.labels, np.int32)}
        return TaskData(x, y, extra={"examples": examples}), spec

    def build_model(self, spec, encoder, dropout=0.1):
        return ChoiceScorer(encoder, dropout=dropout, name="multiple_choice")

    def subset(self, data, examples):
        kept = take_fields(data.extra["examples"], examples)
        return data.take(examples, {"examples": kept})

    def score(self, spec, data, outputs):
        predicted = outputs["logits"].argmax(-1)
        return {"accuracy": task_metrics.accuracy(data.y["logits"], predicted),
                "examples": len(predicted)}

    def records(self, spec, data, outputs):
        return [{"label": int(p.argmax()), "probabilities": [float(v) for v in p]}
                for p in softmax(outputs["logits"])]

    def validation_texts(self, path, spec, tokenizer):
        data, _ = self.read(path, spec, tokenizer, require_labels=False)
        return ValidationTexts(x=data.x)
