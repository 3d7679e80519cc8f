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
import numpy as np
import tensorflow as tf

from albert_keras.data.length_buckets import ENCODER_INPUTS
from albert_keras.data.length_buckets import bucketed_dataset
from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.optimizers.layer_decay import layer_rate_scales
from albert_keras.optimizers.optimizer import build_optimizer
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.options import name_of
from albert_keras.sources.layout import METRICS_CSV
from albert_keras.tasks.best_epoch import epoch_selector
from albert_keras.tasks.best_epoch import hold_out
from albert_keras.tasks.best_epoch import selection_report
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.finetune_config import size_defaults
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task_fields import task_field_names
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.callbacks import ProgressLog
from albert_keras.training.step_clock import StepClock

logger = logging.getLogger(__name__)


@dataclasses.dataclass
class FinetuneRun:
    """What ``finetune`` was asked: the ``init`` source, the ``paths``
    (train, eval, validation), ``out_dir``, the checked ``cfg``, a
    ``tokenizer`` file, ``overwrite`` and the caller's ``callbacks``: what a
    task that runs its own fine-tuning (``Task.finetune``) is given."""

    init: str
    paths: tuple
    out_dir: str
    cfg: object
    tokenizer: str = None
    overwrite: bool = False
    callbacks: tuple = ()


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


def task_spec(cfg):
    """The ``TaskSpec`` of a new run; the training file fills in its labels."""
    return get_task(cfg.task).new_spec(**{k: getattr(cfg, k) for k in task_field_names()})


def truncation_report(data, sequence_length, max_length=None, what="training"):
    """How many inputs ``sequence_length`` cuts, logged as a warning.

    A cut input loses its end silently, and a long-text task can lose much of
    its signal that way (State of the Union paragraphs: a quarter are longer
    than 128 pieces). The warning names the length that keeps 95% whole.

    Args:
        data: the training ``TaskData``; its ``extra["lengths"]`` holds each
            input's whole length (set by the tasks that pack whole texts).
        sequence_length: the packed length.
        max_length: the longest input the model reads (its
            ``max_position_embeddings``); when keeping 95% whole needs more,
            the warning says so instead of suggesting a length the run would
            refuse.
        what: which inputs, for the warning (``training``; ``predicted``).

    Returns:
        ``{"train_inputs_cut": n, "train_length_p95": pieces}``, or ``{}``
        when the task does not report lengths.
    """
    lengths = data.extra.get("lengths")
    if lengths is None or not len(lengths):
        return {}
    cut = int((lengths > sequence_length).sum())
    p95 = int(np.ceil(np.percentile(lengths, 95)))
    if cut:
        advice = f"{p95} pieces keep 95% of the inputs whole"
        if max_length is not None and p95 > max_length:
            advice += f", more than the model's {max_length} (max_position_embeddings)"
        logger.warning(f"{cut} of {len(lengths)} {what} inputs ({cut / len(lengths):.0%}) "
                       f"are longer than sequence_length {sequence_length} pieces and are "
                       f"cut; {advice}")
    return {"train_inputs_cut": cut, "train_length_p95": p95}


def make_dataset(data, batch_size, shuffle, seed, length_buckets=None):
    """The batches of ``data``: with ``length_buckets`` (a ``Task``, whose
    ``per_token_targets`` are cut too), shuffled length-bucketed batches
    (``albert_keras.data.length_buckets``); else every row at full length."""
    parts = (data.x, data.y) if data.sample_weight is None else (data.x, data.y, data.sample_weight)
    if length_buckets is not None:
        return bucketed_dataset(parts, batch_size, seed,
                                ENCODER_INPUTS + tuple(length_buckets.per_token_targets))
    ds = tf.data.Dataset.from_tensor_slices(parts)
    if shuffle:
        ds = ds.shuffle(len(data), seed=seed, reshuffle_each_iteration=True)
    # Whole batches only when training (static shapes for TPUs), if there
    # is at least one.
    return ds.batch(batch_size, drop_remainder=shuffle and len(data) >= batch_size).prefetch(2)


def bucketed(cfg):
    """Whether training batches are bucketed by length: asked for, and not on
    a TPU, whose compiled step needs one static shape for the whole run."""
    if cfg.length_buckets and getattr(cfg, "strategy", None) == "tpu":
        logger.info("on a TPU every batch is padded to --seq-length (length buckets off)")
        return False
    return cfg.length_buckets


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


def fit_with_selection(model, dataset, run, folder=None, callbacks=(), fit=None, verbose=2):  # noqa: PLR0913 (the run, and how its fit is called and shown)
    """``fit`` with the run's callbacks; keeps the best epoch's weights.

    Args:
        model: the compiled model to train.
        dataset: the training ``tf.data.Dataset`` (it shuffles itself).
        run: ``(task, spec, sets, cfg, total_steps)``: what the epochs are
            scored and chosen by (``cfg.select_metric``, ``cfg.patience``,
            ``cfg.epochs``, and ``cfg.ema`` when the config has it).
        folder: where ``metrics.csv`` goes (None: nowhere).
        callbacks: the caller's callbacks, after ours.
        fit: the fit to call (default ``model.fit``; a task object passes
            Keras' own, as its ``fit`` reads raw text).
        verbose: Keras' ``verbose``.

    Returns:
        ``(history, best)``; ``best`` is the epoch selector or None;
        ``history.timing`` is ``StepClock.timing()``.

    Raises:
        RuntimeError: the loss became NaN (with the step and the advice).
    """
    task, spec, sets, cfg, total = run
    guard, clock = NanGuard(), StepClock()
    chain = [guard, clock, ProgressLog(total, every=50), *callbacks]
    if folder is not None:
        chain.insert(1, keras.callbacks.CSVLogger(os.path.join(folder, METRICS_CSV)))
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
    history = (fit or model.fit)(dataset, epochs=cfg.epochs, shuffle=False, callbacks=chain,
                                 verbose=verbose)
    history.timing = clock.timing()  # metrics.json reports it
    if guard.bad_step is not None:
        raise RuntimeError(f"loss became NaN at step {guard.bad_step}; lower "
                           f"{name_of(FinetuneConfig, 'learning_rate')}")
    return history, best


def predict_outputs(model, data, batch_size=64, length_buckets=True, precision="auto",  # noqa: PLR0913 (the rows, and how they run)
                    runner=None):
    """The model's outputs on a ``TaskData``'s inputs, in row order; with
    ``length_buckets``, run in batches cut to their rows' lengths
    (``albert_keras.data.length_buckets``: the same outputs at every
    position a task reads), in the precision ``batch_precision`` gives
    the call (``float32``: a bf16 model's batches too); ``runner``: what
    runs a batch instead of the Keras model (a ``LiteRTRunner``)."""
    if length_buckets:
        return predict_in_buckets(model, data.x, batch_size, precision, runner)
    if runner is not None:  # it runs the rows one at a time: no batches to make
        return runner(data.x)
    return model.predict(data.x, batch_size=batch_size, verbose=0)


def eval_scores(task, spec, model, sets, best, batch_size=64, length_buckets=True):
    """The task's metrics on the labelled eval rows (the chosen epoch's
    weights), with how the epoch was chosen."""
    result = {}
    if sets.labelled_eval:
        # the chosen epoch was scored on this file already (the same weights)
        scored = best is not None and best.name == "eval" and best.best_outputs is not None
        outputs = (best.best_outputs if scored else
                   task.outputs(model, sets.evaluation, batch_size, length_buckets))
        result.update(task.score(spec, sets.evaluation, outputs))
    result.update(selection_report(best))
    return result
