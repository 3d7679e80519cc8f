"""albert-keras: ALBERT (A Lite BERT) for TensorFlow / Keras 3."""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow's C++ start-up lines (CUDA probing, oneDNN notes) are noise to a
# user; ``albert-keras --verbose`` turns them back on before TF is imported.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

__version__ = "0.1.0"

# The public names load on first use (PEP 562), so ``albert-keras --help`` and
# the light modules (corpus reading, configs) do not pay for importing Keras.
_EXPORTS = {
    "AlbertClassifier": "albert_keras.models.albert_classifier",
    "AlbertConfig": "albert_keras.config",
    "AlbertDiscriminator": "albert_keras.models.albert_discriminator",
    "AlbertDistiller": "albert_keras.models.albert_distiller",
    "AlbertElectraPretrainer": "albert_keras.models.albert_electra_pretrainer",
    "AlbertEmbedder": "albert_keras.models.albert_embedder",
    "AlbertEncoder": "albert_keras.models.albert_encoder",
    "AlbertMultipleChoice": "albert_keras.models.albert_multiple_choice",
    "AlbertPretrainer": "albert_keras.models.albert_pretrainer",
    "AlbertQuestionAnswerer": "albert_keras.models.albert_question_answerer",
    "AlbertTokenClassifier": "albert_keras.models.albert_token_classifier",
    "ConfigError": "albert_keras.config",
    "PRESETS": "albert_keras.presets",
    "count_parameters": "albert_keras.presets",
    "get_preset": "albert_keras.presets",
}

from albert_keras.lazy import lazy_exports  # noqa: E402  (after the environment)

__getattr__, __all__ = lazy_exports(__name__, _EXPORTS)
