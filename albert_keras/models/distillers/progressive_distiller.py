"""MobileBERT's progressive knowledge transfer, one stage at a time.

Stage ``k`` of the first ``L`` stages (``L`` the student's layers) trains
the student's layer ``k`` (and what lies below it) to reproduce the
teacher's mapped layer: the feature maps' mean squared error after a
LayerNorm without weights, their per-token mean and variance, and the
attention distributions. The last stage is pretraining distillation: the
masked LM against ``ratio * one-hot + (1 - ratio) * the teacher's
softmax``. The terms, their weights (100, 5000, 5, 1) and the division by
``k + 1`` are those of MobileBERT's code (google-research ``mobilebert/``
and TF Model Garden's ``projects/mobilebert/distillation.py``); unlike
those, padded positions count for nothing here.
"""

import dataclasses

import keras
from keras import ops

from albert_keras.heads.pretraining_losses import masked_lm_loss
from albert_keras.models.backbone import is_backbone
from albert_keras.models.distillers.layer_map import uniform_layer_map
from albert_keras.replicas import weighted_mean

# Keras LayerNormalization's default, which Model Garden's loss normalises with
FEATURE_NORM_EPSILON = 1e-3


@dataclasses.dataclass(frozen=True)
class TransferWeights:
    """The weights of the layer-wise terms (MobileBERT's defaults)."""

    feature_map: float = 100.0
    mean: float = 5000.0
    variance: float = 5.0
    attention: float = 1.0


# -- the losses ----------------------------------------------------------------------


def _masked_mean(values, mask):
    """Mean of ``values`` ``[B, ..., S]`` over the real positions of ``mask`` ``[B, S]``."""
    mask = ops.cast(mask, "float32")
    while len(mask.shape) < len(values.shape):
        mask = mask[:, None]
    mask = ops.broadcast_to(mask, ops.shape(values))
    return ops.sum(values * mask) / ops.maximum(ops.sum(mask), 1.0)


def _normalise(x):
    mean = ops.mean(x, axis=-1, keepdims=True)
    variance = ops.var(x, axis=-1, keepdims=True)
    return (x - mean) / ops.sqrt(variance + FEATURE_NORM_EPSILON)


def feature_map_loss(student, teacher, mask):
    """Mean squared error of ``[B, S, H]`` feature maps, each normalised over
    its last axis first (a LayerNorm without weights), over real positions.

    Example:
    >>> x = ops.ones((1, 2, 4))
    >>> float(feature_map_loss(x, x, ops.ones((1, 2))))
    0.0
    """
    s, t = _normalise(ops.cast(student, "float32")), _normalise(ops.cast(teacher, "float32"))
    return _masked_mean(ops.mean(ops.square(s - t), axis=-1), mask)


def distribution_losses(student, teacher, mask):
    """``(mean loss, variance loss)``: the squared difference of each token's
    mean over its features, and the absolute difference of its variance,
    averaged over real positions."""
    s, t = ops.cast(student, "float32"), ops.cast(teacher, "float32")
    mean = ops.square(ops.mean(s, axis=-1) - ops.mean(t, axis=-1))
    variance = ops.abs(ops.var(s, axis=-1) - ops.var(t, axis=-1))
    return _masked_mean(mean, mask), _masked_mean(variance, mask)


def attention_loss(student, teacher, mask):
    """Cross-entropy ``-sum(teacher * log student)`` of ``[B, N, S, S]``
    attention distributions over keys, averaged over heads and real query
    rows (MobileBERT's, which is the KL divergence plus the teacher's
    entropy)."""
    s = ops.cast(student, "float32")
    t = ops.cast(teacher, "float32")
    # padded keys have probability 0 in both; the floor keeps 0 * log 0 at 0
    cross = -ops.sum(t * ops.log(ops.maximum(s, 1e-12)), axis=-1)  # [B, N, S]
    return _masked_mean(cross, mask)


def soft_masked_lm_loss(masked_ids, student_logits, teacher_logits, masked_weights, ratio):
    """Cross-entropy of the student's masked-LM logits against
    ``ratio * one_hot(masked_ids) + (1 - ratio) * softmax(teacher_logits)``,
    averaged over the real masked positions."""
    logits = ops.cast(student_logits, "float32")
    log_probs = ops.log_softmax(logits, axis=-1)
    teacher = ops.softmax(ops.stop_gradient(ops.cast(teacher_logits, "float32")), axis=-1)
    soft = -ops.sum(teacher * log_probs, axis=-1)
    hard = masked_lm_loss(masked_ids, logits, masked_weights)
    return ratio * hard + (1.0 - ratio) * weighted_mean(soft, ops.cast(masked_weights,
                                                                       "float32"))


