"""AlbertPretrainer: the encoder with its MLM and SOP heads."""

import keras

from albert_keras.heads.masked_lm_head import MaskedLMHead
from albert_keras.heads.sentence_order_head import SentenceOrderHead
from albert_keras.models.albert_encoder import AlbertEncoder

ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="albert_keras")
class AlbertPretrainer(keras.Model):
    """ALBERT with the masked-LM and sentence-order heads.

    Inputs: the encoder's three plus ``masked_positions`` ``[B, P]`` (int32).
    Outputs (dict): ``mlm_logits`` ``[B, P, V]`` (decoder tied to the word
    embeddings, plus an output bias) and ``sop_logits`` ``[B, 2]``, both
    float32.

    Args:
        encoder: an ``AlbertEncoder``.
        sop_dropout: dropout before the SOP classifier.
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> pretrainer = AlbertPretrainer(AlbertEncoder(get_preset("albert_tiny")))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> out = pretrainer({"token_ids": ids, "segment_ids": 0 * ids,
    ...                   "padding_mask": ids,
    ...                   "masked_positions": keras.ops.ones((1, 2), "int32")})
    >>> tuple(out["mlm_logits"].shape)
    (1, 2, 30000)
    """

    def __init__(self, encoder, sop_dropout=0.1, dtype=None, **kwargs):
        if isinstance(encoder, dict):
            encoder = keras.saving.deserialize_keras_object(encoder)
        dtype = dtype if dtype is not None else encoder.dtype_policy
        config = encoder.config

        # -- layers ------------------------------------------------------------
        mlm_head = MaskedLMHead(
            encoder.token_embedding,
            activation=config.hidden_act,
            layer_norm_eps=config.layer_norm_eps,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="mlm_head",
        )
        sop_head = SentenceOrderHead(
            dropout=sop_dropout,
            initializer_range=config.initializer_range,
            dtype=dtype,
            name="sop_head",
        )

        # -- functional graph ----------------------------------------------------
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ENCODER_INPUTS + ("masked_positions",)
        }
        encoded = encoder({name: inputs[name] for name in ENCODER_INPUTS})
        outputs = {
            "mlm_logits": mlm_head(
                encoded["sequence_output"], inputs["masked_positions"]
            ),
            "sop_logits": sop_head(encoded["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # -- attributes ----------------------------------------------------------
        self.encoder = encoder
        self.mlm_head = mlm_head
        self.sop_head = sop_head
        self.sop_dropout = sop_dropout

    @property
    def config(self):
        return self.encoder.config

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            "sop_dropout": self.sop_dropout,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
