"""Dense layers with fake quantization, for quantization-aware training.

tfmot's ``quantize_model`` refuses Keras 3 models (it works on tf_keras only), so QAT
is built into our own layers: with ``quantize_aware=True`` every dense
projection fake-quantizes its input and output (8-bit, ranges tracked by
an exponential moving average during training, as tfmot's
``MovingAverageQuantizer``) and its kernel (8-bit symmetric, per tensor,
from the kernel's current range: as tfmot's default scheme for Dense; a
per-channel kernel range makes the converter fail on the transposed
kernel with "mismatched quantized axes"). The ops are
``tf.quantization.fake_quant_*`` (through ``keras.quantizers``), which the
TFLite converter turns into int8 kernels with exactly these ranges.
"""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_keras")
class QuantizedDense(keras.layers.Dense):
    """``Dense`` with 8-bit fake quantization of input, kernel and output.

    Training updates the activation ranges (moving average of the batch
    min and max, initialized from the first batch); inference uses them.
    The variable paths of ``kernel`` and ``bias`` are those of a ``Dense``
    of the same name, so float weights copy over by path.

    Args:
        units: output width.
        ema_decay: moving-average decay of the activation ranges.
        **kwargs: as ``keras.layers.Dense``.

    Example:
    >>> layer = QuantizedDense(4)
    >>> tuple(layer(keras.ops.ones((2, 3))).shape)
    (2, 4)
    """

    def __init__(self, units, ema_decay=0.99, **kwargs):
        super().__init__(units, **kwargs)
        self.ema_decay = float(ema_decay)

    def build(self, input_shape):
        super().build(input_shape)

        def range_variable(name):
            return self.add_weight(name=name, shape=(2,), initializer="zeros",
                                   trainable=False, dtype="float32")

        self.input_range = range_variable("input_range")
        self.output_range = range_variable("output_range")
        self.ranges_seen = self.add_weight(name="ranges_seen", shape=(), initializer="zeros",
                                           trainable=False, dtype="float32")

    # Keras' Dense saves only the variables of its own quantization modes
    # (kernel and bias here), so a saved QuantizedDense would not load back;
    # the base Layer's form saves every variable in order.
    def save_own_variables(self, store):
        keras.layers.Layer.save_own_variables(self, store)

    def load_own_variables(self, store):
        keras.layers.Layer.load_own_variables(self, store)

    def _observe(self, x, variable, training):
        if training:
            x32 = ops.cast(x, "float32")
            batch = ops.stack([ops.minimum(ops.min(x32), 0.0), ops.maximum(ops.max(x32), 0.0)])
            first = ops.equal(self.ranges_seen, 0.0)
            updated = ops.where(first, batch,
                                self.ema_decay * variable + (1.0 - self.ema_decay) * batch)
            variable.assign(updated)
        return keras.quantizers.fake_quant_with_min_max_vars(
            x, variable[0], variable[1], num_bits=8)

    def call(self, inputs, training=None):
        x = self._observe(inputs, self.input_range, training)
        kernel = ops.cast(self.kernel, "float32")
        limit = ops.maximum(ops.max(ops.abs(kernel)), 1e-8)
        kernel = keras.quantizers.fake_quant_with_min_max_vars(
            kernel, -limit, limit, num_bits=8, narrow_range=True)
        y = ops.matmul(x, ops.cast(kernel, x.dtype))
        if self.use_bias:
            y = y + self.bias
        y = self._observe(y, self.output_range, training)
        if training:
            self.ranges_seen.assign(1.0)
        if self.activation is not None:
            y = self.activation(y)
        return y

    def get_config(self):
        config = super().get_config()
        config["ema_decay"] = self.ema_decay
        return config


def make_dense(units, quantize_aware=False, **kwargs):
    """A ``Dense``, or a ``QuantizedDense`` for quantization-aware training."""
    if quantize_aware:
        return QuantizedDense(units, **kwargs)
    return keras.layers.Dense(units, **kwargs)
