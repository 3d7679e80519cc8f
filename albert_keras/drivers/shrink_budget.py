"""How ``shrink --max-minutes`` holds, the candidate under way included.

Checking the clock only before each student let a run overshoot by a whole
student: its distillation and every file after it (``--max-minutes 15``
ran 22:51 on a loaded 2-core machine). The budget here plans each step from
what the run has measured so far:

- a file (one export, validation and latency measure) starts only when the
  slowest file so far still fits in the time left;
- a student starts only when, with its files reserved, at least
  ``MIN_TRAINING_SECONDS`` are left to train it; its distillation stops at
  the batch where the reserve begins (``deadline_callback``), keeping its
  best epoch so far.
"""

import logging
import math
import time

import keras

logger = logging.getLogger(__name__)

# Below this, a student would hardly move from its start: not worth a row.
MIN_TRAINING_SECONDS = 30.0


class ShrinkBudget:
    """The run's clock against ``max_minutes`` (None: no limit).

    Args:
        max_minutes: the budget, or None.
        clock: the monotonic clock in seconds (a test's own).

    Example:
    >>> ShrinkBudget(None).fits_file()
    True
    """

    def __init__(self, max_minutes, clock=time.monotonic):
        self.clock = clock
        self.end = None if max_minutes is None else clock() + 60.0 * max_minutes
        self.file_seconds = []

    def left(self):
        """Seconds left (infinite without a limit)."""
        return math.inf if self.end is None else self.end - self.clock()

    def file_estimate(self):
        """The slowest file measured so far, in seconds (0 before any)."""
        return max(self.file_seconds, default=0.0)

    def measure_file(self, measure):
        """``measure()``, timed into the estimate of the next files."""
        started = self.clock()
        result = measure()
        self.file_seconds.append(self.clock() - started)
        return result

    def fits_file(self):
        """Whether one more file fits in the time left."""
        return self.left() >= self.file_estimate()

    def training_seconds(self, files):
        """The seconds a student may train with ``files`` files still to
        measure after it (infinite without a limit)."""
        return self.left() - files * self.file_estimate()

    def deadline_callback(self, files):
        """A Keras callback that stops a student's training where its
        ``files`` files' reserve begins (None without a limit)."""
        if self.end is None:
            return None
        return StopAtDeadline(self.clock() + self.training_seconds(files), self.clock)


class StopAtDeadline(keras.callbacks.Callback):
    """Stops ``fit`` at the first batch that ends past ``deadline``.

    Keras still ends the epoch (its scoring and best-epoch selection run),
    then stops.

    Args:
        deadline: the time, on ``clock``.
        clock: the monotonic clock in seconds.
    """

    def __init__(self, deadline, clock=time.monotonic):
        super().__init__()
        self.deadline = deadline
        self.clock = clock
        self.stopped = False

    def on_train_batch_end(self, batch, logs=None):
        if not self.stopped and self.clock() >= self.deadline:
            self.stopped = True
            self.model.stop_training = True
            logger.info("--max-minutes: training stopped early to leave time for the files")
