"""Where the config names were before each found its own home, kept so that
code written against ``albert_keras.config`` still imports.

``AlbertConfig`` and the ALBERT family's choices live in
``albert_keras.models.albert.albert_config``, DeBERTa's in
``albert_keras.models.deberta.deberta_config``; ``ConfigError`` and
``config_from_dict`` (every family's) in ``albert_keras.config_dicts``; the
special ids in ``albert_keras.text.special_ids``, the truncation modes in
``albert_keras.text.truncation``, the classifier's poolings in
``albert_keras.heads.poolings``. Nothing in the package imports this module.

Example:
>>> from albert_keras.config import AlbertConfig
>>> AlbertConfig().hidden_size
768
"""

from albert_keras.config_dicts import ConfigError  # noqa: F401
from albert_keras.config_dicts import config_from_dict  # noqa: F401
from albert_keras.heads.poolings import CLASSIFIER_POOLINGS  # noqa: F401
from albert_keras.models.albert.albert_config import ACTIVATIONS  # noqa: F401
from albert_keras.models.albert.albert_config import POSITION_BIASES  # noqa: F401
from albert_keras.models.albert.albert_config import SHARING_MODES  # noqa: F401
from albert_keras.models.albert.albert_config import AlbertConfig  # noqa: F401
from albert_keras.models.albert.albert_config import block_plan  # noqa: F401
from albert_keras.models.deberta.deberta_config import POSITION_ATTENTION_TERMS  # noqa: F401
from albert_keras.models.deberta.deberta_config import RELATIVE_EMBEDDING_NORMS  # noqa: F401
from albert_keras.text.special_ids import ALBERT_SPECIAL_IDS  # noqa: F401
from albert_keras.text.special_ids import CLS_ID  # noqa: F401
from albert_keras.text.special_ids import MASK_ID  # noqa: F401
from albert_keras.text.special_ids import PAD_ID  # noqa: F401
from albert_keras.text.special_ids import SEP_ID  # noqa: F401
from albert_keras.text.special_ids import UNK_ID  # noqa: F401
from albert_keras.text.truncation import DEFAULT_TRUNCATE  # noqa: F401
from albert_keras.text.truncation import SINGLE_TEXT_TRUNCATIONS  # noqa: F401
from albert_keras.text.truncation import TRUNCATE_MODES  # noqa: F401
