"""RotaryAttention: ModernBERT's self-attention, full or in a sliding window."""

import math

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense


def rotary_tables(length, head_size, theta):
    """``(cos, sin)``, each ``[length, head_size]`` float32: the rotation of
    each position, its frequencies ``theta ** (-2i / head_size)`` repeated
    for both halves of a head (the layout HF's ``rotate_half`` reads).

    Example:
    >>> cos, sin = rotary_tables(4, 8, 10000.0)
    >>> tuple(cos.shape), float(cos[0, 0]), float(sin[0, 0])
    ((4, 8), 1.0, 0.0)
    """
    inverse = 1.0 / (theta ** (ops.arange(0, head_size, 2, dtype="float32") / head_size))
    angles = ops.arange(length, dtype="float32")[:, None] * inverse[None, :]
    angles = ops.concatenate([angles, angles], axis=-1)
    return ops.cos(angles), ops.sin(angles)


def rotate(x, cos, sin):
    """``x`` ``[B, S, N, D]`` rotated by the tables (``[S, D]``) in float32."""
    # a split, not two slices: TFLite runs a STRIDED_SLICE of a 4-D tensor
    # with its reference kernel (0.1-0.2 ms each), a SPLIT in XNNPACK
    first, second = ops.split(x, 2, axis=-1)
    turned = ops.concatenate([-second, first], axis=-1)
    return x * cos[None, :, None, :] + turned * sin[None, :, None, :]


@keras.saving.register_keras_serializable(package="albert_keras")
class RotaryAttention(keras.layers.Layer):
    """Multi-head self-attention with rotary positions, as ModernBERT's.

    One projection ``Wqkv`` gives queries, keys and values; queries and keys
    are rotated by their positions (base ``rope_theta``); scores are scaled
    by ``1 / sqrt(head size)``; padded keys, and with ``window`` the keys
    more than ``window`` positions away, get ``mask_value`` added; ``Wo``
    projects the heads back.

    Args:
        hidden_size: H.
        num_heads: heads.
        window: how far a query sees each way (None: every key).
        rope_theta: the rotary base.
        use_bias: biases on both projections.
        dropout: on the attention probabilities and the output.
        mask_value: the additive bias at a key a query may not see.
        initializer_range: the projections' initial standard deviation.
        quantize_aware: fake-quantize both projections (QAT).

    Example:
    >>> layer = RotaryAttention(32, 4, window=2)
    >>> x, mask = keras.ops.ones((2, 8, 32)), keras.ops.ones((2, 8), "int32")
    >>> tuple(layer(x, mask).shape)
    (2, 8, 32)
    """

    def __init__(self, hidden_size, num_heads, window=None, rope_theta=10000.0,  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
                 use_bias=False, dropout=0.0, mask_value=-10000.0, initializer_range=0.02,
                 quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size, self.num_heads = int(hidden_size), int(num_heads)
        self.window = None if window is None else int(window)
        self.rope_theta, self.use_bias = float(rope_theta), bool(use_bias)
        self.dropout, self.mask_value = float(dropout), float(mask_value)
        self.initializer_range = float(initializer_range)
        self.quantize_aware = bool(quantize_aware)
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.qkv = make_dense(3 * hidden_size, self.quantize_aware, use_bias=use_bias,
                              kernel_initializer=init, dtype=self.dtype_policy, name="Wqkv")
        self.output_dense = make_dense(hidden_size, self.quantize_aware, use_bias=use_bias,
                                       kernel_initializer=init, dtype=self.dtype_policy,
                                       name="Wo")
        self.drop = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, shape):
        self.qkv.build((None, self.hidden_size))
        self.output_dense.build((None, self.hidden_size))
        self.built = True

    def call(self, x, padding_mask, training=False, return_attention=False, layer_shape=None):  # noqa: PLR0913 (Keras' call keywords)
        """``layer_shape``: ``(window, rope_theta)`` of the layer this call
        computes, where one layer's weights serve several (a shared block);
        None: the layer's own."""
        window, theta = (self.window, self.rope_theta) if layer_shape is None else layer_shape
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        size = self.hidden_size // self.num_heads
        # Wqkv's output is [3, heads, head size] per row (HF's view): split
        # along it rather than slicing a [B, S, 3, N, D] view, whose strided
        # slices took 54% of a dynamic-int8 Ettin-32M .tflite's time
        # (projected as one [B*S, H] matrix, as the GeGLU's: no tensordot)
        rows = self.qkv(ops.reshape(x, (-1, self.hidden_size)))
        query, key, value = (ops.reshape(part, (batch, length, self.num_heads, size))
                             for part in ops.split(rows, 3, axis=-1))
        cos, sin = rotary_tables(length, size, theta)
        query = rotate(ops.cast(query, "float32"), cos, sin)
        key = rotate(ops.cast(key, "float32"), cos, sin)
        scores = ops.einsum("bqnd,bknd->bnqk", ops.cast(query, self.compute_dtype),
                            ops.cast(key, self.compute_dtype)) / math.sqrt(size)
        scores = ops.cast(scores, "float32") + self._bias(padding_mask, length, window)
        probs = ops.softmax(scores, axis=-1)
        heads = ops.einsum("bnqk,bknd->bqnd",
                           ops.cast(self.drop(probs, training=training), self.compute_dtype),
                           value)
        out = self.output_dense(ops.reshape(heads, (-1, self.hidden_size)))
        out = self.drop(ops.reshape(out, (batch, length, self.hidden_size)), training=training)
        return (out, probs) if return_attention else out

    def _bias(self, padding_mask, length, window):
        """``[B, 1, S, S]`` float32: ``mask_value`` where a query may not look."""
        seen = ops.cast(padding_mask, "float32")[:, None, None, :]
        bias = (1.0 - seen) * self.mask_value
        if window is None:
            return bias
        positions = ops.arange(length)
        apart = ops.abs(positions[:, None] - positions[None, :])
        return bias + ops.where(apart <= window, 0.0, self.mask_value)[None, None]

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "num_heads": self.num_heads, "window": self.window,
                "rope_theta": self.rope_theta, "use_bias": self.use_bias,
                "dropout": self.dropout, "mask_value": self.mask_value,
                "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware}
