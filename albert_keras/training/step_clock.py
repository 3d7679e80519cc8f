"""How long a fit took and what one steady step costs.

``albert-keras finetune`` writes these into ``metrics.json`` (as HF's
Trainer reports ``train_runtime`` and ``train_steps_per_second``), so a run
on another machine can be compared step for step, apart from the fixed
costs (import, loading, tracing each batch shape, evaluation, writing).
"""

import statistics
import time

import keras


class StepClock(keras.callbacks.Callback):
    """Times ``fit`` and each training step.

    ``timing()`` gives ``train_seconds`` (the whole ``fit``, epochs'
    evaluation included), ``train_steps`` and ``step_seconds_median``: the
    median step, which the few steps that trace a new batch shape do not
    move.

    Example:
    >>> clock = StepClock()
    >>> model.fit(ds, callbacks=[clock])  # doctest: +SKIP
    >>> clock.timing()["train_steps"]  # doctest: +SKIP
    47
    """

    def __init__(self):
        super().__init__()
        self._steps, self._began, self._step_began, self._seconds = [], None, None, None

    def on_train_begin(self, logs=None):
        self._steps, self._began = [], time.perf_counter()

    def on_train_batch_begin(self, batch, logs=None):
        self._step_began = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        self._steps.append(time.perf_counter() - self._step_began)

    def on_train_end(self, logs=None):
        self._seconds = time.perf_counter() - self._began

    def timing(self):
        """The run's seconds, steps and median step (empty before a run)."""
        if not self._steps or self._seconds is None:
            return {}
        return {"train_seconds": round(self._seconds, 3), "train_steps": len(self._steps),
                "step_seconds_median": round(statistics.median(self._steps), 4)}
