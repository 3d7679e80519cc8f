"""Fine-tuning with ``model.fit``: task files in, model folder out.

Phases: read and check the files (labels discovered on the training file)
-> features -> task model on the ``--init`` encoder -> ``fit`` with AdamW,
warmup and linear decay -> evaluation with the task's metrics -> the model
folder (``model.keras``, ``spm.model``, ``task.json``, ``metrics.json``,
``train_config.json``, ``metrics.csv``), written under a temporary name and
renamed at the end.
"""

import dataclasses
import logging
import os

import keras
import numpy as np
import tensorflow as tf

from albert_keras.data.length_buckets import ENCODER_INPUTS
from albert_keras.data.length_buckets import bucketed_dataset
from albert_keras.files import check_output
from albert_keras.files import writing_folder
from albert_keras.model_folder import ModelSource
from albert_keras.model_folder import write_task_folder
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task_fields import task_field_names
from albert_keras.tasks.task_run import eval_scores
from albert_keras.tasks.task_run import fit_with_selection
from albert_keras.tasks.task_run import read_task_sets
from albert_keras.tasks.task_run import task_optimizer
from albert_keras.tasks.task_run import with_size_defaults
from albert_keras.tasks.tokenizer_fit import check_tokenizer_fit
from albert_keras.training.strategy import make_strategy
from albert_keras.training.unused_weights import unused_pooler_quiet

logger = logging.getLogger(__name__)

# -- spec and evaluation -----------------------------------------------------------------

def task_spec(cfg):
    """The ``TaskSpec`` of a new run; the training file fills in its labels."""
    return get_task(cfg.task).new_spec(**{k: getattr(cfg, k) for k in task_field_names()})


def truncation_report(data, sequence_length, max_length=None):
    """How many training inputs ``sequence_length`` cuts, logged as a warning.

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
        logger.warning(f"{cut} of {len(lengths)} training inputs ({cut / len(lengths):.0%}) "
                       f"are longer than sequence_length {sequence_length} pieces and are "
                       f"cut; {advice}")
    return {"train_inputs_cut": cut, "train_length_p95": p95}


# -- the run -------------------------------------------------------------------------------


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


def finetune(init, train_path, eval_path, out_dir, cfg=None, tokenizer=None, overwrite=False,  # noqa: PLR0913 (the command's files and flags, as the CLI and HF's Trainer take them)
             callbacks=(), validation_path=None):
    """Fine-tunes the encoder of ``init`` on a task; returns the eval metrics.

    Args:
        init: a pretraining (or fine-tuned) model folder, a published HF
            or TF1 checkpoint folder, or a ``.keras`` file with ``tokenizer``
            given.
        train_path: the training task file.
        eval_path: the eval task file, or None. With a labelled ``eval_path``
            and no ``validation_path``, every epoch is scored on the eval file
            and the best one is kept, so the reported score is optimistic.
        out_dir: the model folder to write.
        cfg: a ``FinetuneConfig``.
        tokenizer: a tokenizer file (default: the one in ``init``).
        overwrite: replace an existing ``out_dir``.
        callbacks: more Keras callbacks for ``fit`` (after ours, so they see
            the epoch's evaluation).
        validation_path: a labelled task file the best epoch is chosen on
            instead of ``eval_path``, which is then scored once, with the
            chosen weights (an unbiased estimate, as with a separate
            validation set in HF's Trainer). ``cfg.validation_split`` holds
            out a share of ``train_path`` for the same purpose instead.

    Example:
    >>> finetune("runs/pretrain", "train.csv", "eval.csv", "runs/cls")  # doctest: +SKIP
    """
    cfg = cfg or FinetuneConfig()
    cfg.validate()
    paths = (train_path, eval_path, validation_path)
    check_output(out_dir, [init, *paths, tokenizer], overwrite, folder=True)
    keras.utils.set_random_seed(cfg.seed)
    source = ModelSource(init, tokenizer)  # the one reader of init
    task = get_task(cfg.task)
    sets, spec = read_task_sets(task, task_spec(cfg), source.tokenizer, paths,
                                cfg.validation_split, cfg.seed)
    _log_rows(cfg.task, sets, spec)
    with make_strategy(cfg.strategy).scope():
        model, cfg, total, cut = _task_model(source, task, spec, sets, cfg, train_path)
    with writing_folder(out_dir) as tmp:
        with unused_pooler_quiet():  # tagging and QA read no pooler
            history, best = fit_with_selection(
                model, make_dataset(sets.train, cfg.batch_size, True, cfg.seed,
                                    task if _bucketed(cfg) else None),
                (task, spec, sets, cfg, total), tmp, callbacks)
        result = {"train_loss": float(history.history["loss"][-1]), **cut}
        if cfg.validation_split:
            result.update({f"{name}_examples": int(task.example_of_rows(part).max()) + 1
                           for name, part in (("train", sets.train),
                                              ("validation", sets.validation))})
        result.update(eval_scores(task, spec, model, sets, best,
                                  length_buckets=cfg.length_buckets))
        write_task_folder(
            tmp, model, source.tokenizer, spec.to_json(), result,
            {**dataclasses.asdict(cfg), "init": os.path.abspath(init),
             **{name: os.path.abspath(path) if path else None
                for name, path in zip(("train", "eval", "validation"), paths)}})
    return result


def _bucketed(cfg):
    """Whether training batches are bucketed by length: asked for, and not on
    a TPU, whose compiled step needs one static shape for the whole run."""
    if cfg.length_buckets and cfg.strategy == "tpu":
        logger.info("on a TPU every batch is padded to --seq-length (length buckets off)")
        return False
    return cfg.length_buckets


def _log_rows(task_name, sets, spec):
    logger.info(f"{task_name}: {len(sets.train)} training rows"
                + (f", {len(sets.evaluation)} eval rows" if sets.evaluation else "")
                + (f", {len(sets.validation)} validation rows" if sets.validation else "")
                + (f", labels {list(spec.labels)}"
                   if spec.labels and len(spec.labels) <= 20 else ""))


def _task_model(source, task, spec, sets, cfg, train_path):
    """The compiled task model on the source's encoder, the config with the
    width's defaults and the head's choices, the step count, and the
    truncation report."""
    encoder = source.encoder(dtype=cfg.precision, from_scratch=cfg.from_scratch,
                             dropout=cfg.encoder_dropout)
    pieces = source.tokenizer
    config = encoder.config
    cfg = with_size_defaults(cfg, config.hidden_size)
    total = max(1, len(sets.train) // cfg.batch_size) * cfg.epochs
    check_tokenizer_fit(pieces, config.vocab_size, sets.train.x["token_ids"],
                        sets.train.x["padding_mask"], train_path)
    if cfg.sequence_length > config.max_position_embeddings:
        raise ValueError(f"sequence_length {cfg.sequence_length} exceeds the model's "
                         f"max_position_embeddings {config.max_position_embeddings}")
    cut = truncation_report(sets.train, cfg.sequence_length, config.max_position_embeddings)
    options = task.head_options(cfg, source)
    if options:
        cfg = dataclasses.replace(cfg, **options)
        logger.info("head: " + ", ".join(f"{k} {v}" for k, v in options.items()))
    model = task.build_model(spec, encoder, cfg.dropout, **options)
    model.compile(optimizer=task_optimizer(cfg, encoder, total), **task.compile_args(spec))
    return model, cfg, total, cut
