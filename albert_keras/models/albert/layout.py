"""How ALBERT's weights split over a device mesh's model axis.

Megatron-style: query/key/value and the FFN's first kernel split their
output columns, the attention output and the FFN's second kernel their
input rows, so each pair needs one reduction. The embedding tables, biases,
LayerNorms and the small heads stay replicated (ALBERT's factorized tables
are small: V x 128). DeBERTa's encoder is ALBERT's, so these rules split its
attention too; its relative-position table stays replicated (2 x 256 rows).
"""

# Path patterns (searched in a weight's path) -> which axis goes to the
# model axis: ``"out"`` the columns, ``"in"`` the rows.
LAYOUT_RULES = {
    "transformer/attention_\\d+/query/kernel": "out",
    "transformer/attention_\\d+/key/kernel": "out",
    "transformer/attention_\\d+/value/kernel": "out",
    "transformer/attention_\\d+/output_dense/kernel": "in",
    "transformer/ffn_\\d+/ffn/kernel": "out",
    "transformer/ffn_\\d+/ffn_output/kernel": "in",
}
