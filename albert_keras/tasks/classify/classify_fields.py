"""The settings of ``--task classify`` beyond the shared ones.

Free of Keras (the command line builds its flags from them); ``TaskFields``
takes them in (``TASK_FIELD_GROUPS``), and a run of another task refuses them
when set.
"""

import dataclasses

from albert_keras.options import option


@dataclasses.dataclass
class ClassifyFields:
    """Classification's own settings.

    Args:
        regression: one numeric output trained with MSE, instead of classes.

    Example:
    >>> ClassifyFields().regression
    False
    """

    regression: bool = option(False, "classify: a numeric label (one output, MSE)")
