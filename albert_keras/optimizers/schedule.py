"""Linear warmup, then polynomial decay (BERT/ALBERT's learning-rate schedule)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_keras")
class WarmupPolynomialDecay(keras.optimizers.schedules.LearningRateSchedule):
    """``lr * step / warmup`` for ``step < warmup``, then polynomial decay.

    After warmup the rate falls from ``learning_rate`` to ``end_learning_rate``
    at ``total_steps`` as ``(1 - progress) ** power`` (power 1: linear, as the
    original ALBERT), and stays there.

    Args:
        learning_rate: the peak rate.
        total_steps: the step where decay ends.
        warmup_steps: linear warmup length.
        end_learning_rate: the final rate.
        power: the decay exponent.

    Example:
    >>> schedule = WarmupPolynomialDecay(1e-3, total_steps=100, warmup_steps=10)
    >>> round(float(schedule(5)), 6)
    0.0005
    """

    def __init__(self, learning_rate, total_steps, warmup_steps=0,
                 end_learning_rate=0.0, power=1.0):
        if total_steps < 1 or warmup_steps < 0 or warmup_steps > total_steps:
            raise ValueError(
                f"need 0 <= warmup_steps ({warmup_steps}) <= total_steps ({total_steps})"
            )
        self.learning_rate = float(learning_rate)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)
        self.end_learning_rate = float(end_learning_rate)
        self.power = float(power)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.cast(max(self.warmup_steps, 1), "float32")
        decay_steps = float(max(self.total_steps - self.warmup_steps, 1))
        progress = ops.clip((step - self.warmup_steps) / decay_steps, 0.0, 1.0)
        decayed = (self.learning_rate - self.end_learning_rate) * (
            1.0 - progress
        ) ** self.power + self.end_learning_rate
        warm = self.learning_rate * step / warmup
        return ops.where(step < self.warmup_steps, warm, decayed)

    def get_config(self):
        return {
            "learning_rate": self.learning_rate,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
        }
