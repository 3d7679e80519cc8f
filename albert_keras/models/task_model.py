"""What every model on an encoder shares (the task models and the
pretrainer): the encoder, its inputs, its config."""

import keras

from albert_keras.layers.quantized_dense import make_dense
from albert_keras.models.albert_encoder import AlbertEncoder

ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def head_dense(encoder, units, dtype, name):
    """A new head's dense layer: the original's truncated-normal initializer,
    and fake quantization when the encoder is quantization-aware."""
    return make_dense(
        units,
        quantize_aware=encoder.quantize_aware,
        kernel_initializer=keras.initializers.TruncatedNormal(
            stddev=encoder.config.initializer_range
        ),
        dtype=dtype,
        name=name,
    )


class TaskModel(keras.Model):
    """Base of the models with heads: a functional model around ``encoder``.

    Subclasses build their graph, call ``super().__init__(inputs, outputs)``,
    set ``self.encoder`` and add their own arguments to ``get_config``.
    """

    @staticmethod
    def _encoder_and_dtype(encoder, dtype):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        if not isinstance(encoder, AlbertEncoder):
            raise TypeError(f"encoder must be an AlbertEncoder, got {type(encoder).__name__}")
        return encoder, (dtype if dtype is not None else encoder.dtype_policy)

    @staticmethod
    def _encoder_inputs(shape=(None,)):
        return {
            name: keras.Input(shape=shape, dtype="int32", name=name)
            for name in ENCODER_INPUTS
        }

    @property
    def config(self):
        """The encoder's ``AlbertConfig``."""
        return self.encoder.config

    def _base_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
