"""albert-keras: ALBERT (A Lite BERT) for TensorFlow / Keras 3."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from albert_keras.config import AlbertConfig  # noqa: E402
from albert_keras.config import ConfigError  # noqa: E402
from albert_keras.models.albert_classifier import AlbertClassifier  # noqa: E402
from albert_keras.models.albert_embedder import AlbertEmbedder  # noqa: E402
from albert_keras.models.albert_encoder import AlbertEncoder  # noqa: E402
from albert_keras.models.albert_multiple_choice import AlbertMultipleChoice  # noqa: E402
from albert_keras.models.albert_question_answerer import AlbertQuestionAnswerer  # noqa: E402
from albert_keras.models.albert_token_classifier import AlbertTokenClassifier  # noqa: E402
from albert_keras.models.albert_pretrainer import AlbertPretrainer  # noqa: E402
from albert_keras.presets import PRESETS  # noqa: E402
from albert_keras.presets import count_parameters  # noqa: E402
from albert_keras.presets import get_preset  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "AlbertClassifier",
    "AlbertConfig",
    "AlbertEmbedder",
    "AlbertEncoder",
    "AlbertMultipleChoice",
    "AlbertPretrainer",
    "AlbertQuestionAnswerer",
    "AlbertTokenClassifier",
    "ConfigError",
    "PRESETS",
    "count_parameters",
    "get_preset",
]
