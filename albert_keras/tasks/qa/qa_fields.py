"""The settings of ``--task qa``: windows over long contexts and decoding.

Free of Keras (the command line builds its flags from them); ``TaskFields``
takes them in (``TASK_FIELD_GROUPS``), and a run of another task refuses them
when set.
"""

import dataclasses

from albert_keras.options import option


@dataclasses.dataclass
class QaFields:
    """QA's windows and decoding.

    Args:
        stride: pieces between the starts of a context's windows.
        max_question_length: the longest question in pieces.
        max_answer_length: the longest answer in pieces.
        n_best: start and end candidates per window.
        null_threshold: SQuAD v2: answer '' when the ``[CLS]`` score beats
            the best span by this.
        version_2: questions may have no answer.

    Example:
    >>> QaFields().stride
    128
    """

    stride: int = option(128, "qa: pieces between windows", valid="[1, inf)")
    max_question_length: int = option(64, "qa: longest question in pieces", valid="[1, inf)")
    max_answer_length: int = option(30, "qa: longest answer in pieces", valid="[1, inf)")
    n_best: int = option(20, "qa: start and end candidates per window", valid="[1, inf)")
    null_threshold: float = option(0.0, "qa v2: answer '' when the [CLS] score beats the "
                                        "best span by this", valid="(-inf, inf)")
    version_2: bool = option(False, "qa: questions may have no answer")
