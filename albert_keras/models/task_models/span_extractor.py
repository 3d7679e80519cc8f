"""SpanExtractor: extractive QA (SQuAD v1 and v2)."""

import keras
from keras import ops

from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models import output_divergence
from albert_keras.models.task_models.task_model import ENCODER_INPUTS
from albert_keras.models.task_models.task_model import TaskModel
from albert_keras.models.task_models.task_model import head_dense


@keras.saving.register_keras_serializable(package="albert_keras")
class SpanLogits(keras.layers.Layer):
    """Splits ``[B, S, 2]`` into float32 ``start_logits`` and ``end_logits``."""

    def call(self, logits):
        logits = ops.cast(logits, "float32")
        return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}

    def compute_output_spec(self, logits):
        shape = tuple(logits.shape[:-1])
        return {
            "start_logits": keras.KerasTensor(shape, dtype="float32"),
            "end_logits": keras.KerasTensor(shape, dtype="float32"),
        }


@keras.saving.register_keras_serializable(package="albert_keras")
class SpanExtractor(TaskModel):
    """Start and end scores for every token, from ``dense(sequence_output)``.

    The question goes in segment 0 and a window of the context in segment 1
    (``albert_keras.tasks.qa.qa_task`` builds the windows and decodes spans back to
    characters). For SQuAD v2 an unanswerable question points at ``[CLS]``
    (position 0), as in the original.

    Inputs: the encoder's three. Outputs: ``start_logits`` and
    ``end_logits``, ``[B, S]`` in float32.

    Args:
        encoder: an ``AlbertEncoder``.
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> model = SpanExtractor(AlbertEncoder(get_preset("bert_tiny")))
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["start_logits"].shape)
    (2, 8)
    """

    # TaskModel's export declaration
    export_kind = ExportKind(
        "qa", outputs=("start_logits", "end_logits"),
        measures={"start_logits": "span", "end_logits": "span"},
        app_task="bert_question_answerer", app_pairs=True,
        pipeline_tag="question-answering", summary="Finds the answer to a question in a text",
        hf_outputs={"start_logits": "start_logits", "end_logits": "end_logits"})
    hf_task = "QuestionAnswering"
    head_layers = {"qa_outputs": "qa_outputs"}

    @staticmethod
    def divergence(outputs, target, padding_mask, kl):
        """Adversarial fine-tuning's term: ``kl`` over the positions, for the
        start and for the end."""
        return sum(output_divergence.over_positions(outputs[k], target[k], padding_mask, kl)
                   for k in ("start_logits", "end_logits"))

    @classmethod
    def from_hf_head(cls, encoder, outputs, dropout, dtype=None):
        """The model of an HF ``...ForQuestionAnswering`` head (a start and
        an end score per token: ``outputs`` is 2; no dropout before it)."""
        return cls(encoder, dtype=dtype)

    def __init__(self, encoder, dtype=None, **kwargs):
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        inputs = self._encoder_inputs()
        sequence = encoder({n: inputs[n] for n in ENCODER_INPUTS})["sequence_output"]
        logits = head_dense(encoder, 2, dtype, "qa_outputs")(encoder.token_rows(sequence))
        outputs = SpanLogits(dtype="float32", name="span_logits")(logits)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.dtype_policy = dtype
        self.encoder = encoder

    def get_config(self):
        return self._base_config()
