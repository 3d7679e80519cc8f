"""MaskedMeanPooling: the mean of a sequence over its real tokens."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_keras")
class MaskedMeanPooling(keras.layers.Layer):
    """``[B, S, H]`` -> ``[B, H]``: the mean over positions whose mask is 1.

    Keras' ``GlobalAveragePooling1D`` takes a boolean mask too, but only
    through Keras masking, which our integer ``padding_mask`` input does not
    carry; this layer takes the mask as an argument. The sum is taken in
    float32 so that a long bfloat16 sequence does not lose its small terms.

    Args:
        **kwargs: ``name``, ``dtype``.

    Example:
    >>> x = keras.ops.ones((2, 5, 8))
    >>> mask = keras.ops.convert_to_tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    >>> tuple(MaskedMeanPooling()(x, mask).shape)
    (2, 8)
    """

    def call(self, sequence, padding_mask):
        mask = ops.cast(padding_mask, "float32")[:, :, None]
        total = ops.sum(ops.cast(sequence, "float32") * mask, axis=1)
        # an all-padding row gives zeros, not NaN
        mean = total / ops.maximum(ops.sum(mask, axis=1), 1.0)
        return ops.cast(mean, self.compute_dtype)

    def compute_output_shape(self, sequence_shape, padding_mask_shape=None):
        return (sequence_shape[0], sequence_shape[-1])
