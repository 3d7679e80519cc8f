"""The replaced-token-detection head (ELECTRA's discriminator head)."""

import keras
from keras import ops

from albert_keras.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="albert_keras")
class ReplacedTokenHead(keras.layers.Layer):
    """Dense H -> H, the activation, dense H -> 1, on every token.

    A positive logit says "this token was replaced". The layout is ELECTRA's
    ``discriminator_predictions`` (``dense``, then ``dense_prediction``), so
    its weights load as they are. Logits are float32 under mixed precision.

    Args:
        hidden_size: H.
        activation: the hidden activation (ELECTRA: the encoder's).
        initializer_range: stddev of the truncated-normal initializer.

    Example:
    >>> head = ReplacedTokenHead(32)
    >>> tuple(head(keras.ops.ones((2, 7, 32))).shape)
    (2, 7)
    """

    def __init__(self, hidden_size, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.activation = activation
        self.initializer_range = initializer_range
        initializer = keras.initializers.TruncatedNormal(stddev=initializer_range)
        self.dense = keras.layers.Dense(hidden_size, kernel_initializer=initializer,
                                        dtype=self.dtype_policy, name="dense")
        self.output_dense = keras.layers.Dense(1, kernel_initializer=initializer,
                                               dtype=self.dtype_policy, name="output")
        self._activation = get_activation(activation)

    def build(self, sequence_shape):
        self.dense.build(sequence_shape)
        self.output_dense.build(tuple(sequence_shape[:-1]) + (self.hidden_size,))
        self.built = True

    def call(self, sequence_output):
        x = self._activation(self.dense(sequence_output))
        return ops.cast(ops.squeeze(self.output_dense(x), -1), "float32")

    def compute_output_shape(self, sequence_shape):
        return tuple(sequence_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update({"hidden_size": self.hidden_size, "activation": self.activation,
                       "initializer_range": self.initializer_range})
        return config
