"""albert-keras: ALBERT (A Lite BERT) for TensorFlow / Keras 3."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_keras.config import AlbertConfig  # noqa: E402
from albert_keras.config import ConfigError  # noqa: E402
from albert_keras.models.albert_encoder import AlbertEncoder  # noqa: E402
from albert_keras.models.albert_pretrainer import AlbertPretrainer  # noqa: E402
from albert_keras.presets import PRESETS  # noqa: E402
from albert_keras.presets import count_parameters  # noqa: E402
from albert_keras.presets import get_preset  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AlbertConfig",
    "AlbertEncoder",
    "AlbertPretrainer",
    "ConfigError",
    "PRESETS",
    "count_parameters",
    "get_preset",
]
