"""How ModernBERT's weights split over a device mesh's model axis.

Each block's attention (``Wqkv`` -> ``Wo``) and GeGLU (``Wi`` -> ``Wo``)
split Megatron-style: the first kernel's columns, the second's rows, one
reduction per pair. ``Wqkv`` and ``Wi`` are fused (query, key and value;
value and gate), so a shard of their columns is not a whole set of heads or
the value beside its gate: XLA's partitioner moves what each half needs
(exact, with more traffic than an unfused split). The token table, the norms
and the prediction head stay replicated. A lite encoder's one shared block
(``shared_layer``) splits as each block does.
"""

LAYOUT_RULES = {
    "(layer_\\d+|shared_layer)/attn/Wqkv/kernel": "out",
    "(layer_\\d+|shared_layer)/attn/Wo/kernel": "in",
    "(layer_\\d+|shared_layer)/mlp/Wi/kernel": "out",
    "(layer_\\d+|shared_layer)/mlp/Wo/kernel": "in",
}
