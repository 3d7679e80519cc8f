"""Pretraining with ``model.fit``: data folder in, model folder out.

Phases: precision and strategy -> model (new, or resumed from the newest
checkpoint) -> distributed datasets -> ``fit`` with checkpoints, logs and
guards -> final evaluation on the held-out split -> the model folder.

The model folder is the hand-off to fine-tuning and export:
``pretrainer.keras``, ``encoder.keras``, ``spm.model``, ``config.json``
(``AlbertConfig``), ``metrics.json`` and ``train_config.json``, plus
``checkpoints/``, ``logs/`` (TensorBoard) and ``metrics.csv``.
"""

import contextlib
import dataclasses
import logging
import math
import os
import time
import typing

import keras
import tensorflow as tf

from albert_keras.data.reader import read_manifest
from albert_keras.data.reader import verify_shards
from albert_keras.data.record_check import find_bad_record
from albert_keras.families import build_backbone
from albert_keras.files import read_json
from albert_keras.files import removed_on_failure
from albert_keras.files import write_json
from albert_keras.models.backbone import rebuilt
from albert_keras.options import name_of
from albert_keras.precision import resolve_precision
from albert_keras.presets import get_preset
from albert_keras.sources.folder_writing import write_pretraining_folder
from albert_keras.sources.layout import CHECKPOINTS
from albert_keras.sources.layout import LOGS
from albert_keras.sources.layout import METRICS_CSV
from albert_keras.sources.layout import METRICS_FILE
from albert_keras.sources.layout import TRAIN_CONFIG_FILE
from albert_keras.text.registry import load_tokenizer
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.callbacks import ProgressLog
from albert_keras.training.callbacks import ResumableCheckpoint
from albert_keras.training.callbacks import StepLimit
from albert_keras.training.callbacks import TimeBudget
from albert_keras.training.callbacks import interactive
from albert_keras.training.callbacks import latest_checkpoint
from albert_keras.training.callbacks import run_step
from albert_keras.training.datasets import eval_dataset
from albert_keras.training.datasets import short_seq_manifest
from albert_keras.training.objectives import get_objective
from albert_keras.training.pretrain_config import SAFE_ON_RESUME
from albert_keras.training.pretrain_config import PretrainConfig
from albert_keras.training.pretrain_config import resume_conflicts
from albert_keras.training.pretrainer import Pretrainer
from albert_keras.training.pretrainer import build_objective_model
from albert_keras.training.pretrainer import init_source
from albert_keras.training.strategy import check_layout
from albert_keras.training.strategy import is_chief
from albert_keras.training.strategy import is_multi_worker
from albert_keras.training.strategy import make_strategy
from albert_keras.training.strategy import where_it_runs

logger = logging.getLogger(__name__)

class TrainingError(RuntimeError):
    """Training stopped for a reason the user must act on."""


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
    out_dir = os.fspath(out_dir)
    ckpt_dir = os.path.join(out_dir, CHECKPOINTS)
    # a run that fails before its first checkpoint leaves no folder behind
    # The run sets Keras' global dtype policy (its --precision); the caller's
    # comes back afterwards, or a model built next in the same process (a
    # fine-tuning head, a test) would silently compute in bfloat16.
    caller_policy = keras.mixed_precision.global_policy()
    try:
        with removed_on_failure(out_dir,
                                keep=lambda: latest_checkpoint(ckpt_dir)[0] is not None):
            return _pretrain(data_dir, out_dir, train_config)
    finally:
        keras.mixed_precision.set_global_policy(caller_policy)


def _pretrain(data_dir, out_dir, train_config):
    run = _plan(data_dir, out_dir, train_config)
    strategy, precision = _runtime(run)
    model, initial_epoch = _model(run, strategy)
    _plan_stages(run, model)
    chief = is_chief(strategy)
    if chief:
        write_json(os.path.join(run.out_dir, TRAIN_CONFIG_FILE),
                   {**dataclasses.asdict(run.config), "objective": run.objective.name})
    model, fitted = _fit(run, model, strategy, initial_epoch, chief)
    if not chief:
        return {"steps": run_step(model), "chief": False}
    return _finish(run, model, fitted, precision)


