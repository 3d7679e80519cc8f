"""MobileBERT's NoNorm and the choice between it and LayerNorm."""

import keras


@keras.saving.register_keras_serializable(package="albert_keras")
class NoNorm(keras.layers.Layer):
    """``x * gamma + beta``: MobileBERT's replacement for LayerNorm (no
    statistics, so it folds into the next matmul on a phone; the TF1
    checkpoints call it ``FakeLayerNorm``).

    Args:
        (Keras layer arguments only.)

    Example:
    >>> tuple(NoNorm()(keras.ops.ones((2, 3, 8))).shape)
    (2, 3, 8)
    """

    def build(self, shape):
        width = shape[-1]
        self.gamma = self.add_weight(name="gamma", shape=(width,), initializer="ones")
        self.beta = self.add_weight(name="beta", shape=(width,), initializer="zeros")
        self.built = True

    def call(self, x):
        return x * keras.ops.cast(self.gamma, x.dtype) + keras.ops.cast(self.beta, x.dtype)

    def compute_output_shape(self, shape):
        return shape


def make_norm(kind, epsilon, dtype, name):
    """``NoNorm`` for ``no_norm``, else a LayerNorm with ``epsilon``."""
    if kind == "no_norm":
        return NoNorm(dtype=dtype, name=name)
    return keras.layers.LayerNormalization(epsilon=epsilon, dtype=dtype, name=name)
