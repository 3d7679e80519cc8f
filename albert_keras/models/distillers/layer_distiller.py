"""Intermediate-layer transfer: a student encoder trained to reproduce a
teacher encoder's hidden states and attention maps (TinyBERT's first
task-specific stage; MobileBERT's feature-map and attention transfer).

The teacher runs inside every step rather than once ahead, as the soft
targets do: its hidden states for every row would not fit in memory
(20,000 rows x 12 layers x 128 x 768 floats is 94 GB).
"""

import keras
from keras import ops

from albert_keras.models.backbone import is_backbone
from albert_keras.models.distillers.layer_map import parse_layer_map
from albert_keras.models.distillers.layer_map import uniform_layer_map

# -- the losses ----------------------------------------------------------------------


def hidden_transfer_loss(student, teacher, mask):
    """Mean squared difference of ``[B, K, S, H]`` hidden states over the
    real positions of ``mask`` ``[B, S]`` (and every layer and unit)."""
    diff = ops.mean(ops.square(ops.cast(student, "float32") - ops.cast(teacher, "float32")),
                    axis=-1)  # [B, K, S]
    mask = ops.cast(mask, "float32")[:, None, :]
    layers = ops.cast(ops.shape(diff)[1], "float32")
    return ops.sum(diff * mask) / ops.maximum(ops.sum(mask) * layers, 1.0)


def attention_transfer_loss(student, teacher, mask):
    """``KL(teacher || student)`` of attention distributions ``[B, K, N, S, S]``
    (over the last axis), averaged over layers, heads and the real query
    rows of ``mask`` ``[B, S]`` (MobileBERT's attention transfer)."""
    s = ops.cast(student, "float32")
    t = ops.cast(teacher, "float32")
    # Padded keys have probability 0 (exp of the mask value underflows) in
    # both; the floor keeps 0 * log 0 at 0 there.
    kl = ops.sum(t * (ops.log(ops.maximum(t, 1e-12)) - ops.log(ops.maximum(s, 1e-12))),
                 axis=-1)  # [B, K, N, S]
    mask = ops.cast(mask, "float32")[:, None, None, :]
    per_row = ops.cast(ops.shape(kl)[1] * ops.shape(kl)[2], "float32")
    return ops.sum(kl * mask) / ops.maximum(ops.sum(mask) * per_row, 1.0)


# -- the model -----------------------------------------------------------------------