class Phase(typing.NamedTuple):
    """A stretch of the run on one data folder (and, for a staged objective,
    one stage's model): epochs ``first`` up to ``end``."""

    data_dir: str
    seq_len: int
    first: int
    end: int
    stage: typing.Optional[int] = None
    # the epoch at which this data folder was at its first batch
    data_start: int = 0


@dataclasses.dataclass
class _Run:
    """What a pretraining run works from, settled before anything is built."""

    data_dir: str
    out_dir: str
    config: PretrainConfig
    manifest: dict
    objective: object
    phases: list  # of Phase

    @property
    def ckpt_dir(self):
        return os.path.join(self.out_dir, CHECKPOINTS)


def _plan(data_dir, out_dir, train_config):
    """The settings, the checked data and the phases of the run."""
    train_config = (train_config or PretrainConfig()).with_defaults()
    train_config.validate()
    data_dir, out_dir = os.fspath(data_dir), os.fspath(out_dir)
    # Checked once here: the per-replica datasets below skip the checksums.
    manifest = verify_shards(data_dir, "train")
    if "eval" in manifest["splits"]:
        verify_shards(data_dir, "eval")
    seq_len = manifest["config"]["max_seq_length"]
    objective = get_objective(train_config.objective, manifest, train_config)
    epochs = math.ceil(train_config.total_steps / train_config.steps_per_epoch)
    phases = [Phase(data_dir, seq_len, 0, epochs)]
    if train_config.short_seq_steps:
        short_manifest = short_seq_manifest(data_dir, manifest, train_config.short_seq_data)
        switch = train_config.short_seq_steps // train_config.steps_per_epoch
        phases = [
            Phase(train_config.short_seq_data, short_manifest["config"]["max_seq_length"],
                  0, switch),
            Phase(data_dir, seq_len, switch, epochs, data_start=switch),
        ]
    return _Run(data_dir, out_dir, train_config, manifest, objective, phases)


def _runtime(run):
    """Seeds, determinism, steps per execution, the strategy and the precision
    (``run.config`` takes the steps per execution the runtime allows)."""
    keras.utils.set_random_seed(run.config.seed)
    if keras.backend.backend() != "tensorflow":
        logger.info(f"the model runs on {keras.backend.backend()}; the input pipeline "
                    "is tf.data, on TensorFlow, on every backend")
    if run.config.deterministic and keras.backend.backend() == "tensorflow":
        # (JAX's CPU and GPU kernels are deterministic without a switch.)
        tf.config.experimental.enable_op_determinism()
    c = run.config
    spe = math.gcd(c.steps_per_epoch, c.steps_per_execution, c.total_steps)
    if spe != c.steps_per_execution:
        # Keras rounds an epoch up to whole executions, which would shift the
        # schedule and the resume position; and the run must be able to stop
        # on its last step when that is not at the end of an epoch.
        logger.info(f"steps_per_execution set to {spe} to divide steps_per_epoch "
                    f"({c.steps_per_epoch}) and the run's steps ({c.total_steps})")
        run.config = dataclasses.replace(c, steps_per_execution=spe)
    strategy = make_strategy(run.config.strategy)
    if run.config.steps_per_execution > 1 and isinstance(
        strategy,
        (tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy),
    ):
        # Keras 3 fails under (MultiWorker)MirroredStrategy with more than one
        # step per execution ("You must feed a value for placeholder tensor",
        # keras-team/keras#19246, open). TPUStrategy is not affected.
        logger.info("steps_per_execution set to 1 under MirroredStrategy (keras#19246)")
        run.config = dataclasses.replace(run.config, steps_per_execution=1)
    if run.config.steps_per_execution > 1 and keras.backend.backend() == "torch":
        # Keras' torch trainer runs one step per call and refuses more.
        logger.info("steps_per_execution set to 1 on the torch backend")
        run.config = dataclasses.replace(run.config, steps_per_execution=1)
    # After the strategy: a TPU's devices are listed only once it is connected.
    precision = resolve_precision(run.config.precision)
    keras.mixed_precision.set_global_policy(precision)
    logger.info(where_it_runs(strategy, precision, run.config.batch_size))
    return strategy, precision


