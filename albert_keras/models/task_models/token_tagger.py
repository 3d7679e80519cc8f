"""TokenTagger: one label per token (NER, POS, chunking)."""

import keras

from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models import output_divergence
from albert_keras.models.task_models.task_model import ENCODER_INPUTS
from albert_keras.models.task_models.task_model import TaskModel
from albert_keras.models.task_models.task_model import head_dense


@keras.saving.register_keras_serializable(package="albert_keras")
class TokenTagger(TaskModel):
    """Every position of ``sequence_output`` -> dropout -> dense.

    Words are labelled on their first piece; ``albert_keras.tasks.tag.tag_task``
    builds that alignment and decodes BIO tags back to word spans.

    Inputs: the encoder's three. Output: ``logits`` ``[B, S, num_classes]``
    in float32.

    Args:
        encoder: an ``AlbertEncoder``.
        num_classes: number of tags.
        dropout: dropout on the sequence output.
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> model = TokenTagger(AlbertEncoder(get_preset("bert_tiny")), 5)
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["logits"].shape)
    (2, 8, 5)
    """

    # TaskModel's export declaration
    export_kind = ExportKind("tagger", outputs=("logits",),
                             measures={"logits": "token_classes"},
                             pipeline_tag="token-classification", hf_outputs={"logits": "logits"})
    hf_task = "TokenClassification"
    head_layers = {"classifier": "tagger"}

    @staticmethod
    def divergence(outputs, target, padding_mask, kl):
        """Adversarial fine-tuning's term: ``kl`` over the real tokens."""
        return output_divergence.per_token(outputs["logits"], target["logits"], padding_mask,
                                           kl)

    @classmethod
    def from_hf_head(cls, encoder, outputs, dropout, dtype=None):
        """The model of an HF ``...ForTokenClassification`` head of
        ``outputs`` classes (its tensors are loaded by the caller)."""
        return cls(encoder, outputs, dropout=dropout, dtype=dtype)

    def __init__(self, encoder, num_classes, dropout=0.1, dtype=None, **kwargs):
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        inputs = self._encoder_inputs()
        sequence = encoder({n: inputs[n] for n in ENCODER_INPUTS})["sequence_output"]
        sequence = encoder.token_rows(sequence)
        x = keras.layers.Dropout(dropout, dtype=dtype, name="tagger_dropout")(sequence)
        logits = head_dense(encoder, num_classes, dtype, "tagger")(x)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        self.dtype_policy = dtype
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)

    def get_config(self):
        return {
            **self._base_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
        }
