"""SequenceClassifier: sentence(-pair) classification or regression."""

import logging

import keras

from albert_keras.heads.poolings import CLASSIFIER_POOLINGS
from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models import output_divergence
from albert_keras.models.task_models.task_model import ENCODER_INPUTS
from albert_keras.models.task_models.task_model import TaskModel
from albert_keras.models.task_models.task_model import head_dense

logger = logging.getLogger(__name__)


@keras.saving.register_keras_serializable(package="albert_keras")
class SequenceClassifier(TaskModel):
    """The pooled ``[CLS]`` vector -> dropout -> dense, as the original.

    With ``pooling="mean"`` the head reads the mean of the last layer over
    the real tokens instead. A model pretrained by masked LM alone (the
    ``mlm`` objective, RoBERTa's) never trained its ``[CLS]`` row or its
    pooler for a sentence task, and the mean of every token's vector starts
    from everything the masked LM learned.

    One text or a pair (the packer puts both in one sequence). With
    ``num_classes=1`` it is a regressor (STS-B style): the single output is
    the predicted value.

    Inputs: the encoder's ``token_ids``, ``segment_ids``, ``padding_mask``.
    Output: ``logits`` ``[B, num_classes]`` in float32.

    Args:
        encoder: an ``AlbertEncoder``.
        num_classes: number of labels (1 for regression).
        dropout: dropout on the pooled output (0.1 in the original).
        pooling: ``pooled`` (the encoder's tanh pooler over ``[CLS]``, as
            the original), ``mean`` (the last layer's mean over real
            tokens; the pooler is not used) or ``both`` (the two
            concatenated).
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> model = SequenceClassifier(AlbertEncoder(get_preset("bert_tiny")), 3)
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["logits"].shape)
    (2, 3)
    """

    # TaskModel's export declaration
    export_kind = ExportKind(
        "classifier", outputs=("logits",),
        measures={"logits": "classes", "probability": "probabilities"},
        web=True, app_task="text_classifier", probabilities=True, named_labels=True,
        pipeline_tag="text-classification", summary="Classifies a text",
        hf_outputs={"logits": "logits"})
    hf_task = "SequenceClassification"
    head_layers = {"classifier": "classifier"}

    @property
    def reads_only_cls(self):
        """Only ``[CLS]`` is read (see ``TaskModel.reads_only_cls``)."""
        return self.pooling == "pooled" and self.encoder.pools_first_row

    @staticmethod
    def divergence(outputs, target, padding_mask, kl):
        """Adversarial fine-tuning's term (``training.adversarial``): ``kl``
        over the rows of logits, or a regressor's squared error."""
        logits, clean = outputs["logits"], target["logits"]
        if logits.shape[-1] == 1:
            return output_divergence.squared_error(logits, clean)
        return output_divergence.per_row(logits, clean, kl)

    def default_task_spec(self, source):
        """A classifier built by hand carries no task: its classes are named
        by id (said, since an app shows these names), so validation data with
        labels ``0 .. n-1`` still measures accuracy."""
        if self.num_classes == 1:
            return {"task": "classify", "regression": True, "labels": []}
        logger.warning(f"{source}: the classifier carries no label names; its classes are "
                       f"named by id 0..{self.num_classes - 1} (fine-tune it with "
                       "albert-keras, or give the model a task_spec with labels, to name them)")
        return {"task": "classify", "labels": [str(i) for i in range(self.num_classes)]}

    @classmethod
    def from_hf_head(cls, encoder, outputs, dropout, dtype=None):
        """The model of an HF ``...ForSequenceClassification`` head of
        ``outputs`` classes (its tensors are loaded by the caller)."""
        return cls(encoder, outputs, dropout=dropout, dtype=dtype)

    def __init__(self, encoder, num_classes, dropout=0.1, pooling="pooled", dtype=None,
                 **kwargs):
        if pooling not in CLASSIFIER_POOLINGS:
            raise ValueError(f"pooling must be one of {CLASSIFIER_POOLINGS}, got {pooling!r}")
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        if pooling != "pooled" and encoder.cls_only:
            raise ValueError(f"pooling {pooling!r} reads every token: the encoder must not "
                             "be cls_only")
        inputs = self._encoder_inputs()
        encoded = encoder({n: inputs[n] for n in ENCODER_INPUTS})
        pooled = encoded["pooled_output"]
        if pooling != "pooled":
            # float32, so that the sum over a long bfloat16 sequence keeps
            # its small terms; padded positions are left out by the mask
            mean = keras.layers.GlobalAveragePooling1D(dtype="float32", name="mean_pooling")(
                encoded["sequence_output"], mask=inputs["padding_mask"])
            pooled = mean if pooling == "mean" else keras.layers.Concatenate(
                dtype=dtype, name="pooled_and_mean")([pooled, mean])
        x = keras.layers.Dropout(dropout, dtype=dtype, name="classifier_dropout")(pooled)
        logits = head_dense(encoder, num_classes, dtype, "classifier")(x)
        logits = keras.layers.Activation("linear", dtype="float32", name="logits")(logits)
        super().__init__(inputs=inputs, outputs={"logits": logits}, **kwargs)
        self.dtype_policy = dtype
        self.encoder = encoder
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.pooling = pooling

    def get_config(self):
        return {
            **self._base_config(),
            "num_classes": self.num_classes,
            "dropout": self.dropout,
            "pooling": self.pooling,
        }
