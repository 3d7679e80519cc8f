"""The ModernBERT family's registration and presets.

``modernbert_base`` and ``modernbert_large`` are Answer.AI's and LightOn's
published shapes (``answerdotai/ModernBERT-base``: 22 layers of 768;
``-large``: 28 of 1024, GeGLU 2624); ``modernbert_tiny`` is a small shape
for tests and the built-in corpus. Ettin's encoders share the architecture
and load from their HF folders as they are.
"""

from albert_keras.families import Family
from albert_keras.families import register_family
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig

PRESETS = {
    "modernbert_base": {},  # the config's defaults
    "modernbert_large": dict(hidden_size=1024, intermediate_size=2624, num_hidden_layers=28,
                             num_attention_heads=16),
    "modernbert_tiny": dict(hidden_size=128, intermediate_size=192, num_hidden_layers=4,
                            num_attention_heads=2, max_position_embeddings=512,
                            local_attention=64),
}

FAMILY = register_family(Family(
    name="modernbert",
    config_class=ModernBertConfig,
    backbone="albert_keras.models.modernbert.modernbert_encoder:ModernBertEncoder",
    presets=PRESETS,
    hf_model_types=("modernbert",),
    checkpoints="albert_keras.models.modernbert.checkpoints",
    layout="albert_keras.models.modernbert.layout:LAYOUT_RULES",
    tokenizer_kind="bpe",
))
