"""ModernBERT's pre-norm block and its GeGLU feed-forward."""

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig
from albert_keras.models.modernbert.rotary_attention import RotaryAttention

# HF's activation names: ``gelu`` is the exact form, the others the tanh one
_ACTIVATIONS = {"gelu": lambda x: keras.activations.gelu(x, approximate=False),
                "gelu_new": lambda x: keras.activations.gelu(x, approximate=True),
                "gelu_pytorch_tanh": lambda x: keras.activations.gelu(x, approximate=True),
                "relu": keras.activations.relu, "silu": keras.activations.silu}


def activation(name):
    """The activation HF's ``ACT2FN[name]`` computes."""
    return _ACTIVATIONS[name]


def layer_norm(config, name, dtype=None):
    """A LayerNorm as ModernBERT's (``norm_eps``; a bias only with ``norm_bias``)."""
    return keras.layers.LayerNormalization(epsilon=config.norm_eps, center=config.norm_bias,
                                           dtype=dtype, name=name)


@keras.saving.register_keras_serializable(package="albert_keras")
class GegluFeedForward(keras.layers.Layer):
    """``Wo(dropout(act(a) * g))`` where ``[a, g] = Wi(x)`` (GeGLU).

    Args:
        hidden_size: H.
        intermediate_size: I (``Wi`` gives 2I: the value and the gate).
        activation_name: HF's name of the activation.
        use_bias: biases on ``Wi`` and ``Wo``.
        dropout: after the gated product.
        initializer_range: the initial standard deviation.
        quantize_aware: fake-quantize ``Wi`` and ``Wo`` (QAT).

    Example:
    >>> tuple(GegluFeedForward(16, 24)(keras.ops.ones((2, 3, 16))).shape)
    (2, 3, 16)
    """

    def __init__(self, hidden_size, intermediate_size, activation_name="gelu",  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
                 use_bias=False, dropout=0.0, initializer_range=0.02, quantize_aware=False,
                 **kwargs):
        super().__init__(**kwargs)
        self.hidden_size, self.intermediate_size = int(hidden_size), int(intermediate_size)
        self.activation_name, self.use_bias = activation_name, bool(use_bias)
        self.dropout, self.initializer_range = float(dropout), float(initializer_range)
        self.quantize_aware = bool(quantize_aware)
        init = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.wi = make_dense(2 * intermediate_size, self.quantize_aware, use_bias=use_bias,
                             kernel_initializer=init, dtype=self.dtype_policy, name="Wi")
        self.wo = make_dense(hidden_size, self.quantize_aware, use_bias=use_bias,
                             kernel_initializer=init, dtype=self.dtype_policy, name="Wo")
        self.drop = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, shape):
        self.wi.build((None, self.hidden_size))
        self.wo.build((None, self.intermediate_size))
        self.built = True

    def call(self, x, training=False):
        # One [B*S, H] matrix: Keras' Dense on a 3-D input goes through
        # tensordot on TensorFlow, whose shape ops (two GATHERs, two
        # REDUCE_PRODs and two RESHAPEs a projection) a .tflite with an open
        # length runs outside XNNPACK and recomputes at every new length
        rows = ops.reshape(x, (-1, self.hidden_size))
        value, gate = ops.split(self.wi(rows), 2, axis=-1)
        gated = activation(self.activation_name)(value) * gate
        return ops.reshape(self.wo(self.drop(gated, training=training)), ops.shape(x))

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "intermediate_size": self.intermediate_size,
                "activation_name": self.activation_name, "use_bias": self.use_bias,
                "dropout": self.dropout, "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware}


@keras.saving.register_keras_serializable(package="albert_keras")
class ModernBertBlock(keras.layers.Layer):
    """``x + attn(norm(x))``, then ``+ mlp(norm(.))``; layer 0 reads the
    embeddings' own norm (no attention norm), as ModernBERT's first block.

    Args:
        config: a ``ModernBertConfig`` (or its dict).
        layer: this block's index (its attention kind and rotary base).
        mask_value: the additive bias at keys a query may not see.
        quantize_aware: fake-quantize the dense projections (QAT).

    Example:
    >>> block = ModernBertBlock(ModernBertConfig(hidden_size=32, num_attention_heads=4,
    ...                                          intermediate_size=48, num_hidden_layers=2), 1)
    >>> tuple(block(keras.ops.ones((1, 8, 32)), keras.ops.ones((1, 8), "int32")).shape)
    (1, 8, 32)
    """

    def __init__(self, config, layer, mask_value=-10000.0, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        config = ModernBertConfig.of(config)
        self.config, self.layer, self.mask_value = config, int(layer), float(mask_value)
        self.quantize_aware = bool(quantize_aware)
        dtype = self.dtype_policy
        self.attention_norm = None if layer == 0 else layer_norm(config, "attn_norm", dtype)
        self.attention = RotaryAttention(
            config.hidden_size, config.num_attention_heads, config.window(layer),
            config.rope_theta(layer), config.attention_bias, config.attention_dropout,
            mask_value, config.initializer_range, self.quantize_aware, dtype=dtype, name="attn")
        self.mlp_norm = layer_norm(config, "mlp_norm", dtype)
        self.mlp = GegluFeedForward(config.hidden_size, config.intermediate_size,
                                    config.hidden_activation, config.mlp_bias,
                                    config.mlp_dropout, config.initializer_range,
                                    self.quantize_aware, dtype=dtype, name="mlp")

    def build(self, shape):
        for norm in (self.attention_norm, self.mlp_norm):
            if norm is not None:
                norm.build(shape)
        self.attention.build(shape)
        self.mlp.build(shape)
        self.built = True

    def call(self, x, padding_mask, training=False, return_attention=False, layer=None):  # noqa: PLR0913 (Keras' call keywords)
        """``layer``: the index of the layer this call computes, where the
        block's weights serve every layer (``share_layers``): its window,
        rotary base and, at 0, no attention norm. None: the block's own."""
        layer = self.layer if layer is None else int(layer)
        read = x if layer == 0 or self.attention_norm is None else self.attention_norm(x)
        attended = self.attention(read, padding_mask, training=training,
                                  return_attention=return_attention,
                                  layer_shape=(self.config.window(layer),
                                               self.config.rope_theta(layer)))
        if return_attention:
            attended, probs = attended
        x = x + attended
        x = x + self.mlp(self.mlp_norm(x), training=training)
        return (x, probs) if return_attention else x

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(), "layer": self.layer,
                "mask_value": self.mask_value, "quantize_aware": self.quantize_aware}