def _model(run, strategy):
    """``(model, initial epoch)``: resumed from the newest checkpoint, continued
    from ``--init``, or new from the preset."""
    os.makedirs(run.out_dir, exist_ok=True)
    resume_path, initial_epoch = latest_checkpoint(run.ckpt_dir)
    _check_resume(run, resume_path)
    source = config = None
    if resume_path:
        pass  # the checkpoint holds the model (checked when it was new)
    elif run.config.init:
        source, source_encoder = init_source(run.config.init, run.manifest["vocab_size"])
        config = source_encoder.config
    else:
        config = get_preset(run.config.preset, vocab_size=run.manifest["vocab_size"],
                            **run.config.model_overrides)
    longest = max(phase[1] for phase in run.phases)
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
            encoder = rebuilt(source_encoder, dtype=None, output_hidden_states=False,
                              quantize_aware=False, cls_only=False)
            encoder.set_weights(source_encoder.get_weights())
            model = build_objective_model(run.objective, encoder, run.config)
            run.objective.continue_from(source, model)
            logger.info(f"starting from {run.config.init}")
        else:
            model = build_objective_model(run.objective, build_backbone(config), run.config)
    split = check_layout(strategy, model)
    if split is not None:
        logger.info(f"{len(split)} of {len(model.weights)} weights split over the model axis")
    return model, initial_epoch


