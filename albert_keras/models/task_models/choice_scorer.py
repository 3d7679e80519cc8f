"""ChoiceScorer: one score per candidate (RACE, SWAG)."""

import keras
from keras import ops

from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models import output_divergence
from albert_keras.models.task_models.task_model import ENCODER_INPUTS
from albert_keras.models.task_models.task_model import TaskModel
from albert_keras.models.task_models.task_model import head_dense


@keras.saving.register_keras_serializable(package="albert_keras")
class FoldChoices(keras.layers.Layer):
    """``[B, C, S]`` -> ``[B * C, S]`` so the encoder sees one pair per row."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_shape(self, shape):
        batch = None if shape[0] is None or shape[1] is None else shape[0] * shape[1]
        return (batch, shape[2])


@keras.saving.register_keras_serializable(package="albert_keras")
class UnfoldChoices(keras.layers.Layer):
    """Scores ``[B * C, 1]`` back to float32 ``[B, C]`` (C from ``reference``)."""

    def call(self, scores, reference):
        return ops.cast(ops.reshape(scores, (-1, ops.shape(reference)[1])), "float32")

    def compute_output_shape(self, scores_shape, reference_shape):
        return (reference_shape[0], reference_shape[1])


@keras.saving.register_keras_serializable(package="albert_keras")
class ChoiceScorer(TaskModel):
    """Each (context, choice) pair -> pooled output -> dropout -> one score.

    Inputs: the encoder's three, each ``[B, C, S]`` (C choices, any number).
    Output: ``logits`` ``[B, C]`` in float32; the softmax over choices is the
    prediction.

    Args:
        encoder: an ``AlbertEncoder``.
        dropout: dropout on the pooled output.
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> model = ChoiceScorer(AlbertEncoder(get_preset("bert_tiny")))
    >>> ids = keras.ops.ones((2, 4, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["logits"].shape)
    (2, 4)
    """

    # TaskModel's export declaration: one question's choices in, no text
    # a tokenizer in the graph could pack
    export_kind = ExportKind("choice", outputs=("logits",), measures={"logits": "classes"},
                             one_text=False, per_choice=True, pipeline_tag="multiple-choice")
    hf_task = "MultipleChoice"
    head_layers = {"classifier": "choice_score"}

    @property
    def reads_only_cls(self):
        """Only ``[CLS]`` is read (see ``TaskModel.reads_only_cls``), unless
        the encoder pools by a mean."""
        return self.encoder.pools_first_row

    @staticmethod
    def divergence(outputs, target, padding_mask, kl):
        """Adversarial fine-tuning's term: ``kl`` over the questions' rows."""
        return output_divergence.per_row(outputs["logits"], target["logits"], kl)

    @classmethod
    def from_hf_head(cls, encoder, outputs, dropout, dtype=None):
        """The model of an HF ``...ForMultipleChoice`` head (one score per
        choice: ``outputs`` is 1)."""
        return cls(encoder, dropout=dropout, dtype=dtype)

    def __init__(self, encoder, dropout=0.1, dtype=None, **kwargs):
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        inputs = self._encoder_inputs(shape=(None, None))
        fold = FoldChoices(dtype="int32", name="fold_choices")
        pooled = encoder({n: fold(inputs[n]) for n in ENCODER_INPUTS})["pooled_output"]
        x = keras.layers.Dropout(dropout, dtype=dtype, name="choice_dropout")(pooled)
        scores = head_dense(encoder, 1, dtype, "choice_score")(x)
        logits = UnfoldChoices(dtype="float32", name="logits")(scores, inputs["token_ids"])
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        self.dtype_policy = dtype
        self.encoder = encoder
        self.dropout = float(dropout)

    def get_config(self):
        return {**self._base_config(), "dropout": self.dropout}
