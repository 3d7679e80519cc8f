"""The fields of a task's description, declared once.

``TaskSpec`` (what a fine-tuned folder's ``task.json`` holds) and
``FinetuneConfig`` (the flags of ``finetune``) both take these fields from
``TaskFields``, so each field's default, flag and help is written here
only. Free of Keras, so the command line builds its flags without it.
"""

import dataclasses

from albert_keras.options import option
from albert_keras.tasks.registry import TASKS
from albert_keras.text.truncation import DEFAULT_TRUNCATE
from albert_keras.text.truncation import TRUNCATE_MODES


@dataclasses.dataclass
class TaskFields:
    """The task, its sequence length and cut, its columns, QA's decoding.

    Args:
        task: the registry name (``classify``, ``tag``, ``qa``, ``choice``).
        sequence_length: S.
        truncate: how inputs are cut to fit (``SegmentPacker``).
        regression: ``classify`` with one numeric output.
        text_column, text_pair_column, label_column, context_column,
            choices_column, question_column: where the fields are in
            CSV/TSV/JSONL files (``context_column`` is for ``choice``).
        stride, max_question_length, max_answer_length, n_best,
            null_threshold, version_2: QA windows and decoding.
    """

    # a live view of the registry, so a task registered after this import is a choice
    task: str = option("classify", "the task", choices=TASKS.keys())
    sequence_length: int = option(128, "pieces per input, specials included",
                                  flag="--seq-length", valid="[8, inf)")
    truncate: str = option(DEFAULT_TRUNCATE, "how inputs are cut to fit: pairs longest_first "
                                             "or waterfall; single texts also head, tail or "
                                             "head+tail (a quarter start, the rest end: long "
                                             "reviews and news)", choices=TRUNCATE_MODES)
    regression: bool = option(False, "classify: a numeric label (one output, MSE)")
    text_column: str = option("text", "CSV/TSV/JSONL: the text field")
    text_pair_column: str = option(None, "CSV/TSV/JSONL: the second text's field")
    label_column: str = option("label", "the label field")
    context_column: str = option("context", "choice: the passage field")
    choices_column: str = option("choices", "choice: the answers field")
    question_column: str = option("question", "choice: the question field")
    stride: int = option(128, "qa: pieces between windows", valid="[1, inf)")
    max_question_length: int = option(64, "qa: longest question in pieces", valid="[1, inf)")
    max_answer_length: int = option(30, "qa: longest answer in pieces", valid="[1, inf)")
    n_best: int = option(20, "qa: start and end candidates per window", valid="[1, inf)")
    null_threshold: float = option(0.0, "qa v2: answer '' when the [CLS] score beats the "
                                        "best span by this", valid="(-inf, inf)")
    version_2: bool = option(False, "qa: questions may have no answer")


def task_field_names():
    """The names of ``TaskFields``' fields but ``task``, in order."""
    return tuple(f.name for f in dataclasses.fields(TaskFields) if f.name != "task")
