"""The ModernBERT family's registration and presets.

``modernbert_base`` and ``modernbert_large`` are Answer.AI's and LightOn's
published shapes (``answerdotai/ModernBERT-base``: 22 layers of 768;
``-large``: 28 of 1024, GeGLU 2624); ``modernbert_tiny`` is a small shape
for tests and the built-in corpus, and ``modernbert_lite_tiny`` its lite
form (a factorized table, one shared block). The ``ettin_encoder_*`` presets are the
shapes of Ettin's encoders (``jhu-clsp/ettin-encoder-17m`` ... ``-1b``), read
from the model configs of their final training phase in
JHU-CLSP/ettin-encoder-vs-decoder (``pretraining/configs/standard/*/
prolong_decay/encoder_*.yaml``): ModernBERT's architecture with one rotary
base (160,000) for the global and the local layers and 7,999 positions.
"""

from albert_keras.families import Family
from albert_keras.families import register_family
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig


def _ettin(layers, hidden, inner):
    """An Ettin encoder's shape: heads of 64, both rotary bases 160,000,
    7,999 positions (the rest is ModernBERT-base's)."""
    return dict(num_hidden_layers=layers, hidden_size=hidden, intermediate_size=inner,
                num_attention_heads=hidden // 64, local_rope_theta=160000.0,
                max_position_embeddings=7999)


PRESETS = {
    "modernbert_base": {},  # the config's defaults
    "modernbert_large": dict(hidden_size=1024, intermediate_size=2624, num_hidden_layers=28,
                             num_attention_heads=16),
    "ettin_encoder_17m": _ettin(layers=7, hidden=256, inner=384),
    "ettin_encoder_32m": _ettin(layers=10, hidden=384, inner=576),
    "ettin_encoder_68m": _ettin(layers=19, hidden=512, inner=768),
    "ettin_encoder_150m": _ettin(layers=22, hidden=768, inner=1152),
    "ettin_encoder_400m": _ettin(layers=28, hidden=1024, inner=2624),
    "ettin_encoder_1b": _ettin(layers=28, hidden=1792, inner=3840),
    "modernbert_tiny": dict(hidden_size=128, intermediate_size=192, num_hidden_layers=4,
                            num_attention_heads=2, max_position_embeddings=512,
                            local_attention=64),
    # ModernBERT with ALBERT's factorized table and one block at every layer
    # (each keeping its window and rotary base): twice modernbert_tiny's width at
    # its parameters on the built-in corpus' 8,000 pieces (1.58M against 1.60M)
    "modernbert_lite_tiny": dict(hidden_size=256, intermediate_size=384, num_hidden_layers=4,
                                 num_attention_heads=4, max_position_embeddings=512,
                                 local_attention=64, embedding_size=112, share_layers=True),
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
    mask_rate=0.3,  # ModernBERT's and Ettin's pretraining masked 30% (ModernBERT, sec. 2.2)
    # its pooler is HF's prediction head ("head/dense/kernel", never
    # "mlm_head/..."), which only its masked LM reads (the lite form's
    # narrower table has a head of its own)
    unread_weights=(r"(?:[^']*/)?head/(?:dense|norm)/[^']*",),
))
