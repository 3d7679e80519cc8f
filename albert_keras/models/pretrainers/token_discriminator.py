"""TokenDiscriminator: the encoder with a replaced-token-detection head."""

import keras

from albert_keras.heads.replaced_token_head import ReplacedTokenHead
from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models.task_model import TaskModel


@keras.saving.register_keras_serializable(package="albert_keras")
class TokenDiscriminator(TaskModel):
    """ELECTRA's discriminator on our encoder: for every token, was it replaced?

    Inputs: the encoder's three. Output (dict): ``rtd_logits`` ``[B, S]``
    float32 (positive: replaced). HF ``ElectraForPreTraining`` folders
    import into it and it exports back to one.

    Args:
        encoder: an ``AlbertEncoder``.
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> model = TokenDiscriminator(AlbertEncoder(get_preset("albert_tiny")))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> tuple(model({"token_ids": ids, "segment_ids": 0 * ids,
    ...              "padding_mask": ids})["rtd_logits"].shape)
    (1, 16)
    """

    # TaskModel's export declaration (no ONNX form: its one logit per token
    # is not what the ONNX validation's top-label agreement reads)
    export_kind = ExportKind("discriminator", outputs=("rtd_logits",),
                             measures={"rtd_logits": "binary"},
                             pipeline_tag="token-classification")

    def __init__(self, encoder, dtype=None, **kwargs):
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        config = encoder.config
        rtd_head = ReplacedTokenHead(config.hidden_size, activation=config.hidden_act,
                                     initializer_range=config.initializer_range,
                                     dtype=dtype, name="rtd_head")
        inputs = self._encoder_inputs()
        encoded = encoder(inputs)
        outputs = {"rtd_logits": rtd_head(encoded["sequence_output"])}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = dtype
        self.encoder = encoder
        self.rtd_head = rtd_head

    def get_config(self):
        return self._base_config()
