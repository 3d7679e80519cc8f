"""One MobileBERT block: bottlenecks, attention and stacked FFNs."""

import math

import keras
from keras import ops

from albert_keras.layers.activations import get_activation
from albert_keras.layers.quantized_dense import make_dense
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.models.mobilebert.no_norm import make_norm
from albert_keras.models.mobilebert.trigram_embedding import TORCH_LAYER_NORM_EPS


def _config(config):
    return MobileBertConfig.from_dict(config) if isinstance(config, dict) else config


class _Ffn(keras.layers.Layer):
    """``norm(x + W2 act(W1 x))``: one of a block's stacked FFNs."""

    def __init__(self, config, output_eps, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        config = _config(config)
        self.config, self.output_eps = config, output_eps
        self.quantize_aware = bool(quantize_aware)
        init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
        dtype = self.dtype_policy
        self.width = config.true_hidden_size
        self.intermediate = make_dense(
            config.intermediate_size, quantize_aware, activation=get_activation(config.hidden_act),
            kernel_initializer=init, dtype=dtype, name="intermediate")
        self.output_dense = make_dense(self.width, quantize_aware, kernel_initializer=init,
                                       dtype=dtype, name="output")
        self.norm = make_norm(config.normalization_type, output_eps, dtype, "norm")

    def build(self, shape):
        self.intermediate.build((None, None, self.width))
        self.output_dense.build((None, None, self.intermediate.units))
        self.norm.build((None, None, self.width))
        self.built = True

    def call(self, x, dropout=None, training=False):
        y = self.output_dense(self.intermediate(x))
        if dropout is not None:
            y = dropout(y, training=training)
        return self.norm(y + x)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "output_eps": self.output_eps, "quantize_aware": self.quantize_aware}


class _Bottleneck(keras.layers.Layer):
    """``norm(W x)``: the block input narrowed to the bottleneck width."""

    def __init__(self, config, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        config = self.config = _config(config)
        self.quantize_aware = bool(quantize_aware)
        init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
        self.hidden_size = config.hidden_size
        self.dense = make_dense(config.intra_bottleneck_size, quantize_aware,
                                kernel_initializer=init, dtype=self.dtype_policy, name="dense")
        self.norm = make_norm(config.normalization_type, config.layer_norm_eps,
                              self.dtype_policy, "norm")

    def build(self, shape):
        self.dense.build((None, None, self.hidden_size))
        self.norm.build((None, None, self.dense.units))
        self.built = True

    def call(self, x):
        return self.norm(self.dense(x))

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "quantize_aware": self.quantize_aware}


