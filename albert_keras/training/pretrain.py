"""Pretraining with ``model.fit``: data folder in, model folder out.

Phases: precision and strategy -> model (new, or resumed from the newest
checkpoint) -> distributed datasets -> ``fit`` with checkpoints, logs and
guards -> final evaluation on the held-out split -> the model folder.

The model folder is the hand-off to fine-tuning and export:
``pretrainer.keras``, ``encoder.keras``, ``spm.model``, ``config.json``
(``AlbertConfig``), ``metrics.json`` and ``train_config.json``, plus
``checkpoints/``, ``logs/`` (TensorBoard) and ``metrics.csv``.
"""

import logging
import dataclasses
import filecmp
import math
import os
import shutil
import time

import keras
import numpy as np
import tensorflow as tf

from albert_keras.data.reader import pretraining_dataset
from albert_keras.data.reader import verify_shards
from albert_keras.models.albert_encoder import AlbertEncoder
from albert_keras.models.albert_pretrainer import AlbertPretrainer
from albert_keras.presets import get_preset
from albert_keras.saving import load_model
from albert_keras.files import write_json
from albert_keras.tasks.model_folder import model_file
from albert_keras.training import split_features
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.callbacks import ResumableCheckpoint
from albert_keras.training.callbacks import TimeBudget
from albert_keras.training.callbacks import latest_checkpoint
from albert_keras.training.optimizer import make_optimizer
from albert_keras.training.strategy import is_chief
from albert_keras.training.strategy import is_multi_worker
from albert_keras.training.strategy import make_strategy

logger = logging.getLogger(__name__)

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


class TrainingError(RuntimeError):
    """Training stopped for a reason the user must act on."""


