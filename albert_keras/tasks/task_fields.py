"""The fields of a task's description, declared once.

``TaskSpec`` (what a fine-tuned folder's ``task.json`` holds) and
``FinetuneConfig`` (the flags of ``finetune``) both take these fields from
``TaskFields``, so each field's default, flag and help is written once: the
shared ones here, a task's own in its folder (``QaFields``...), each group
naming the task it belongs to. Free of Keras, so the command line builds its
flags without it.
"""

import dataclasses

from albert_keras.options import name_of
from albert_keras.options import option
from albert_keras.tasks.choice.choice_fields import ChoiceFields
from albert_keras.tasks.classify.classify_fields import ClassifyFields
from albert_keras.tasks.embed.embed_fields import EmbedFields
from albert_keras.tasks.qa.qa_fields import QaFields
from albert_keras.tasks.registry import TASKS
from albert_keras.text.truncation import DEFAULT_TRUNCATE
from albert_keras.text.truncation import TRUNCATE_MODES


@dataclasses.dataclass
class CommonTaskFields:
    """What every task has: its name, its sequence length and cut, and the
    columns of a table file.

    Args:
        task: the registry name (``classify``, ``tag``, ``qa``, ``choice``).
        sequence_length: S.
        truncate: how inputs are cut to fit (``SegmentPacker``).
        text_column, text_pair_column, label_column: where the fields are
            in CSV/TSV/JSONL files.
    """

    # a live view of the registry, so a task registered after this import is a choice
    task: str = option("classify", "the task", choices=TASKS.keys())
    sequence_length: int = option(128, "pieces per input, specials included",
                                  flag="--seq-length", valid="[8, inf)")
    truncate: str = option(DEFAULT_TRUNCATE, "how inputs are cut to fit: pairs longest_first "
                                             "or waterfall; single texts also head, tail or "
                                             "head+tail (a quarter start, the rest end: long "
                                             "reviews and news)", choices=TRUNCATE_MODES)
    text_column: str = option("text", "CSV/TSV/JSONL: the text field")
    text_pair_column: str = option(None, "CSV/TSV/JSONL: the second text's field")
    label_column: str = option("label", "the label field")


# task -> its own field group (declared in its folder), in the order their
# flags are listed: one line for a task that has settings of its own
TASK_FIELD_GROUPS = {"classify": ClassifyFields, "qa": QaFields, "choice": ChoiceFields,
                     "embed": EmbedFields}


@dataclasses.dataclass
class TaskFields(*reversed(TASK_FIELD_GROUPS.values()), CommonTaskFields):
    """``CommonTaskFields`` and each task's own settings
    (``TASK_FIELD_GROUPS``: classify's ``regression``, QA's windows and
    decoding, choice's columns)."""

    def check_task_fields(self):
        """Refuses a setting of another task's group set away from its
        default (``--stride`` for ``--task classify``): a flag that does
        not apply is an error, not dropped."""
        for task, group in TASK_FIELD_GROUPS.items():
            if task == self.task:
                continue
            for field in dataclasses.fields(group):
                if getattr(self, field.name) != field.default:
                    raise ValueError(f"{name_of(type(self), field.name)} is for task "
                                     f"{task}, not {self.task}")


def task_field_names():
    """The names of ``TaskFields``' fields but ``task``, in order."""
    return tuple(f.name for f in dataclasses.fields(TaskFields) if f.name != "task")