def stage_rate_scales(encoder, stage, lower_rate=0.1):
    """``{variable path: scale}`` for stage ``stage``'s optimizer
    (``LayerwiseAdamW(lr_scales=...)``): the embeddings and layers below the
    stage's layer at ``lower_rate`` (MobileBERT's code: 0.1), the rest at 1;
    nothing slowed at the last stage.

    Example:
    >>> from albert_keras import MobileBertEncoder
    >>> from albert_keras.presets import get_preset
    >>> encoder = MobileBertEncoder(get_preset("mobilebert_tiny", num_hidden_layers=2))
    >>> scales = stage_rate_scales(encoder, 1)
    >>> sorted(set(scales.values()))
    [0.1]
    """
    if stage >= encoder.num_hidden_states - 1:  # pretraining distillation: all at the rate
        return {}
    return {path: lower_rate for path, depth in encoder.variables_by_depth().items()
            if depth <= stage}


# -- the model -----------------------------------------------------------------------


@keras.saving.register_keras_serializable(package="albert_keras")
class ProgressiveDistiller(keras.Model):
    """One stage of progressive knowledge transfer from ``teacher`` to ``student``.

    Both are ``EncoderPretrainer`` s (an encoder and its masked-LM head) of the
    same vocabulary; the teacher is frozen. For ``stage`` below the
    student's layer count the loss is the layer-wise transfer of student
    layer ``stage`` from teacher layer ``layer_map[stage]``: ``(100 x
    feature map + 5000 x mean + 5 x variance + 1 x attention) / (stage +
    1)``, through a learned projection of the student's layer when the
    widths differ. At the last stage it is the masked LM against the
    teacher's soft targets mixed with the labels (``ratio`` of the labels).
    Train each stage with its own optimizer (``stage_rate_scales`` slows
    the layers below it) and move on with ``with_stage``.

    Args:
        teacher: the teacher's ``EncoderPretrainer``.
        student: the student's ``EncoderPretrainer``.
        stage: ``0 .. L``: a layer, or ``L`` for pretraining distillation.
        layer_map: the teacher layer (from 1) of each student layer; None
            spreads the student's layers evenly over the teacher's.
        ratio: the labels' share of the last stage's targets (0.5).
        transfer_weights: ``TransferWeights`` (or its dict) for the layer
            terms.
        steps_before: the optimizer steps the earlier stages took (each
            stage's optimizer counts from 0; a run's step is this plus it).

    Example:
    >>> from albert_keras import EncoderPretrainer, MobileBertEncoder
    >>> from albert_keras.presets import get_preset
    >>> def pretrainer(**shape):
    ...     return EncoderPretrainer(MobileBertEncoder(get_preset("mobilebert_tiny", **shape)))
    >>> teacher = pretrainer(vocab_size=100, num_hidden_layers=2)
    >>> student = pretrainer(vocab_size=100, num_hidden_layers=2, intermediate_size=64)
    >>> model = ProgressiveDistiller(teacher, student, stage=0)
    >>> ids = keras.ops.ones((1, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["student_feature"].shape)
    (1, 8, 512)
    """

    def __init__(self, teacher, student, stage=0, layer_map=None, ratio=0.5, transfer_weights=None,  # noqa: PLR0913 (a model constructor: its arguments mirror get_config)
                 steps_before=0, **kwargs):
        super().__init__(**kwargs)
        teacher, student = (keras.saving.deserialize_keras_object(m) if isinstance(m, dict)
                            else m for m in (teacher, student))
        for name, model in (("teacher", teacher), ("student", student)):
            if not is_backbone(getattr(model, "encoder", None)):
                raise TypeError(f"{name} must be an EncoderPretrainer (an encoder and its "
                                f"masked-LM head), got {type(model).__name__}")
        if teacher.encoder.config.vocab_size != student.encoder.config.vocab_size:
            raise ValueError(f"the student's vocabulary ({student.encoder.config.vocab_size}) "
                             f"is not the teacher's ({teacher.encoder.config.vocab_size})")
        self.teacher, self.student = teacher, student
        self.teacher.trainable = False
        layers = student.encoder.num_hidden_states - 1
        if not 0 <= int(stage) <= layers:
            raise ValueError(f"stage must be in [0, {layers}] (the student's layers, then "
                             f"pretraining distillation), got {stage}")
        self.stage = int(stage)
        self.layer_map = [int(t) for t in (layer_map or [
            t for m, t in uniform_layer_map(layers, teacher.encoder.num_hidden_states - 1)
            if m > 0])]
        if len(self.layer_map) != layers:
            raise ValueError(f"layer_map names {len(self.layer_map)} teacher layers for the "
                             f"student's {layers}")
        self.ratio = float(ratio)
        self.transfer_weights = (
            transfer_weights if isinstance(transfer_weights, TransferWeights)
            else TransferWeights(**(transfer_weights or {})))
        self.steps_before = int(steps_before)
        self.projection = self._make_projection()
        self.loss_tracker = keras.metrics.Mean(name="transfer_loss")

    def _make_projection(self):
        width = self.student.encoder.config.hidden_size
        teacher_width = self.teacher.encoder.config.hidden_size
        if width == teacher_width:
            return None
        projection = keras.layers.Dense(
            teacher_width, dtype=self.student.dtype_policy, name="feature_projection",
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.student.encoder.config.initializer_range))
        projection.build((None, None, width))
        return projection

    @property
    def last_stage(self):
        return self.stage == len(self.layer_map)

    @property
    def trainable_weights(self):
        """What this stage's loss reaches: the embeddings and the layers up to
        the stage's (and the projection), or at the last stage the encoder
        and its masked-LM head. ``fit`` steps these only, so the layers above,
        the pooler and the sentence head are not carried as gradient-less
        variables (and Keras does not warn about them)."""
        # Taken from the student alone: the teacher's variables have the same
        # paths, and Keras' loading sets the whole model trainable again.
        depth = self.student.encoder.variables_by_depth()
        keep = {p for p, d in depth.items() if self.last_stage or d <= self.stage + 1}
        extra = self.student.mlm_head if self.last_stage else self.projection
        return ([v for v in self.student.encoder.trainable_weights if v.path in keep]
                + (extra.trainable_weights if extra is not None else []))

    @property
    def trainable_variables(self):
        # Keras builds a loaded model's optimizer over this (compile_from_config)
        # and a trained one's over trainable_weights: they must agree, or a
        # checkpoint's optimizer state is skipped on load
        return self.trainable_weights

    def with_stage(self, stage, steps_before=None):
        """The same teacher, student and projection at another stage
        (``steps_before``: the run's steps so far, default this stage's)."""
        model = ProgressiveDistiller(self.teacher, self.student, stage, self.layer_map,
                                     self.ratio, dataclasses.asdict(self.transfer_weights),
                                     self.steps_before if steps_before is None else steps_before)
        if self.projection is not None:
            model.projection.set_weights(self.projection.get_weights())
        return model

    def call(self, inputs, training=False):
        if self.last_stage:
            return {"student_logits": self.student(inputs, training=training)["mlm_logits"],
                    "teacher_logits": self.teacher(inputs, training=False)["mlm_logits"]}
        teacher_layer = self.layer_map[self.stage]
        student = self.student.encoder.encode(inputs, training, return_attention=True)
        teacher = self.teacher.encoder.encode(inputs, False, return_attention=True)
        feature = student["hidden_states"][self.stage + 1]
        if self.projection is not None:
            feature = self.projection(feature)
        return {"student_feature": ops.cast(feature, "float32"),
                "teacher_feature": ops.stop_gradient(ops.cast(
                    teacher["hidden_states"][teacher_layer], "float32")),
                "student_attention": student["attention"][self.stage],
                "teacher_attention": ops.stop_gradient(teacher["attention"][teacher_layer - 1])}

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.last_stage:
            total = soft_masked_lm_loss(x["masked_ids"], y_pred["student_logits"],
                                        y_pred["teacher_logits"], x["masked_weights"],
                                        self.ratio)
        else:
            total = self.layer_loss(y_pred, x["padding_mask"])
        self.loss_tracker.update_state(total)
        return total

    def layer_loss(self, y_pred, mask):
        """The layer-wise stage's weighted sum of terms, over ``stage + 1``."""
        w = self.transfer_weights
        s, t = y_pred["student_feature"], y_pred["teacher_feature"]
        mean, variance = distribution_losses(s, t, mask)
        total = (w.feature_map * feature_map_loss(s, t, mask) + w.mean * mean
                 + w.variance * variance)
        if w.attention:
            total = total + w.attention * attention_loss(
                y_pred["student_attention"], y_pred["teacher_attention"], mask)
        return total / float(self.stage + 1)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        return [*super().metrics, self.loss_tracker]

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "teacher": keras.saving.serialize_keras_object(self.teacher),
                "student": keras.saving.serialize_keras_object(self.student),
                "stage": self.stage, "layer_map": list(self.layer_map), "ratio": self.ratio,
                "transfer_weights": dataclasses.asdict(self.transfer_weights),
                "steps_before": self.steps_before}
