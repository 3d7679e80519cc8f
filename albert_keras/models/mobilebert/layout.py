"""How MobileBERT's weights split over a device mesh's model axis.

Each block's attention (query, key, value -> ``attention_output``) and each
of its feed-forward networks (``ffn_<i>``, and ``output_ffn`` after the
attention, ``intermediate`` -> ``output``) split Megatron-style: the first
kernel's columns, the second's rows, one reduction per pair. The bottleneck
projections in and out of a block (512 <-> 128 in MobileBERT) and the
embeddings stay replicated: they are small, and splitting them would add a
reduction to every block.
"""

LAYOUT_RULES = {
    "block_\\d+/query/kernel": "out",
    "block_\\d+/key/kernel": "out",
    "block_\\d+/value/kernel": "out",
    "block_\\d+/attention_output/kernel": "in",
    "block_\\d+/(ffn_\\d+|output_ffn)/intermediate/kernel": "out",
    "block_\\d+/(ffn_\\d+|output_ffn)/output/kernel": "in",
}