@keras.saving.register_keras_serializable(package="albert_keras")
class MobileBertBlock(keras.layers.Layer):
    """A MobileBERT layer, as transformers' ``MobileBertLayer`` computes it.

    ``x (H) -> bottleneck (B) -> attention over B-wide heads (queries and
    keys from the shared bottleneck, values from x; or all from the input
    bottleneck) -> norm(+ bottleneck input) -> num_feedforward_networks - 1
    FFNs -> the output FFN -> dense back to H -> norm(+ x)``.

    Args:
        config: a ``MobileBertConfig`` (or its dict).
        mask_value: the additive attention bias at padded keys.
        quantize_aware: every dense layer fake-quantizes its input, kernel
            and output (``QuantizedDense``), for quantization-aware training.

    Example:
    >>> from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
    >>> block = MobileBertBlock(MobileBertConfig(hidden_size=32, intra_bottleneck_size=16,
    ...     num_attention_heads=2, intermediate_size=16, embedding_size=8))
    >>> x = keras.ops.ones((2, 5, 32))
    >>> tuple(block(x, keras.ops.ones((2, 5), "int32")).shape)
    (2, 5, 32)
    """

    def __init__(self, config, mask_value=-10000.0, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        config = _config(config)
        self.config, self.mask_value = config, float(mask_value)
        self.quantize_aware = bool(quantize_aware)
        self._make_attention(config)
        # HF builds the output FFN's norm without its config's eps (torch's default)
        self.ffns = [_Ffn(config, config.layer_norm_eps, quantize_aware, dtype=self.dtype_policy,
                          name=f"ffn_{k}") for k in range(config.num_feedforward_networks - 1)]
        self.output_ffn = _Ffn(config, TORCH_LAYER_NORM_EPS, quantize_aware,
                               dtype=self.dtype_policy, name="output_ffn")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob, dtype=self.dtype_policy)
        self.attention_dropout = keras.layers.Dropout(config.attention_probs_dropout_prob,
                                                      dtype=self.dtype_policy)
        self.output_bottleneck = None
        if config.use_bottleneck:
            self.output_bottleneck = make_dense(
                config.hidden_size, quantize_aware, kernel_initializer=self._init(),
                dtype=self.dtype_policy, name="output_bottleneck")
            self.output_norm = make_norm(config.normalization_type, config.layer_norm_eps,
                                         self.dtype_policy, "output_norm")

    def _init(self):
        return keras.initializers.TruncatedNormal(stddev=self.config.initializer_range)

    def _make_attention(self, config):
        dtype, width, quantized = self.dtype_policy, config.true_hidden_size, self.quantize_aware
        self.input_bottleneck = self.shared_bottleneck = None
        if config.use_bottleneck:
            self.input_bottleneck = _Bottleneck(config, quantized, dtype=dtype,
                                                name="input_bottleneck")
            if config.key_query_shared_bottleneck:  # built as HF builds it, used unless
                self.shared_bottleneck = _Bottleneck(config, quantized, dtype=dtype,  # bottleneck
                                                     name="shared_bottleneck")  # attention
        self.query, self.key, self.value, self.attention_output = (
            make_dense(width, quantized, kernel_initializer=self._init(), dtype=dtype, name=name)
            for name in ("query", "key", "value", "attention_output"))
        self.attention_norm = make_norm(config.normalization_type, config.layer_norm_eps,
                                        dtype, "attention_norm")

    def build(self, shape):
        c = self.config
        width = c.true_hidden_size
        for part in (self.input_bottleneck, self.shared_bottleneck):
            if part is not None:
                part.build(shape)
        value_width = width if c.use_bottleneck_attention or not c.use_bottleneck else (
            c.hidden_size)
        qk_width = width if (c.use_bottleneck_attention or c.key_query_shared_bottleneck
                             or not c.use_bottleneck) else c.hidden_size
        self.query.build((None, None, qk_width))
        self.key.build((None, None, qk_width))
        self.value.build((None, None, value_width))
        self.attention_output.build((None, None, width))
        self.attention_norm.build((None, None, width))
        for ffn in (*self.ffns, self.output_ffn):
            ffn.build(shape)
        if self.output_bottleneck is not None:
            self.output_bottleneck.build((None, None, width))
            self.output_norm.build((None, None, c.hidden_size))
        self.built = True

    def _attention_inputs(self, x):
        """``(query/key input, value input, the residual)`` as HF's ``Bottleneck``."""
        c = self.config
        if not c.use_bottleneck:
            return x, x, x
        narrow = self.input_bottleneck(x)
        if c.use_bottleneck_attention:
            return narrow, narrow, narrow
        if c.key_query_shared_bottleneck:
            return self.shared_bottleneck(x), x, narrow
        return x, x, narrow

    def _attend(self, qk, v, padding_mask, training):
        """Multi-head attention ``[B, S, B]`` and its probabilities (float32)."""
        heads = self.config.num_attention_heads
        size = self.config.true_hidden_size // heads

        def split(t):
            batch, length = ops.shape(t)[0], ops.shape(t)[1]
            return ops.transpose(ops.reshape(t, (batch, length, heads, size)), (0, 2, 1, 3))

        q, k, values = split(self.query(qk)), split(self.key(qk)), split(self.value(v))
        scores = ops.cast(ops.matmul(q, ops.transpose(k, (0, 1, 3, 2))), "float32")
        scores = scores / math.sqrt(size)
        bias = (1.0 - ops.cast(padding_mask, "float32")) * self.mask_value
        probs = ops.softmax(scores + bias[:, None, None, :], axis=-1)
        weights = self.attention_dropout(ops.cast(probs, values.dtype), training=training)
        out = ops.transpose(ops.matmul(weights, values), (0, 2, 1, 3))
        batch, length = ops.shape(out)[0], ops.shape(out)[1]
        return ops.reshape(out, (batch, length, heads * size)), probs

    def call(self, x, padding_mask, training=False, return_attention=False):
        qk, v, residual = self._attention_inputs(x)
        attended, probs = self._attend(qk, v, padding_mask, training)
        y = self.attention_output(attended)
        if not self.config.use_bottleneck:
            y = self.dropout(y, training=training)
        y = self.attention_norm(y + residual)
        for ffn in self.ffns:
            y = ffn(y)
        plain = None if self.config.use_bottleneck else self.dropout
        y = self.output_ffn(y, dropout=plain, training=training)
        if self.output_bottleneck is not None:
            widened = self.dropout(self.output_bottleneck(y), training=training)
            y = self.output_norm(widened + x)
        return (y, probs) if return_attention else y

    def compute_output_shape(self, x_shape, padding_mask_shape=None):
        return x_shape

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "mask_value": self.mask_value, "quantize_aware": self.quantize_aware}
