"""ALBERT's transformer stack with cross-layer parameter sharing."""

import keras

from albert_keras.families import attribute
from albert_keras.layers.attention_block import AttentionBlock
from albert_keras.layers.feed_forward_block import FeedForwardBlock
from albert_keras.models.albert.albert_config import block_plan


@keras.saving.register_keras_serializable(package="albert_keras")
class SharedEncoder(keras.layers.Layer):
    """``num_layers`` block applications over a smaller set of weights.

    Layer ``i`` runs group ``int(i / num_layers * num_groups)``; a group is
    ``inner_group_num`` post-LN blocks. ``sharing`` picks what the layers
    of one group share (the paper's Table 4):

    * ``all``: attention and FFN (ALBERT).
    * ``attention``: attention only; every layer has its own FFN.
    * ``ffn``: FFN only; every layer has its own attention.
    * ``none``: nothing (BERT); ``num_groups`` then has no effect.

    The attention and FFN modules live in ``attention_blocks`` and
    ``ffn_blocks``; ``plan[layer][inner] == (attention_index, ffn_index)``.

    Args:
        num_layers: L, the number of layer applications.
        num_groups: G.
        inner_group_num: blocks per group.
        sharing: ``all``, ``attention``, ``ffn`` or ``none``.
        hidden_size: H.
        num_heads: attention heads.
        intermediate_size: FFN width.
        activation: FFN activation name.
        dropout: hidden dropout.
        attention_dropout: dropout on attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.
        quantize_aware: fake-quantize the dense projections (QAT).
        mask_value: additive attention bias at padded positions (see
            ``AttentionBlock``).
        position_bias: ``none`` or ``alibi`` (see ``AttentionBlock``).
        alibi_slope_scale: multiplies ALiBi's slopes.
        relative: another family's attention (DeBERTa's disentangled
            attention), as the config's ``relative_options()`` dict with
            ``layers``: the family's ``attention`` (``"module:function"``,
            see ``albert_keras.families.Family``), which makes the blocks'
            class and the relative table; or None. The encoder then owns
            the one relative table every block reads.

    Example:
    >>> encoder = SharedEncoder(4, 1, 1, "all", 32, 4, 64)
    >>> x = keras.ops.ones((2, 8, 32))
    >>> states = encoder(x, keras.ops.ones((2, 8), "int32"))
    >>> len(states)  # the input and one state per block
    5
    """

    def __init__(  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
        self,
        num_layers,
        num_groups,
        inner_group_num,
        sharing,
        hidden_size,
        num_heads,
        intermediate_size,
        activation="gelu_new",
        dropout=0.0,
        attention_dropout=0.0,
        layer_norm_eps=1e-12,
        initializer_range=0.02,
        quantize_aware=False,
        mask_value=-10000.0,
        position_bias="none",
        alibi_slope_scale=1.0,
        relative=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.relative = dict(relative) if relative else None
        self.num_layers = num_layers
        self.num_groups = num_groups
        self.inner_group_num = inner_group_num
        self.sharing = sharing
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.quantize_aware = bool(quantize_aware)
        self.mask_value = float(mask_value)
        self.position_bias = position_bias
        self.alibi_slope_scale = float(alibi_slope_scale)
        self.plan = block_plan(num_layers, num_groups, inner_group_num, sharing)

        self._make_blocks()

    def _make_blocks(self):
        """The distinct attention and feed-forward blocks the plan names, and
        the relative position table of disentangled attention."""
        num_attention = 1 + max(a for blocks in self.plan for a, _ in blocks)
        num_ffn = 1 + max(f for blocks in self.plan for _, f in blocks)
        common = {"dropout": self.dropout, "layer_norm_eps": self.layer_norm_eps,
                  "initializer_range": self.initializer_range,
                  "quantize_aware": self.quantize_aware, "dtype": self.dtype_policy}
        self.rel_embeddings = None
        block_class, extra = AttentionBlock, {}
        if self.relative:
            block_class, extra, self.rel_embeddings = attribute(self.relative["layers"])(
                self.relative, self.hidden_size, common)
        self.attention_blocks = [
            block_class(self.hidden_size, self.num_heads, **extra, **common,
                        attention_dropout=self.attention_dropout, mask_value=self.mask_value,
                        position_bias=self.position_bias,
                        alibi_slope_scale=self.alibi_slope_scale, name=f"attention_{i}")
            for i in range(num_attention)
        ]
        self.ffn_blocks = [
            FeedForwardBlock(self.hidden_size, self.intermediate_size,
                             activation=self.activation, **common, name=f"ffn_{i}")
            for i in range(num_ffn)
        ]

    def build(self, x_shape, padding_mask_shape=None):
        if self.rel_embeddings is not None:
            self.rel_embeddings.build()
        for block in self.attention_blocks:
            block.build(x_shape)
        for block in self.ffn_blocks:
            block.build(x_shape)
        self.built = True

    def call(self, x, padding_mask, training=False, query_positions=None,
             return_attention=False):
        """Returns the input and the output of every block.

        That is ``L * inner_group_num + 1`` tensors, as the original code's
        ``all_layer_outputs`` and HF transformers (which also records every
        inner block); with ``inner_group_num=1`` one per layer.

        With ``query_positions`` (``[B, Q]``), the last block computes only
        the rows at those positions, so the last state is ``[B, Q, H]``: the
        same numbers as gathering the full last state, with the last block's
        query, output and FFN work cut from ``S`` rows to ``Q``.

        With ``return_attention``, returns ``(states, probs)``: ``probs``
        holds every block's attention probabilities ``[B, N, S, S]``
        (float32), in block order.
        """
        states, attention = [x], []
        steps = [pair for blocks in self.plan for pair in blocks]
        table = self.relative_table()
        for step, (attention_index, ffn_index) in enumerate(steps):
            last = step == len(steps) - 1
            x = self.attention_blocks[attention_index](
                x, padding_mask, training=training,
                query_positions=query_positions if last else None,
                return_attention=return_attention, rel_embeddings=table,
            )
            if return_attention:
                x, probs = x
                attention.append(probs)
            x = self.ffn_blocks[ffn_index](x, training=training)
            states.append(x)
        return (states, attention) if return_attention else states

    def relative_table(self):
        """The (normalised) relative table, or None without relative attention."""
        return None if self.rel_embeddings is None else self.rel_embeddings.table()

    def decode(self, x, padding_mask, query_states, query_positions, training=False):
        """Runs the last block from ``query_states`` over keys ``x``.

        DeBERTa's enhanced mask decoder re-applies the last layer this way
        (``albert_keras.layers.enhanced_mask_decoder``).

        Args:
            x: ``[B, S, H]``, the keys and values (a hidden state).
            padding_mask: ``[B, S]``.
            query_states: ``[B, Q, H]``.
            query_positions: ``[B, Q]`` positions of the query rows.
            training: dropout on or off.

        Returns:
            ``[B, Q, H]``.
        """
        attention_index, ffn_index = self.plan[-1][-1]
        # The table through a layer call (not a variable read), so that a
        # functional graph built on this method reads the live weights.
        table = None if self.rel_embeddings is None else self.rel_embeddings(x)
        out = self.attention_blocks[attention_index](
            x, padding_mask, training=training, query_positions=query_positions,
            query_states=query_states, rel_embeddings=table)
        return self.ffn_blocks[ffn_index](out, training=training)

    def compute_output_shape(self, x_shape, padding_mask_shape=None,
                             query_positions_shape=None):
        shapes = [tuple(x_shape)] * (self.num_layers * self.inner_group_num + 1)
        if query_positions_shape is not None:
            shapes[-1] = tuple(query_positions_shape) + (x_shape[-1],)
        return shapes

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "num_groups": self.num_groups,
                "inner_group_num": self.inner_group_num,
                "sharing": self.sharing,
                "hidden_size": self.hidden_size,
                "num_heads": self.num_heads,
                "intermediate_size": self.intermediate_size,
                "activation": self.activation,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware,
                "mask_value": self.mask_value,
                "position_bias": self.position_bias,
                "alibi_slope_scale": self.alibi_slope_scale,
                "relative": self.relative,
            }
        )
        return config
