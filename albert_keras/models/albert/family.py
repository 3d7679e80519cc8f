"""The ALBERT family's registration and presets.

One ``register_family`` call: the config, the encoder, the named sizes and
the HF ``model_type`` values that ``albert_keras.convert.hf`` reads.
"""

from albert_keras.families import Family
from albert_keras.families import register_family
from albert_keras.models.albert.albert_config import AlbertConfig

# The original ALBERT sizes (paper Table 1, albert_config.json of each
# release). ``albert_tiny`` is ours, for tests and CPU runs.
PRESETS = {
    "albert_tiny": dict(
        embedding_size=128,
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
    ),
    "albert_base": dict(
        embedding_size=128,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
    ),
    "albert_large": dict(
        embedding_size=128,
        hidden_size=1024,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=4096,
    ),
    "albert_xlarge": dict(
        embedding_size=128,
        hidden_size=2048,
        num_hidden_layers=24,
        num_attention_heads=16,
        intermediate_size=8192,
    ),
    "albert_xxlarge": dict(
        embedding_size=128,
        hidden_size=4096,
        num_hidden_layers=12,
        num_attention_heads=64,
        intermediate_size=16384,
    ),
    # BERT: no sharing, E = H, exact gelu, 0.1 dropout, HF's uncased vocab.
    "bert_base": dict(
        vocab_size=30522,
        embedding_size=768,
        hidden_size=768,
        num_hidden_layers=12,
        num_hidden_groups=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        sharing="none",
    ),
    "bert_tiny": dict(
        vocab_size=30522,
        embedding_size=128,
        hidden_size=128,
        num_hidden_layers=2,
        num_hidden_groups=2,
        num_attention_heads=2,
        intermediate_size=512,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        sharing="none",
    ),
}


FAMILY = register_family(Family(
    name="albert",
    config_class=AlbertConfig,
    backbone="albert_keras.models.albert.albert_encoder:AlbertEncoder",
    presets=PRESETS,
    hf_model_types=("albert", "bert", "electra"),
    checkpoints="albert_keras.models.albert.checkpoints",
    tf1="albert_keras.models.albert.tf1",
    keras_hub="albert_keras.models.albert.keras_hub_preset",
    layout="albert_keras.models.albert.layout:LAYOUT_RULES",
    recipes={"albert": "albert_keras.models.albert.recipe:albert_recipe"},
))
