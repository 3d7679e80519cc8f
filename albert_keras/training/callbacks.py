"""Callbacks for resumable, guarded pretraining."""

import glob
import json
import logging
import math
import os
import re
import time

import keras

from albert_keras.cpu import cpu_name
from albert_keras.files import write_json
from albert_keras.progress import duration
from albert_keras.progress import time_left
from albert_keras.saving import save_model

logger = logging.getLogger(__name__)


def run_step(model):
    """The run's optimizer steps so far: a staged run's model (``distill``'s)
    counts its earlier stages in ``steps_before``, its optimizer from 0."""
    return getattr(model, "steps_before", 0) + int(model.optimizer.iterations.numpy())


def latest_checkpoint(folder):
    """``(path, epoch)`` of the newest complete ``ckpt-EPOCH.keras``, or ``(None, 0)``."""
    best = (None, 0)
    for path in glob.glob(os.path.join(folder, "ckpt-*.keras")):
        match = re.fullmatch(r"ckpt-(\d+)\.keras", os.path.basename(path))
        if match and int(match.group(1)) > best[1]:
            best = (path, int(match.group(1)))
    return best


class ResumableCheckpoint(keras.callbacks.Callback):
    """Saves the whole model (weights and optimizer state) after every epoch.

    Files are written under a temporary name and renamed, and the epoch is
    part of the name, so a run killed at any moment (even SIGKILL while
    saving) finds a complete checkpoint and knows where it stands. Older
    checkpoints are removed. ``best.keras`` keeps the model with the highest
    ``monitor`` value. Nothing is saved for an epoch whose loss is not finite.

    Args:
        folder: the checkpoint folder.
        monitor: metric for ``best.keras`` (``val_`` prefixed when
            validation runs); None keeps no best model.
    """

    def __init__(self, folder, monitor="val_masked_lm_accuracy"):
        super().__init__()
        self.folder = folder
        self.monitor = monitor
        os.makedirs(folder, exist_ok=True)
        best_file = os.path.join(folder, "best.json")
        self.best = -math.inf
        if os.path.isfile(best_file):
            with open(best_file, encoding="utf-8") as f:
                self.best = json.load(f)["value"]

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if not math.isfinite(float(logs.get("loss", 0.0))):
            return
        path = os.path.join(self.folder, f"ckpt-{epoch + 1:06d}.keras")
        save_model(self.model, path, overwrite=True, optimizer=True)  # resumes a run
        for old in glob.glob(os.path.join(self.folder, "ckpt-*.keras")):
            if old != path:
                os.remove(old)
        if self.monitor is None:
            return
        value = logs.get(self.monitor, logs.get(self.monitor.replace("val_", "")))
        if value is not None and float(value) > self.best:
            self.best = float(value)
            save_model(self.model, os.path.join(self.folder, "best.keras"), overwrite=True)
            write_json(os.path.join(self.folder, "best.json"),
                         {"epoch": epoch + 1, "metric": self.monitor, "value": self.best})


class NanGuard(keras.callbacks.Callback):
    """Stops training at the first non-finite loss and remembers where."""

    def __init__(self):
        super().__init__()
        self.bad_step = None

    def on_train_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(float(loss)):
            self.bad_step = run_step(self.model)
            self.model.stop_training = True


class TimeBudget(keras.callbacks.Callback):
    """Stops training at the end of the first epoch past ``minutes``.

    The clock starts at the first ``fit`` it sees, so a run of several
    ``fit`` calls (the phases of a two-phase schedule) shares one budget.
    """

    def __init__(self, minutes):
        super().__init__()
        self.minutes = minutes
        self.started = None
        self.stopped_early = False

    def on_train_begin(self, logs=None):
        if self.started is None:
            self.started = time.time()

    def on_epoch_end(self, epoch, logs=None):
        if self.minutes and time.time() - self.started > 60 * self.minutes:
            self.stopped_early = True
            self.model.stop_training = True


class StepLimit(keras.callbacks.Callback):
    """Stops training once the optimizer has taken ``total_steps`` steps.

    Keras' ``fit`` runs whole epochs, so a run whose step count is not a
    multiple of the epoch length would otherwise go on to the end of its last
    epoch, past the end of the learning-rate schedule, and report more steps
    than were asked for. The last epoch ends early instead; its checkpoint
    still carries the epoch's number, so a rerun sees a finished run. The
    caller makes ``steps_per_execution`` divide ``total_steps``, so the stop
    falls exactly on the step.

    Args:
        total_steps: the run's last optimizer step.
    """

    def __init__(self, total_steps):
        super().__init__()
        self.total_steps = int(total_steps)

    def on_train_batch_end(self, batch, logs=None):
        if run_step(self.model) >= self.total_steps:
            self.model.stop_training = True


def interactive():
    """Whether progress can be a live bar: a terminal or a notebook.

    Anywhere else (a log file, a pipe, CI) a bar's carriage returns and
    colour codes are noise, and ``ProgressLog`` writes plain lines instead.
    """
    import sys

    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty()) or "ipykernel" in sys.modules


class ProgressLog(keras.callbacks.Callback):
    """A plain progress line through ``logging`` every ``every`` steps.

    Args:
        total_steps: the run's last optimizer step (for "step N/T").
        every: steps between lines.
        tokens_per_step: batch size x sequence length, for a tokens/s figure.

    Example:
    >>> model.fit(ds, callbacks=[ProgressLog(800, every=50)], verbose=2)  # doctest: +SKIP
    """

    def __init__(self, total_steps, every=50, tokens_per_step=None, announce=False):
        super().__init__()
        self.total_steps = total_steps
        self.every = max(1, int(every))
        self.tokens_per_step = tokens_per_step
        # the first line also says what the whole run will take at this speed
        self.announce = announce

    def on_train_begin(self, logs=None):
        self._clock = time.time()
        self._from = run_step(self.model)
        self._logged = self._from // self.every

    def on_train_batch_end(self, batch, logs=None):
        step = run_step(self.model)
        # a multiple of ``every`` passed (with steps_per_execution > 1 it can
        # fall inside a chunk of steps: the chunk's end logs it), or the end
        if step // self.every == self._logged and step != self.total_steps:
            return
        self._logged = step // self.every
        elapsed = max(time.time() - self._clock, 1e-9)
        speed = (f", {self.tokens_per_step * (step - self._from) / elapsed:,.0f} tokens/s"
                 if self.tokens_per_step else "")
        metrics = " ".join(f"{k} {float(v):.4f}" for k, v in (logs or {}).items())
        left = time_left(elapsed, step - self._from, self.total_steps - self._from)
        logger.info(f"step {step}/{self.total_steps}: {metrics} ({elapsed:.0f} s{speed}"
                    f"{', ' + left if left else ''})")
        if self.announce and left:
            self.announce = False
            total = elapsed / (step - self._from) * (self.total_steps - self._from)
            logger.info(f"at this speed the run takes about {duration(total)} in all on this "
                        f"machine ({cpu_name()}); later phases with longer sequences are "
                        "slower")