@keras.saving.register_keras_serializable(package="albert_keras")
class LayerDistiller(keras.Model):
    """Trains ``student`` to reproduce ``teacher``'s layers (the teacher is frozen).

    For each ``(m, g)`` of ``layer_map`` the student's state after block
    ``m`` (0: the embedding output) learns the teacher's after block ``g``
    by mean squared error, through one learned projection when the widths
    differ (TinyBERT's ``W_h``, a second one for the embedding output,
    dropped after training). For pairs of blocks (``m, g >= 1``) the
    student's attention distributions learn the teacher's by KL divergence,
    head by head when both have the same number of heads, and their
    average over heads otherwise. The loss is ``hidden_weight`` x the first
    + ``attention_weight`` x the second.

    Inputs: the encoders' ``token_ids``, ``segment_ids``, ``padding_mask``.
    Outputs: ``student_hidden`` and ``teacher_hidden`` ``[B, K, S, H_t]``
    (K pairs; the student's projected), ``student_attention`` and
    ``teacher_attention`` ``[B, A, heads, S, S]`` (A block pairs), float32.

    Args:
        teacher: the teacher's ``AlbertEncoder``.
        student: the student's ``AlbertEncoder`` (same vocabulary).
        layer_map: ``(student, teacher)`` layer pairs; None for
            ``uniform_layer_map``.
        hidden_weight: weight of the hidden-state loss.
        attention_weight: weight of the attention loss.

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> teacher = AlbertEncoder(get_preset("albert_tiny", vocab_size=100))
    >>> student = AlbertEncoder(get_preset("albert_tiny", vocab_size=100, hidden_size=64,
    ...                                    num_hidden_layers=2))
    >>> model = LayerDistiller(teacher, student)
    >>> ids = keras.ops.ones((1, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["student_hidden"].shape)
    (1, 3, 8, 256)
    """

    def __init__(self, teacher, student, layer_map=None, hidden_weight=1.0,
                 attention_weight=1.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(teacher, dict):
            teacher = keras.saving.deserialize_keras_object(teacher)
        if isinstance(student, dict):
            student = keras.saving.deserialize_keras_object(student)
        for name, encoder in (("teacher", teacher), ("student", student)):
            if not is_backbone(encoder):
                raise TypeError(f"{name} must be an encoder (such as AlbertEncoder), got "
                                f"{type(encoder).__name__}")
        if teacher.config.vocab_size != student.config.vocab_size:
            raise ValueError(f"the student's vocabulary ({student.config.vocab_size}) is not "
                             f"the teacher's ({teacher.config.vocab_size})")
        self.teacher = teacher
        self.teacher.trainable = False
        self.student = student
        layers = (self._blocks(student), self._blocks(teacher))
        pairs = (uniform_layer_map(*layers) if layer_map is None
                 else parse_layer_map(",".join(f"{s}:{t}" for s, t in layer_map), *layers))
        if not pairs:
            raise ValueError("the layer map is empty")
        self.layer_map = [tuple(p) for p in pairs]
        self.hidden_weight = float(hidden_weight)
        self.attention_weight = float(attention_weight)
        width, teacher_width = student.config.hidden_size, teacher.config.hidden_size
        self.hidden_projection = self.embedding_projection = None
        if width != teacher_width:
            initializer = keras.initializers.TruncatedNormal(
                stddev=student.config.initializer_range)
            self.hidden_projection = keras.layers.Dense(
                teacher_width, kernel_initializer=initializer, dtype=student.dtype_policy,
                name="hidden_projection")
            self.embedding_projection = keras.layers.Dense(
                teacher_width, kernel_initializer=initializer, dtype=student.dtype_policy,
                name="embedding_projection")
            self.hidden_projection.build((None, None, width))
            self.embedding_projection.build((None, None, width))
        self.same_heads = (student.config.num_attention_heads
                           == teacher.config.num_attention_heads)
        self.hidden_loss_tracker = keras.metrics.Mean(name="hidden_loss")
        self.attention_loss_tracker = keras.metrics.Mean(name="attention_loss")

    @staticmethod
    def _blocks(encoder):
        return encoder.num_hidden_states - 1

    @staticmethod
    def _run(encoder, inputs, training):
        out = encoder.encode(inputs, training, return_attention=True)
        return out["hidden_states"], out["attention"]

    def _heads(self, probs):
        probs = ops.stack(probs, axis=1)  # [B, A, N, S, S]
        return probs if self.same_heads else ops.mean(probs, axis=2, keepdims=True)

    def call(self, inputs, training=False):
        student_states, student_probs = self._run(self.student, inputs, training)
        teacher_states, teacher_probs = self._run(self.teacher, inputs, False)
        s_hidden, t_hidden = [], []
        for s, t in self.layer_map:
            state = student_states[s]
            if self.hidden_projection is not None:
                project = self.embedding_projection if s == 0 else self.hidden_projection
                state = project(state)
            s_hidden.append(ops.cast(state, "float32"))
            t_hidden.append(ops.stop_gradient(ops.cast(teacher_states[t], "float32")))
        outputs = {"student_hidden": ops.stack(s_hidden, axis=1),
                   "teacher_hidden": ops.stack(t_hidden, axis=1)}
        blocks = [(s, t) for s, t in self.layer_map if s > 0]
        if blocks:
            outputs["student_attention"] = self._heads([student_probs[s - 1] for s, _ in blocks])
            outputs["teacher_attention"] = ops.stop_gradient(
                self._heads([teacher_probs[t - 1] for _, t in blocks]))
        return outputs

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        mask = x["padding_mask"]
        hidden = hidden_transfer_loss(y_pred["student_hidden"], y_pred["teacher_hidden"], mask)
        self.hidden_loss_tracker.update_state(hidden)
        total = self.hidden_weight * hidden
        if "student_attention" in y_pred:
            attention = attention_transfer_loss(y_pred["student_attention"],
                                                y_pred["teacher_attention"], mask)
            self.attention_loss_tracker.update_state(attention)
            total = total + self.attention_weight * attention
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        return [*super().metrics, self.hidden_loss_tracker, self.attention_loss_tracker]

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "teacher": keras.saving.serialize_keras_object(self.teacher),
            "student": keras.saving.serialize_keras_object(self.student),
            "layer_map": [list(p) for p in self.layer_map],
            "hidden_weight": self.hidden_weight,
            "attention_weight": self.attention_weight,
        }
