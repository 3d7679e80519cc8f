"""How ModernBERT's weights split over a device mesh's model axis.

Each block's attention (``Wqkv`` -> ``Wo``) and GeGLU (``Wi`` -> ``Wo``)
split Megatron-style: the first kernel's columns, the second's rows, one
reduction per pair. ``Wqkv`` and ``Wi`` are fused (query, key and value;
value and gate), so a shard of their columns is not a whole set of heads or
the value beside its gate: XLA's partitioner moves what each half needs
(exact, with more traffic than an unfused split). The token table, the norms
and the prediction head stay replicated.
"""

LAYOUT_RULES = {
    "layer_\\d+/attn/Wqkv/kernel": "out",
    "layer_\\d+/attn/Wo/kernel": "in",
    "layer_\\d+/mlp/Wi/kernel": "out",
    "layer_\\d+/mlp/Wo/kernel": "in",
}
