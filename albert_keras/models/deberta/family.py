"""The DeBERTa family's registration and presets.

DeBERTa has its own config class (``DebertaConfig``: ALBERT's fields and
DeBERTa's relative attention, with DeBERTa-v3's values), ALBERT's encoder,
whose shared stack runs the attention this folder declares
(``disentangled_attention.stack_layers``), and its own HF reader and writer
(``checkpoints``). Its presets are microsoft/deberta-v3-*'s shapes.
"""

from albert_keras.families import Family
from albert_keras.families import register_family
from albert_keras.models.deberta.deberta_config import DebertaConfig

# DeBERTa-v3's encoder settings (microsoft/deberta-v3-* config.json), as
# config fields (DebertaConfig's defaults too): relative attention over 256 log buckets with shared
# position keys and a normalised table, no absolute positions in the input,
# no segment table, and DeBERTa's exact-GELU pooler.
DEBERTA_V3_ENCODER = {
    "relative_attention": True, "position_buckets": 256, "max_relative_positions": -1,
    "pos_att_type": "p2c|c2p", "share_att_key": True, "norm_rel_ebd": "layer_norm",
    "position_biased_input": False, "type_vocab_size": 0, "pooler_hidden_act": "gelu",
    "layer_norm_eps": 1e-7, "hidden_act": "gelu",
}


def _deberta_v3(hidden, layers, heads, vocab_size=128100):
    """A DeBERTa-v3 shape: no sharing, E = H, 0.1 dropout (the published configs)."""
    return dict(DEBERTA_V3_ENCODER, vocab_size=vocab_size, embedding_size=hidden,
                hidden_size=hidden, num_hidden_layers=layers, num_hidden_groups=layers,
                num_attention_heads=heads, intermediate_size=4 * hidden, sharing="none",
                hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1)


# microsoft/deberta-v3-{xsmall,small,base,large}; ``deberta_v3_tiny`` is
# ours, for tests and CPU runs.
PRESETS = {
    "deberta_v3_tiny": _deberta_v3(128, 2, 2, vocab_size=30522),
    "deberta_v3_xsmall": _deberta_v3(384, 12, 6),
    "deberta_v3_small": _deberta_v3(768, 6, 12),
    "deberta_v3_base": _deberta_v3(768, 12, 12),
    "deberta_v3_large": _deberta_v3(1024, 24, 16),
}


FAMILY = register_family(Family(
    name="deberta",
    config_class=DebertaConfig,
    backbone="albert_keras.models.albert.albert_encoder:AlbertEncoder",
    presets=PRESETS,
    hf_model_types=("deberta-v2",),
    checkpoints="albert_keras.models.deberta.checkpoints",
    layout="albert_keras.models.albert.layout:LAYOUT_RULES",
    recipe_fields=DEBERTA_V3_ENCODER,
    recipes={"deberta_v3": "albert_keras.models.deberta.recipe:deberta_v3_recipe"},
    attention="albert_keras.models.deberta.disentangled_attention:stack_layers",
    # the absolute position table of an encoder with position_biased_input
    # false, kept for the enhanced mask decoder, the only reader
    unread_weights=(r"[^']*position_embedding[^']*",),
))
