"""The additive attention bias built from a padding mask."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_keras")
class AttentionMaskBias(keras.layers.Layer):
    """Turns a ``[B, S]`` padding mask into a ``[B, 1, 1, S]`` additive bias.

    ``bias = (1 - mask) * mask_value``, as the original code with
    ``mask_value=-10000``. Built inside a layer because Keras 3.15 turns
    ``ops.multiply(tensor, python_float)`` in the functional API into a sparse
    tensor (DESIGN trap 6). A bounded value such as ``-120`` keeps full-int8
    exports accurate (DESIGN trap 9) and changes nothing in float: exp(-120)
    is below float32 resolution next to the unmasked scores.

    Args:
        mask_value: the bias added at padded key positions.

    Example:
    >>> bias = AttentionMaskBias()(keras.ops.ones((2, 8), "int32"))
    >>> tuple(bias.shape)
    (2, 1, 1, 8)
    """

    def __init__(self, mask_value=-10000.0, **kwargs):
        super().__init__(**kwargs)
        self.mask_value = float(mask_value)

    def call(self, padding_mask):
        mask = ops.cast(padding_mask, "float32")
        bias = (1.0 - mask) * self.mask_value
        return bias[:, None, None, :]

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 1, 1, input_shape[1])

    def compute_output_spec(self, padding_mask):
        return keras.KerasTensor(
            self.compute_output_shape(padding_mask.shape), dtype="float32"
        )

    def get_config(self):
        config = super().get_config()
        config.update({"mask_value": self.mask_value})
        return config
