"""The attention half of a post-LN transformer block."""

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense


@keras.saving.register_keras_serializable(package="albert_keras")
class AttentionBlock(keras.layers.Layer):
    """Multi-head self-attention, dropout, then ``LayerNorm(attn + x)``.

    The query/key/value/output projections are plain ``[H, H]`` dense
    kernels, the layout of the original checkpoints and of HF, so weights map
    one to one. Softmax runs in float32 under mixed precision.

    Args:
        hidden_size: H.
        num_heads: attention heads; must divide ``hidden_size``.
        dropout: dropout on the attention output.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.
        quantize_aware: fake-quantize the projections (QAT, see
            ``QuantizedDense``).

    Example:
    >>> block = AttentionBlock(32, 4)
    >>> x = keras.ops.ones((2, 8, 32))
    >>> bias = keras.ops.zeros((2, 1, 1, 8))
    >>> tuple(block(x, bias).shape)
    (2, 8, 32)
    """

    def __init__(
        self,
        hidden_size,
        num_heads,
        dropout=0.0,
        attention_dropout=0.0,
        layer_norm_eps=1e-12,
        initializer_range=0.02,
        quantize_aware=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(
                f"hidden_size ({hidden_size}) must be divisible by num_heads "
                f"({num_heads})"
            )
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.quantize_aware = bool(quantize_aware)

        def dense(name):
            return make_dense(
                hidden_size,
                quantize_aware=self.quantize_aware,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range
                ),
                dtype=self.dtype_policy,
                name=name,
            )

        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output_dense")
        self.probs_dropout = keras.layers.Dropout(
            attention_dropout, dtype=self.dtype_policy, name="attention_probs_dropout"
        )
        self.output_dropout = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_output_dropout"
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="attention_layer_norm"
        )

    def build(self, x_shape, attention_bias_shape=None):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build(x_shape)
        self.layer_norm.build(x_shape)
        self.built = True

    def _split_heads(self, x):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        x = ops.reshape(x, (batch, seq, self.num_heads, self.head_size))
        return ops.transpose(x, (0, 2, 1, 3))

    def call(self, x, attention_bias, training=False, query_positions=None):
        """Attends from every position, or only from ``query_positions``.

        Args:
            x: ``[B, S, H]``.
            attention_bias: ``[B, 1, 1, S]``, added to the scores (see
                ``AttentionMaskBias``).
            training: dropout on or off.
            query_positions: optional ``[B, Q]`` int positions. The block
                then returns ``[B, Q, H]``: the rows it would return at those
                positions, computed without the others (keys and values
                still come from all ``S``). Pretraining uses this in the
                last block, whose other rows no head reads.
        """
        scale = 1.0 / float(self.head_size) ** 0.5
        if query_positions is not None:
            positions = ops.cast(query_positions, "int32")[:, :, None]
            queries = ops.take_along_axis(x, positions, axis=1)
        else:
            queries = x
        q = self._split_heads(self.query(queries, training=training))
        k = self._split_heads(self.key(x, training=training))
        v = self._split_heads(self.value(x, training=training))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
        scores = ops.cast(scores, "float32") * scale
        scores = scores + ops.cast(attention_bias, "float32")
        probs = ops.cast(ops.softmax(scores, axis=-1), v.dtype)
        probs = self.probs_dropout(probs, training=training)
        context = ops.matmul(probs, v)
        context = ops.transpose(context, (0, 2, 1, 3))
        batch, seq = ops.shape(queries)[0], ops.shape(queries)[1]
        context = ops.reshape(context, (batch, seq, self.hidden_size))
        out = self.output_dropout(self.output_dense(context, training=training),
                                  training=training)
        return self.layer_norm(out + queries)

    def compute_output_shape(self, x_shape, attention_bias_shape=None,
                             query_positions_shape=None):
        if query_positions_shape is not None:
            return tuple(query_positions_shape) + (x_shape[-1],)
        return x_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_size": self.hidden_size,
                "num_heads": self.num_heads,
                "dropout": self.dropout,
                "attention_dropout": self.attention_dropout,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware,
            }
        )
        return config
