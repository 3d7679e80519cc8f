"""The steps fine-tuning and distillation share: read, size, optimize, fit, score.

``finetune`` trains a task model on labelled rows; ``distill`` trains a
student on a teacher's scores. Both read the task files the same way (labels
from the training file, an optional validation share held out), take the
learning rate and batch size for the encoder's width when not given, train
with AdamW under warmup and linear decay, keep the best epoch, stop on a NaN
loss with advice, and score the eval rows with the task's metrics. Those
steps live here once.
"""

import dataclasses
import logging
import os

import keras

from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.model_folder import METRICS_CSV
from albert_keras.optimizers.layer_decay import layer_rate_scales
from albert_keras.optimizers.optimizer import build_optimizer
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.tasks.best_epoch import epoch_selector
from albert_keras.tasks.best_epoch import hold_out
from albert_keras.tasks.best_epoch import selection_report
from albert_keras.tasks.finetune_config import size_defaults
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.callbacks import ProgressLog

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class TaskSets:
    """The rows of one run: ``train``, and ``evaluation`` / ``validation``
    (``TaskData`` or None)."""

    train: object
    evaluation: object = None
    validation: object = None

    @property
    def labelled_eval(self):
        return self.evaluation is not None and self.evaluation.y is not None


def read_task_sets(task, spec, pieces, paths, validation_split, seed):
    """Reads the train, eval and validation files of a run.

    Args:
        task: the task unit (``albert_keras.tasks.registry``).
        spec: the ``TaskSpec``; a new run's labels come from the training file.
        pieces: the host tokenizer.
        paths: ``(train, eval or None, validation or None)`` file paths.
        validation_split: a share of the training rows held out to choose the
            best epoch on (0: none).
        seed: the hold-out's seed.

    Returns:
        ``(TaskSets, spec)`` with the spec the training file completed.
    """
    train_path, eval_path, validation_path = paths
    train, spec = task.read(train_path, spec, pieces)
    evaluation = task.read(eval_path, spec, pieces)[0] if eval_path else None
    validation = task.read(validation_path, spec, pieces)[0] if validation_path else None
    train, validation = hold_out(task, train, validation, validation_split, seed, train_path)
    return TaskSets(train, evaluation, validation), spec


def with_size_defaults(cfg, hidden_size):
    """``cfg`` with the learning rate and batch size for the encoder's width
    filled in where they are None (and said in one line)."""
    chosen = {k: v for k, v in size_defaults(hidden_size).items() if getattr(cfg, k) is None}
    if chosen:
        logger.info(f"hidden size {hidden_size}: "
                    + ", ".join(f"{k} {v}" for k, v in chosen.items()))
    return dataclasses.replace(cfg, **chosen)


def task_optimizer(cfg, encoder, total_steps):
    """AdamW with warmup and linear decay, layer-wise rate decay, clipping,
    and (when the config has it) an exponential moving average."""
    return make_optimizer(
        "adamw", learning_rate=cfg.learning_rate, total_steps=total_steps,
        warmup_steps=int(cfg.warmup_fraction * total_steps), weight_decay=cfg.weight_decay,
        clip_norm=1.0, lr_scales=layer_rate_scales(encoder, cfg.layer_decay),
        ema_momentum=getattr(cfg, "ema", None))


def fit_with_selection(model, dataset, run, folder, callbacks=()):
    """``fit`` with the run's callbacks; keeps the best epoch's weights.

    Args:
        model: the compiled model to train.
        dataset: the training ``tf.data.Dataset`` (it shuffles itself).
        run: ``(task, spec, sets, cfg, total_steps)``: what the epochs are
            scored and chosen by (``cfg.select_metric``, ``cfg.patience``,
            ``cfg.epochs``, and ``cfg.ema`` when the config has it).
        folder: where ``metrics.csv`` goes.
        callbacks: the caller's callbacks, after ours.

    Returns:
        ``(history, best)``; ``best`` is the epoch selector or None.

    Raises:
        RuntimeError: the loss became NaN (with the step and the advice).
    """
    task, spec, sets, cfg, total = run
    guard = NanGuard()
    chain = [guard, keras.callbacks.CSVLogger(os.path.join(folder, METRICS_CSV)),
             ProgressLog(total, every=50), *callbacks]
    best = epoch_selector(task, spec, sets.evaluation, sets.validation, cfg.select_metric,
                          cfg.patience, getattr(cfg, "length_buckets", True))
    if best is not None:
        chain.insert(1, best)
    if getattr(cfg, "ema", None):
        # Before the selector, so the epoch's score is the average's and the
        # weights it keeps are the average; Keras' callback swaps the raw
        # weights back in for the next epoch's steps.
        chain.insert(1, keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
    # one plain line per epoch (ProgressLog adds one per 50 steps); the
    # dataset shuffles itself, and Keras warns on shuffle=True with one
    build_optimizer(model)  # the training step is then traced once, not twice
    history = model.fit(dataset, epochs=cfg.epochs, shuffle=False, callbacks=chain, verbose=2)
    if guard.bad_step is not None:
        raise RuntimeError(f"loss became NaN at step {guard.bad_step}; lower --learning-rate")
    return history, best


def predict_outputs(model, data, batch_size=64, length_buckets=True):
    """The model's outputs on a ``TaskData``'s inputs, in row order; with
    ``length_buckets``, run in batches cut to their rows' lengths
    (``albert_keras.data.length_buckets``: the same outputs at every
    position a task reads)."""
    if length_buckets:
        return predict_in_buckets(model, data.x, batch_size)
    return model.predict(data.x, batch_size=batch_size, verbose=0)


def eval_scores(task, spec, model, sets, best, batch_size=64, length_buckets=True):
    """The task's metrics on the labelled eval rows (the chosen epoch's
    weights), with how the epoch was chosen."""
    result = {}
    if sets.labelled_eval:
        # the chosen epoch was scored on this file already (the same weights)
        scored = best is not None and best.name == "eval" and best.best_outputs is not None
        outputs = (best.best_outputs if scored else
                   predict_outputs(model, sets.evaluation, batch_size, length_buckets))
        result.update(task.score(spec, sets.evaluation, outputs))
    result.update(selection_report(best))
    return result