def _plan_stages(run, model):
    """A staged objective's stages as the run's phases, on the one data
    folder read straight through (checked once the model says how many)."""
    stages = run.objective.stages(model)
    if stages is None:
        return
    spe, seq_len = run.config.steps_per_epoch, run.phases[0].seq_len
    phases, first = [], 0
    for stage, steps in stages:
        phases.append(Phase(run.data_dir, seq_len, first, first + steps // spe, stage))
        first += steps // spe
    run.phases = phases


def _check_resume(run, resume_path):
    """A run is resumed only with its own settings."""
    recorded_path = os.path.join(run.out_dir, TRAIN_CONFIG_FILE)
    if not (resume_path and os.path.isfile(recorded_path)):
        return
    conflicts = resume_conflicts(read_json(recorded_path), run.config, run.objective.name)
    if conflicts:
        raise TrainingError(
            f"{run.out_dir} holds a run started with other settings: {'; '.join(conflicts)}. "
            "Resume with the run's own settings, or pass --overwrite to start again "
            f"(safe to change when resuming: "
            f"{', '.join(name_of(PretrainConfig, k) for k in SAFE_ON_RESUME)})")


def _callbacks(run, chief, eval_ds):
    nan_guard = NanGuard()
    budget = TimeBudget(run.config.max_minutes)
    # the last epoch ends at total_steps when that is not a whole epoch
    callbacks = [nan_guard, budget, StepLimit(run.config.total_steps)]
    if chief:
        callbacks[1:1] = [
            ResumableCheckpoint(run.ckpt_dir, run.objective.monitor_for(eval_ds is not None)),
            keras.callbacks.CSVLogger(os.path.join(run.out_dir, METRICS_CSV), append=True),
            keras.callbacks.TensorBoard(os.path.join(run.out_dir, LOGS), write_graph=False),
        ]
    return callbacks, nan_guard, budget


def _fit(run, model, strategy, initial_epoch, chief):
    """Trains every phase not done yet, through ``Pretrainer.train_phase`` (the
    training call Python's ``Pretrainer.fit`` makes); ``(the model at the end,
    {"tokens", "wall", "start_step", "stopped_early"} of this call)``."""
    c = run.config
    eval_ds = eval_dataset(strategy, run.data_dir, run.manifest, c, run.objective)
    callbacks, nan_guard, budget = _callbacks(run, chief, eval_ds)
    live = interactive() and not os.environ.get("CI")
    started, tokens = time.time(), 0
    start_step = run_step(model)  # > 0 when resumed
    announce = True  # the first phase run says what the whole run will take
    for number, phase in enumerate(run.phases, 1):
        phase_data, phase_len, first, end = phase.data_dir, phase.seq_len, phase.first, phase.end
        if initial_epoch >= end or nan_guard.bad_step is not None or budget.stopped_early:
            continue
        begin = max(initial_epoch, first)
        if phase.stage is not None:
            with strategy.scope():
                model = run.objective.model_for_stage(model, phase.stage, first * c.steps_per_epoch,
                                                      c.steps_per_execution)
        pretrainer = Pretrainer.around(model, run.objective, c, strategy)
        if len(run.phases) > 1:
            # Keras counts epochs to the end of the fit it runs: said, so
            # "Epoch 1/14" then "Epoch 15/16" reads as one run of 16
            logger.info(f"phase {number}/{len(run.phases)}{_stage_name(phase, run)}: steps {begin * c.steps_per_epoch}-"
                        f"{min(end * c.steps_per_epoch, c.total_steps)}, sequences of "
                        f"{phase_len} from {phase_data} (epochs {begin + 1}-{end} of the "
                        f"run's {run.phases[-1].end})")
        before = run_step(model)
        progress = [] if live else [ProgressLog(c.total_steps, c.log_every,
                                                c.batch_size * phase_len, announce=announce)]
        announce = False
        with _named_failures(run, phase_data, strategy):
            # A resumed run continues with the batches an uninterrupted run would see.
            pretrainer.train_phase(
                phase_data, end, initial_epoch=begin,
                skip_batches=(begin - phase.data_start) * c.steps_per_epoch,
                validation_data=eval_ds, validation_steps=c.eval_steps if eval_ds else None,
                callbacks=callbacks + progress, verbose="auto" if live else 2)
        tokens += (run_step(model) - before) * c.batch_size * phase_len
    if nan_guard.bad_step is not None:
        raise TrainingError(
            f"the loss became NaN at step {nan_guard.bad_step}; stopped. The last "
            f"good checkpoint is in {run.ckpt_dir}. Lower --learning-rate or use "
            "--precision float32"
        )
    return model, {"tokens": tokens, "wall": time.time() - started, "start_step": start_step,
                   "stopped_early": budget.stopped_early}


def _stage_name(phase, run):
    if phase.stage is None:
        return ""
    last = run.phases[-1].stage
    return (" (masked LM on the teacher's soft targets)" if phase.stage == last
            else f" (student layer {phase.stage + 1} of {last})")


@contextlib.contextmanager
def _named_failures(run, phase_data, strategy):
    """A bad record or a lost worker during training, in one line."""
    try:
        yield
    except tf.errors.OpError as e:
        if isinstance(e, (tf.errors.InvalidArgumentError, tf.errors.DataLossError)):
            # a record the first-records check could not see: name it
            bad = find_bad_record(phase_data, read_manifest(phase_data), "train")
            if bad is not None:
                raise TrainingError(str(bad)) from None
        if not is_multi_worker(strategy):
            raise
        # A lost peer surfaces as a failed collective (Unavailable,
        # DeadlineExceeded, Cancelled, ...) with pages of gRPC detail.
        newest, epoch = latest_checkpoint(run.ckpt_dir)
        where = (f"the newest checkpoint is {newest} (epoch {epoch})" if newest
                 else "no checkpoint was written yet")
        raise TrainingError(
            f"a worker was lost during training ({type(e).__name__}); {where}; "
            "run the same command on every worker to resume") from None


def _finish(run, model, fitted, precision):
    """The held-out evaluation, the model folder and the run's metrics."""
    metrics = {}
    if "eval" in run.manifest["splits"]:
        metrics = run.objective.evaluate(model, run.data_dir, "eval")
        metrics.update(run.objective.baselines(run.data_dir))
    steps = run_step(model)
    # every token of the run, a resumed run's earlier part included (each
    # phase's steps x batch x its sequence length); the speed is this call's
    spe, batch = run.config.steps_per_epoch, run.config.batch_size
    run_tokens = sum(max(0, min(steps, p.end * spe) - p.first * spe) * batch * p.seq_len
                     for p in run.phases)
    metrics.update({
        "steps": steps,
        "steps_this_call": steps - fitted["start_step"],
        "wall_seconds": round(fitted["wall"], 1),
        "train_tokens": run_tokens,
        "train_tokens_per_second": round(fitted["tokens"] / max(fitted["wall"], 1e-9), 1),
        "stopped_by_time_budget": fitted["stopped_early"],
        "precision": precision,
        "objective": run.objective.name,
    })
    write_pretraining_folder(run.out_dir, run.objective.saved_model(model), load_tokenizer(
        os.path.join(run.data_dir, run.manifest["tokenizer"])))
    write_json(os.path.join(run.out_dir, METRICS_FILE), metrics)
    return metrics
