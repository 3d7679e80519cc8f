"""The settings of ``--task choice``: where a row's passage, question and
answers are.

Free of Keras (the command line builds its flags from them); ``TaskFields``
takes them in (``TASK_FIELD_GROUPS``), and a run of another task refuses them
when set.
"""

import dataclasses

from albert_keras.options import option


@dataclasses.dataclass
class ChoiceFields:
    """The columns of a multiple-choice file (JSONL).

    Args:
        context_column: the passage field.
        choices_column: the answers field (a list of two or more).
        question_column: the question field.

    Example:
    >>> ChoiceFields().choices_column
    'choices'
    """

    context_column: str = option("context", "choice: the passage field")
    choices_column: str = option("choices", "choice: the answers field")
    question_column: str = option("question", "choice: the question field")
