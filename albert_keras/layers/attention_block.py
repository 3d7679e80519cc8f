"""The attention half of a post-LN transformer block."""

import keras
from keras import ops

from albert_keras.layers.position_bias import POSITION_BIASES
from albert_keras.layers.position_bias import alibi_bias
from albert_keras.layers.quantized_dense import make_dense


def _rows(x):
    """``[..., H]`` as one ``[rows, H]`` matrix (``H`` known when traced)."""
    return ops.reshape(x, (-1, x.shape[-1]))


@keras.saving.register_keras_serializable(package="albert_keras")
class AttentionBlock(keras.layers.Layer):
    """Multi-head self-attention, dropout, then ``LayerNorm(attn + x)``.

    The query/key/value/output projections are plain ``[H, H]`` dense
    kernels, the layout of the original checkpoints and of HF, so weights map
    one to one. Softmax runs in float32 under mixed precision.

    Two ways to compute the attention, with the same numbers:

    * fused: ``keras.ops.dot_product_attention`` with a boolean mask of shape
      ``[B, 1, T, S]``. On JAX this takes cuDNN's fused kernel on NVIDIA GPUs
      (a ``[B, 1, 1, S]`` mask or an additive bias makes cuDNN refuse and
      fall back to plain XLA) and the Splash kernel on TPUs; on torch it is
      ``scaled_dot_product_attention``. Used on the JAX and torch backends.
    * explicit: ``softmax(q k^T * scale + bias)`` with the additive bias
      ``(1 - mask) * mask_value``. Used on the TensorFlow backend, whose
      ``dot_product_attention`` is this same computation with no fused
      kernel behind it, so the TFLite export keeps its graph and its bounded
      mask value (int8 needs a small one). Also used whenever attention
      dropout is active, which the fused op does not have, and with ALiBi.

    Args:
        hidden_size: H.
        num_heads: attention heads; must divide ``hidden_size``.
        dropout: dropout on the attention output.
        attention_dropout: dropout on the attention probabilities.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.
        quantize_aware: fake-quantize the projections (QAT, see
            ``QuantizedDense``).
        mask_value: the additive bias at padded key positions on the
            explicit path (-10000 as the original; the export uses a bounded
            value such as -120, which changes nothing in float: exp(-120) is
            below float32 resolution next to the real scores).
        position_bias: ``none`` (ALBERT) or ``alibi``: add
            ``-slope_h * |i - j|`` to head ``h``'s scores (see
            ``albert_keras.layers.position_bias``).
        alibi_slope_scale: multiplies ALiBi's slopes (1: the paper's).

    Example:
    >>> block = AttentionBlock(32, 4)
    >>> x = keras.ops.ones((2, 8, 32))
    >>> padding_mask = keras.ops.ones((2, 8), "int32")
    >>> tuple(block(x, padding_mask).shape)
    (2, 8, 32)
    """

    def __init__(  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
        self,
        hidden_size,
        num_heads,
        dropout=0.0,
        attention_dropout=0.0,
        layer_norm_eps=1e-12,
        initializer_range=0.02,
        quantize_aware=False,
        mask_value=-10000.0,
        position_bias="none",
        alibi_slope_scale=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if position_bias not in POSITION_BIASES:
            raise ValueError(
                f"position_bias must be one of {POSITION_BIASES}, got {position_bias!r}"
            )
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
        self.mask_value = float(mask_value)
        self.position_bias = position_bias
        self.alibi_slope_scale = float(alibi_slope_scale)

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

    def build(self, x_shape, padding_mask_shape=None):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build(x_shape)
        self.layer_norm.build(x_shape)
        self.built = True

    def _projected_heads(self, dense, x, training, dims):
        """``dense(x)`` split into heads: ``[B, S, H]`` -> ``[B, S, N, D]``;
        ``dims`` is ``(B, S)``, read once per input (on TensorFlow each
        ``ops.shape`` traces a Shape op and a slice per dynamic dimension).

        The projection runs on the rows as one ``[B*S, H]`` matrix. Given a
        3-D input, Keras' ``Dense`` goes through ``tensordot`` on TensorFlow:
        about twenty shape ops traced per projection (and as many in its
        gradient), and a reshape between the matrix product and the bias
        that keeps oneDNN from adding the bias inside the product.
        """
        y = dense(_rows(x), training=training)
        return ops.reshape(y, tuple(dims) + (self.num_heads, self.head_size))

    def call(self, x, padding_mask, training=False, query_positions=None,  # noqa: PLR0913 (Keras call arguments)
             return_attention=False, query_states=None, rel_embeddings=None):
        """Attends from every position, or only from ``query_positions``.

        Args:
            x: ``[B, S, H]``.
            padding_mask: ``[B, S]``, 1 (or True) at real tokens; padded
                positions are never attended to.
            training: dropout on or off.
            query_positions: optional ``[B, Q]`` int positions. The block
                then returns ``[B, Q, H]``: the rows it would return at those
                positions, computed without the others (keys and values
                still come from all ``S``). Pretraining uses this in the
                last block, whose other rows no head reads.
            return_attention: also return the attention probabilities
                ``[B, N, Q, S]`` (float32), as ``(output, probs)``; the
                explicit path runs then, since the fused kernel keeps them
                to itself. Distillation's attention transfer reads them.
            query_states: optional ``[B, Q, H]`` states to attend from
                instead of ``x`` (keys and values still come from ``x``); the
                residual is then ``query_states``. DeBERTa's enhanced mask
                decoder feeds absolute positions in this way. Their
                positions are ``query_positions``, or ``0..Q-1``.
            rel_embeddings: the relative-position table; only the
                disentangled block (``DisentangledAttentionBlock``) reads it.
        """
        if query_states is not None:
            queries = query_states
        elif query_positions is not None:
            positions = ops.cast(query_positions, "int32")[:, :, None]
            queries = ops.take_along_axis(x, positions, axis=1)
        else:
            queries = x
        dims = ops.shape(x)[:2]
        query_dims = dims if queries is x else ops.shape(queries)[:2]
        q = self._projected_heads(self.query, queries, training, query_dims)
        k = self._projected_heads(self.key, x, training, dims)
        v = self._projected_heads(self.value, x, training, dims)
        probs = None
        if self._use_fused(training) and not return_attention:
            context = self._fused_attention(q, k, v, padding_mask)
        else:
            context, probs = self._explicit_attention(
                q, k, v, padding_mask, training, query_positions, rel_embeddings
            )
        # [B*T, H] rows, as the projections: the bias and the residual are
        # added inside TensorFlow's matrix product
        context = ops.reshape(context, (-1, self.hidden_size))
        out = self.output_dropout(self.output_dense(context, training=training),
                                  training=training)
        out = ops.reshape(self.layer_norm(out + _rows(queries)),
                          tuple(query_dims) + (self.hidden_size,))
        return (out, probs) if return_attention else out

    # -- the two attention paths ---------------------------------------------------
    def _use_fused(self, training):
        if keras.backend.backend() == "tensorflow":
            return False
        # cuDNN's fused kernel takes a mask but refuses an additive bias (it
        # falls back to unfused XLA), so ALiBi runs the explicit path.
        if self.position_bias != "none":
            return False
        return not (training and self.attention_dropout > 0)

    def _score_scale(self):
        """The factor on ``q k^T``: ``1 / sqrt(head_size)``."""
        return 1.0 / float(self.head_size) ** 0.5

    def _position_scores(self, q, k, query_positions, rel_embeddings, training):
        """Scores added for positions, float32 ``[B|1, N, T, S]``, or None.

        ``q``/``k`` are ``[B, N, T|S, D]``. Here: ALiBi's distance penalty;
        the disentangled block adds DeBERTa's relative terms.
        """
        if self.position_bias != "alibi":
            return None
        return alibi_bias(self.num_heads, ops.shape(k)[2], query_positions,
                          self.alibi_slope_scale)

    def _explicit_attention(self, q, k, v, padding_mask, training,  # noqa: PLR0913 (the attention's inputs)
                            query_positions=None, rel_embeddings=None):
        """``[B, T, N, D]`` context from ``[B, T|S, N, D]`` heads, and the
        float32 probabilities ``[B, N, T, S]`` before dropout."""
        q, k, v = (ops.transpose(t, (0, 2, 1, 3)) for t in (q, k, v))
        scores = ops.matmul(q, ops.transpose(k, (0, 1, 3, 2)))
        scores = ops.cast(scores, "float32") * self._score_scale()
        # Built here, inside a layer: in Keras 3.15's functional API,
        # ``tensor * python_float`` comes back as a sparse tensor.
        bias = (1.0 - ops.cast(padding_mask, "float32")) * self.mask_value
        scores = scores + bias[:, None, None, :]
        extra = self._position_scores(q, k, query_positions, rel_embeddings, training)
        if extra is not None:
            scores = scores + extra
        probs = ops.softmax(scores, axis=-1)
        dropped = self.probs_dropout(ops.cast(probs, v.dtype), training=training)
        return ops.transpose(ops.matmul(dropped, v), (0, 2, 1, 3)), probs

    def _fused_attention(self, q, k, v, padding_mask):
        queries = ops.shape(q)[1]
        # cuDNN's training kernel rejects an odd query length ("Unsupported
        # sequence length Q 21" for [CLS] + 20 masked rows): run one extra
        # query row and drop it.
        odd = isinstance(queries, int) and queries % 2 == 1
        if odd:
            q = ops.concatenate([q, q[:, :1]], axis=1)
        (batch, rows), keys = ops.shape(q)[:2], ops.shape(k)[1]
        # cuDNN takes the mask only at its full [B, 1, T, S] shape; a
        # [B, 1, 1, S] mask silently falls back to unfused XLA.
        mask = ops.broadcast_to(
            ops.cast(padding_mask, "bool")[:, None, None, :], (batch, 1, rows, keys)
        )
        context = ops.dot_product_attention(
            q, k, v, mask=mask, scale=1.0 / float(self.head_size) ** 0.5
        )
        return context[:, :queries] if odd else context

    def compute_output_shape(self, x_shape, padding_mask_shape=None,
                             query_positions_shape=None, query_states_shape=None,
                             rel_embeddings_shape=None):
        if query_states_shape is not None:
            return tuple(query_states_shape)
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
                "mask_value": self.mask_value,
                "position_bias": self.position_bias,
                "alibi_slope_scale": self.alibi_slope_scale,
            }
        )
        return config
