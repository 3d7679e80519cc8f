"""Knowledge distillation: a student task model trained on a teacher's
soft targets (Hinton et al.; DistilBERT, TinyBERT and MobileBERT use it for
their task-specific stage) and, where rows are labelled, on the labels."""

import keras
from keras import ops


def soft_target_loss(student_logits, teacher_logits, temperature, mask=None):
    """``T^2 KL(softmax(teacher / T) || softmax(student / T))`` over the last
    axis, averaged over the rows that ``mask`` keeps.

    The ``T^2`` keeps the gradient's size independent of ``T`` (Hinton et
    al., 2015), so ``alpha`` means the same at every temperature.

    Args:
        student_logits, teacher_logits: ``[..., C]``.
        temperature: T.
        mask: ``[...]`` weights per row (e.g. the padding mask of a tagger's
            positions), or None for all rows.

    Returns:
        A scalar.

    Example:
    >>> soft_target_loss(ops.zeros((2, 3)), ops.zeros((2, 3)), 2.0)  # doctest: +SKIP
    0.0
    """
    s = ops.cast(student_logits, "float32") / temperature
    t = ops.cast(teacher_logits, "float32") / temperature
    p = ops.softmax(t, axis=-1)
    kl = ops.sum(p * (ops.log_softmax(t, axis=-1) - ops.log_softmax(s, axis=-1)), axis=-1)
    kl = kl * temperature * temperature
    if mask is None:
        return ops.mean(kl)
    mask = ops.cast(mask, "float32")
    return ops.sum(kl * mask) / ops.maximum(ops.sum(mask), 1.0)


@keras.saving.register_keras_serializable(package="albert_keras")
class Distiller(keras.Model):
    """Trains ``student`` (a compiled task model) on a teacher's outputs.

    ``fit`` takes ``(x, y)`` with ``y = {"teacher": outputs, "labels":
    targets, "label_weight": weights}``: ``outputs`` the teacher's logits
    for ``x`` (keyed like the student's outputs), ``targets`` the task's
    labels (anything for unlabelled rows) and ``weights`` the task's sample
    weights, zero on unlabelled rows. The loss is ``alpha`` x the soft-target
    loss of every output + ``(1 - alpha)`` x the student's own compiled loss on
    the labels. Outputs of rank 3 (a tagger's ``[B, S, C]``) are averaged
    over the real positions of ``x["padding_mask"]``.

    Args:
        student: a task model, compiled with its task's loss.
        temperature: T of the soft targets.
        alpha: the soft loss's weight.
        regression: the outputs are numbers: mean squared error to the
            teacher's instead of the soft-target KL.

    Example:
    >>> distiller = Distiller(student, temperature=2.0, alpha=0.5)  # doctest: +SKIP
    >>> distiller.compile(optimizer="adam")  # doctest: +SKIP
    >>> distiller.fit(x, {"teacher": t, "labels": y, "label_weight": w})  # doctest: +SKIP
    """

    def __init__(self, student, temperature=2.0, alpha=0.5, regression=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(student, dict):
            student = keras.saving.deserialize_keras_object(student)
        self.student = student
        self.temperature = float(temperature)
        self.alpha = float(alpha)
        self.regression = bool(regression)
        self.soft_loss_tracker = keras.metrics.Mean(name="soft_loss")
        self.hard_loss_tracker = keras.metrics.Mean(name="hard_loss")

    def call(self, inputs, training=False):
        return self.student(inputs, training=training)

    def soft_loss(self, x, teacher, y_pred):
        """The soft-target loss summed over the outputs."""
        total = 0.0
        for key, logits in y_pred.items():
            target = teacher[key]
            if self.regression:
                total = total + ops.mean(ops.square(
                    ops.cast(logits, "float32") - ops.cast(target, "float32")))
                continue
            mask = x["padding_mask"] if len(logits.shape) == 3 else None
            total = total + soft_target_loss(logits, target, self.temperature, mask)
        return total

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        soft = self.soft_loss(x, y["teacher"], y_pred)
        self.soft_loss_tracker.update_state(soft)
        total = self.alpha * soft
        if self.alpha < 1:
            hard = self.student.compute_loss(x, y["labels"], y_pred,
                                             sample_weight=y["label_weight"], training=training)
            self.hard_loss_tracker.update_state(hard)
            total = total + (1 - self.alpha) * hard
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        return [*super().metrics, self.soft_loss_tracker, self.hard_loss_tracker]

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "student": keras.saving.serialize_keras_object(self.student),
            "temperature": self.temperature,
            "alpha": self.alpha,
            "regression": self.regression,
        }