@dataclasses.dataclass
class PretrainConfig:
    """Every knob of a pretraining run (saved as ``train_config.json``).

    Args:
        preset: architecture preset (``vocab_size`` comes from the data).
        model_overrides: ``AlbertConfig`` fields to change, e.g.
            ``{"num_hidden_layers": 6}``.
        batch_size: global batch size (split over replicas).
        total_steps: optimizer steps.
        steps_per_epoch: steps between checkpoints (and log lines).
        learning_rate, warmup_steps, optimizer, weight_decay, clip_norm:
            see ``make_optimizer``.
        precision: ``float32``, ``mixed_bfloat16`` or ``mixed_float16``.
        strategy: see ``make_strategy``.
        steps_per_execution: steps per ``tf.function`` call (TPUs want many).
        dynamic_masking: re-mask every batch instead of the stored masks.
        eval_steps: validation batches after each epoch (0: none).
        seed: weights, shuffling and masking.
        deterministic: TF op determinism (bit-exact resume; slower).
        max_minutes: stop after the first epoch past this wall time.
        init: start from this model (continued pretraining): a model folder
            or ``.keras`` file of ours, e.g. a converted published checkpoint.
            Its architecture replaces ``preset`` and ``model_overrides``; its
            MLM and SOP heads are kept when it has them. The data must use
            its tokenizer.
        short_seq_data: a second data folder of shorter sequences, made with
            the same tokenizer, for the first ``short_seq_steps`` steps:
            BERT's two-phase recipe (most steps short, the rest at full
            length so every position embedding is trained). Attention cost
            grows with the square of the length, so short steps are cheaper,
            and each step still carries one SOP pair per example.
        short_seq_steps: steps on ``short_seq_data`` (a multiple of
            ``steps_per_epoch``, less than ``total_steps``); one learning-rate
            schedule and one optimizer state run through both phases.
    """

    preset: str = "albert_tiny"
    model_overrides: dict = dataclasses.field(default_factory=dict)
    batch_size: int = 64
    total_steps: int = 1000
    steps_per_epoch: int = 100
    learning_rate: float = 1.76e-3
    warmup_steps: int = 100
    optimizer: str = "lamb"
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    precision: str = "mixed_bfloat16"
    strategy: str = "auto"
    steps_per_execution: int = 10
    dynamic_masking: bool = True
    eval_steps: int = 10
    seed: int = 0
    deterministic: bool = False
    max_minutes: float = 0.0
    init: str = ""
    short_seq_data: str = ""
    short_seq_steps: int = 0

    def validate(self):
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, got {self.precision!r}")
        for name in ("batch_size", "total_steps", "steps_per_epoch", "steps_per_execution"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.warmup_steps > self.total_steps:
            raise ValueError("warmup_steps must not exceed total_steps")
        if bool(self.short_seq_data) != bool(self.short_seq_steps):
            raise ValueError("short_seq_data and short_seq_steps go together")
        if self.short_seq_steps and (
            self.short_seq_steps % self.steps_per_epoch
            or not 0 < self.short_seq_steps < self.total_steps
        ):
            raise ValueError(
                f"short_seq_steps ({self.short_seq_steps}) must be a multiple of "
                f"steps_per_epoch ({self.steps_per_epoch}) below total_steps "
                f"({self.total_steps})"
            )


def build_pretrainer(config, train_config, encoder=None):
    if encoder is None:
        encoder = AlbertEncoder(config)
    model = AlbertPretrainer(encoder, sop_dropout=0.0)  # the original has none
    model.compile(
        optimizer=make_optimizer(
            train_config.optimizer,
            learning_rate=train_config.learning_rate,
            total_steps=train_config.total_steps,
            warmup_steps=train_config.warmup_steps,
            weight_decay=train_config.weight_decay,
            clip_norm=train_config.clip_norm,
        ),
        steps_per_execution=train_config.steps_per_execution,
    )
    return model


def _init_source(init, vocab_size):
    """``(model, encoder)`` to continue pretraining from, loaded once.

    ``model`` is a pretrainer (its heads are kept) or an encoder; a folder's
    ``pretrainer.keras`` is preferred to its ``encoder.keras``.
    """
    path = model_file(init, ("pretrainer.keras", "encoder.keras"))
    model = load_model(path)
    encoder = getattr(model, "encoder", model)
    if not isinstance(encoder, AlbertEncoder):
        raise ValueError(f"{path}: {type(model).__name__} has no AlbertEncoder")
    if encoder.config.vocab_size != vocab_size:
        raise ValueError(
            f"{path}: vocabulary of {encoder.config.vocab_size} pieces, but the data "
            f"was made with {vocab_size}; create the data with this model's tokenizer"
        )
    return model, encoder


def _train_dataset(strategy, data_dir, train_config, skip_batches):
    replicas = strategy.num_replicas_in_sync
    if train_config.batch_size % replicas:
        raise ValueError(
            f"batch_size {train_config.batch_size} is not divisible by the "
            f"{replicas} replicas"
        )

    def train_fn(context):
        ds = pretraining_dataset(
            data_dir, "train",
            batch_size=context.get_per_replica_batch_size(train_config.batch_size),
            dynamic_masking=train_config.dynamic_masking,
            seed=train_config.seed, input_context=context, verify=False,
            skip_batches=skip_batches,
        )
        return ds.map(split_features)

    return strategy.distribute_datasets_from_function(train_fn)


def _eval_dataset(strategy, data_dir, manifest, train_config):
    if "eval" not in manifest["splits"] or not train_config.eval_steps:
        return None

    def eval_fn(context):
        ds = pretraining_dataset(
            data_dir, "eval",
            batch_size=context.get_per_replica_batch_size(train_config.batch_size),
            shuffle=False, seed=train_config.seed, input_context=context, verify=False,
        )
        # Finite, of exactly eval_steps batches: Keras rounds validation up to
        # whole executions of an endless dataset (10 batches for eval_steps 5),
        # and it drops the previous epoch's iterator before validating, which
        # for an endless one waited for its background prefetching (measured:
        # 2 to 7 s in some epochs at albert_tiny).
        # One element per local replica and step.
        local = context.num_replicas_in_sync // context.num_input_pipelines
        steps = train_config.eval_steps * local
        if context.num_replicas_in_sync > 1:
            # A distributed iterator reads one step ahead: with no margin it
            # raised StopIteration under MirroredStrategy.
            steps += local
        return ds.take(steps).map(split_features)

    return strategy.distribute_datasets_from_function(eval_fn)


def _short_seq_manifest(data_dir, manifest, train_config):
    """Checks the short-sequence data against the main data; its manifest."""
    short = train_config.short_seq_data
    short_manifest = verify_shards(short, "train")
    a = os.path.join(short, short_manifest["tokenizer"])
    b = os.path.join(data_dir, manifest["tokenizer"])
    if not filecmp.cmp(a, b, shallow=False):
        raise ValueError(f"{a}: not the tokenizer of {b}; make both data folders with one")
    short_len = short_manifest["config"]["max_seq_length"]
    if short_len >= manifest["config"]["max_seq_length"]:
        raise ValueError(
            f"{short}: sequences of {short_len} are not shorter than the "
            f"{manifest['config']['max_seq_length']} of {data_dir}"
        )
    return short_manifest


def most_frequent_token_baseline(data_dir):
    """Held-out MLM accuracy of always predicting the most frequent training label."""

    def labels(split):
        ds = pretraining_dataset(data_dir, split, batch_size=256, shuffle=False,
                                 repeat=False, drop_remainder=False, verify=False)
        return np.concatenate(
            [b["masked_ids"].numpy()[b["masked_weights"].numpy() > 0] for b in ds])

    most_frequent = int(np.argmax(np.bincount(labels("train"))))
    return float(np.mean(labels("eval") == most_frequent))


def evaluate_pretrainer(model, data_dir, split="eval", batch_size=64):
    """Masked-LM and SOP accuracy/loss over a whole split (every example once)."""
    ds = pretraining_dataset(data_dir, split, batch_size=batch_size, shuffle=False,
                             repeat=False, drop_remainder=False, verify=False)
    correct = total = sop_correct = sop_total = 0
    mlm_loss = sop_loss = 0.0
    if keras.backend.backend() == "tensorflow":
        forward = tf.function(lambda x: model(x, training=False))
    else:  # a compiled forward pass on JAX/torch, from numpy
        def forward(x):
            return model.predict_on_batch(keras.tree.map_structure(np.asarray, x))
    for batch in ds:
        x, y = split_features(batch)
        y = keras.tree.map_structure(np.asarray, y)
        out = keras.tree.map_structure(np.asarray, forward(x))
        w = y["masked_weights"]
        logits = out["mlm_logits"]
        labels = y["masked_ids"]
        log_probs = logits - _logsumexp(logits)
        picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
        mlm_loss -= float((picked * w).sum())
        correct += float(((logits.argmax(-1) == labels) * w).sum())
        total += float(w.sum())
        sop = out["sop_logits"]
        sop_labels = y["sop_label"]
        sop_log = sop - _logsumexp(sop)
        sop_loss -= float(np.take_along_axis(sop_log, sop_labels[:, None], -1).sum())
        sop_correct += int((sop.argmax(-1) == sop_labels).sum())
        sop_total += len(sop_labels)
    return {
        "masked_lm_accuracy": correct / max(total, 1),
        "masked_lm_loss": mlm_loss / max(total, 1),
        "sop_accuracy": sop_correct / max(sop_total, 1),
        "sop_loss": sop_loss / max(sop_total, 1),
        "masked_tokens": int(total),
        "examples": sop_total,
    }


def _logsumexp(x):
    m = x.max(-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(-1, keepdims=True))


def pretrain(data_dir, out_dir, train_config=None):
    """Pretrains ALBERT on a data folder; resumable; returns the final metrics.

    Running the same call again after a crash (or ``kill -9``) continues
    from the newest checkpoint in ``out_dir/checkpoints``.

    Args:
        data_dir: made by ``albert-keras data create``.
        out_dir: the model folder to write.
        train_config: a ``PretrainConfig``.

    Returns:
        The held-out metrics (``masked_lm_accuracy``, ``sop_accuracy``, ...)
        with the run's wall time and throughput.

    Example:
    >>> pretrain("data/", "model/", PretrainConfig(total_steps=500))  # doctest: +SKIP
    """
    train_config = train_config or PretrainConfig()
    train_config.validate()
    data_dir, out_dir = os.fspath(data_dir), os.fspath(out_dir)
    # Checked once here: the per-replica datasets below skip the checksums.
    manifest = verify_shards(data_dir, "train")
    if "eval" in manifest["splits"]:
        verify_shards(data_dir, "eval")
    seq_len = manifest["config"]["max_seq_length"]
    # (data folder, its sequence length, first epoch, end epoch) of each phase
    epochs = math.ceil(train_config.total_steps / train_config.steps_per_epoch)
    phases = [(data_dir, seq_len, 0, epochs)]
    if train_config.short_seq_steps:
        short_manifest = _short_seq_manifest(data_dir, manifest, train_config)
        switch = train_config.short_seq_steps // train_config.steps_per_epoch
        phases = [
            (train_config.short_seq_data, short_manifest["config"]["max_seq_length"],
             0, switch),
            (data_dir, seq_len, switch, epochs),
        ]

    # -- precision, determinism, strategy ------------------------------------------
    keras.mixed_precision.set_global_policy(train_config.precision)
    keras.utils.set_random_seed(train_config.seed)
    if train_config.deterministic and keras.backend.backend() == "tensorflow":
        # (JAX's CPU and GPU kernels are deterministic without a switch.)
        tf.config.experimental.enable_op_determinism()
    if train_config.steps_per_epoch % train_config.steps_per_execution:
        # Keras rounds an epoch up to whole executions, which would shift the
        # schedule and the resume position.
        spe = math.gcd(train_config.steps_per_epoch, train_config.steps_per_execution)
        logger.info(f"steps_per_execution set to {spe} to divide steps_per_epoch")
        train_config = dataclasses.replace(train_config, steps_per_execution=spe)
    strategy = make_strategy(train_config.strategy)
    if train_config.steps_per_execution > 1 and isinstance(
        strategy,
        (tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy),
    ):
        # Keras 3 fails under (MultiWorker)MirroredStrategy with more than one
        # step per execution ("You must feed a value for placeholder tensor",
        # keras-team/keras#19246, open). TPUStrategy is not affected.
        logger.info("steps_per_execution set to 1 under MirroredStrategy (keras#19246)")
        train_config = dataclasses.replace(train_config, steps_per_execution=1)

    # -- model: resumed, new, or continued from --init -------------------------------
    os.makedirs(out_dir, exist_ok=True)
    ckpt_dir = os.path.join(out_dir, "checkpoints")
    resume_path, initial_epoch = latest_checkpoint(ckpt_dir)
    source = None
    if resume_path:
        config = None  # the checkpoint holds the model (checked when it was new)
    elif train_config.init:
        source, source_encoder = _init_source(train_config.init, manifest["vocab_size"])
        config = source_encoder.config
    else:
        config = get_preset(train_config.preset, vocab_size=manifest["vocab_size"],
                            **train_config.model_overrides)
    longest = max(phase[1] for phase in phases)
    if config is not None and config.max_position_embeddings < longest:
        raise ValueError(
            f"max_position_embeddings {config.max_position_embeddings} is shorter "
            f"than the data's sequences ({longest})"
        )
    with strategy.scope():
        if resume_path:
            model = keras.saving.load_model(resume_path)
            logger.info(f"resuming from {resume_path} (epoch {initial_epoch})")
        elif source is not None:
            # Rebuilt here so the variables belong to the strategy (and the run's policy).
            encoder = AlbertEncoder(config, mask_value=source_encoder.mask_value)
            encoder.set_weights(source_encoder.get_weights())
            model = build_pretrainer(config, train_config, encoder=encoder)
            if isinstance(source, AlbertPretrainer):
                model.mlm_head.set_weights(source.mlm_head.get_weights())
                model.sop_head.set_weights(source.sop_head.get_weights())
            logger.info(f"starting from {train_config.init}")
        else:
            model = build_pretrainer(config, train_config)
    chief = is_chief(strategy)
    if chief:
        write_json(os.path.join(out_dir, "train_config.json"),
                   dataclasses.asdict(train_config))

    eval_ds = _eval_dataset(strategy, data_dir, manifest, train_config)

    # -- fit ----------------------------------------------------------------------
    nan_guard = NanGuard()
    budget = TimeBudget(train_config.max_minutes)
    callbacks = [nan_guard, budget]
    if chief:
        callbacks[1:1] = [
            ResumableCheckpoint(
                ckpt_dir, "val_masked_lm_accuracy" if eval_ds else "masked_lm_accuracy"),
            keras.callbacks.CSVLogger(os.path.join(out_dir, "metrics.csv"), append=True),
            keras.callbacks.TensorBoard(os.path.join(out_dir, "logs"), write_graph=False),
        ]
    started = time.time()
    tokens = 0
    for phase_data, phase_len, first, end in phases:
        if initial_epoch >= end or nan_guard.bad_step is not None or budget.stopped_early:
            continue
        begin = max(initial_epoch, first)
        if len(phases) > 1:
            logger.info(f"steps {begin * train_config.steps_per_epoch}-"
                f"{end * train_config.steps_per_epoch}: sequences of {phase_len} "
                f"from {phase_data}")
        # A resumed run continues with the batches an uninterrupted run would see.
        train_ds = _train_dataset(strategy, phase_data, train_config,
                                  (begin - first) * train_config.steps_per_epoch)
        before = int(model.optimizer.iterations.numpy())
        # A fresh step function per phase: traced for this phase's static shape
        # (TPUs need one), not relaxed to an unknown length by retracing.
        model.train_function = None
        try:
            model.fit(
                train_ds,
                epochs=end,
                initial_epoch=begin,
                steps_per_epoch=train_config.steps_per_epoch,
                validation_data=eval_ds,
                validation_steps=train_config.eval_steps if eval_ds else None,
                callbacks=callbacks,
                shuffle=False,  # the dataset shuffles itself
                verbose=2 if os.environ.get("CI") else "auto",
            )
        except tf.errors.OpError as e:
            if not is_multi_worker(strategy):
                raise
            # A lost peer surfaces as a failed collective (Unavailable,
            # DeadlineExceeded, Cancelled, ...) with pages of gRPC detail.
            newest, epoch = latest_checkpoint(ckpt_dir)
            where = (f"the newest checkpoint is {newest} (epoch {epoch})" if newest
                     else "no checkpoint was written yet")
            raise TrainingError(
                f"a worker was lost during training ({type(e).__name__}); {where}; "
                "run the same command on every worker to resume") from None
        tokens += (int(model.optimizer.iterations.numpy()) - before) * (
            train_config.batch_size * phase_len)
    wall = time.time() - started
    if nan_guard.bad_step is not None:
        raise TrainingError(
            f"the loss became NaN at step {nan_guard.bad_step}; stopped. The last "
            f"good checkpoint is in {ckpt_dir}. Lower --learning-rate or use "
            "--precision float32"
        )

    # -- final evaluation and the model folder ---------------------------------------
    if not chief:
        return {"steps": int(model.optimizer.iterations.numpy()), "chief": False}
    metrics = {}
    if "eval" in manifest["splits"]:
        metrics = evaluate_pretrainer(model, data_dir, "eval")
        metrics["most_frequent_token_accuracy"] = most_frequent_token_baseline(data_dir)
    metrics.update({
        "steps": int(model.optimizer.iterations.numpy()),
        "wall_seconds": round(wall, 1),
        "train_tokens": tokens,
        "train_tokens_per_second": round(tokens / max(wall, 1e-9), 1),
        "stopped_by_time_budget": budget.stopped_early,
        "precision": train_config.precision,
    })
    _export_folder(model, data_dir, out_dir, manifest)
    write_json(os.path.join(out_dir, "metrics.json"), metrics)
    return metrics


def _export_folder(model, data_dir, out_dir, manifest):
    from albert_keras.saving import save_model

    save_model(model, os.path.join(out_dir, "pretrainer.keras"), overwrite=True)
    save_model(model.encoder, os.path.join(out_dir, "encoder.keras"), overwrite=True)
    shutil.copyfile(os.path.join(data_dir, manifest["tokenizer"]),
                    os.path.join(out_dir, "spm.model"))
    model.config.to_json_file(os.path.join(out_dir, "config.json"))
