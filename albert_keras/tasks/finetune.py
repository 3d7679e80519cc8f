"""Fine-tuning with ``model.fit``: task files in, model folder out.

Phases: read and check the files (labels discovered on the training file)
-> features -> task model on the ``--init`` encoder -> ``fit`` with AdamW,
warmup and linear decay -> evaluation with the task's metrics -> the model
folder (``model.keras``, ``spm.model``, ``task.json``, ``metrics.json``,
``train_config.json``, ``metrics.csv``), written under a temporary name and
renamed at the end.
"""

import dataclasses
import json
import logging
import os

import keras
import numpy as np
import tensorflow as tf

from albert_keras.config import CLASSIFIER_POOLINGS
from albert_keras.files import check_output
from albert_keras.files import writing_folder
from albert_keras.model_folder import METRICS_CSV
from albert_keras.model_folder import TRAIN_CONFIG_FILE
from albert_keras.model_folder import folder_of
from albert_keras.model_folder import load_encoder
from albert_keras.model_folder import read_tokenizer
from albert_keras.model_folder import write_task_folder
from albert_keras.optimizers.layer_decay import layer_rate_scales
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.tasks.best_epoch import epoch_selector
from albert_keras.tasks.best_epoch import hold_out
from albert_keras.tasks.best_epoch import selection_report
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.finetune_config import size_defaults
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.tokenizer_fit import check_tokenizer_fit
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.callbacks import ProgressLog
from albert_keras.training.strategy import make_strategy
from albert_keras.training.unused_weights import unused_pooler_quiet

logger = logging.getLogger(__name__)

# -- spec and evaluation -----------------------------------------------------------------

SPEC_FIELDS = ("sequence_length", "truncate", "regression", "text_column", "text_pair_column",
               "label_column", "context_column", "choices_column", "question_column",
               "stride", "max_question_length", "max_answer_length", "n_best",
               "null_threshold", "version_2")


def task_spec(cfg):
    """The ``TaskSpec`` of a new run; the training file fills in its labels."""
    return get_task(cfg.task).new_spec(**{k: getattr(cfg, k) for k in SPEC_FIELDS})


def resolve_pooling(pooling, init):
    """``auto`` pooling for a classifier on ``init``: ``mean`` when the model
    folder was pretrained here without a sentence task, else ``pooled``.

    Masked LM alone (``mlm``) and ``rtd`` without ``rtd_sop`` never train the
    ``[CLS]`` row for a sentence task nor the pooler at all (it gets no
    gradient), so the head reads the mean over tokens instead. A fine-tuned
    folder keeps the pooling it was trained with; a published checkpoint,
    whose pooler its sentence task trained, reads the pooler as the original.
    """
    if pooling != "auto":
        return pooling
    path = os.path.join(folder_of(init), TRAIN_CONFIG_FILE)
    if not os.path.isfile(path):
        return "pooled"
    with open(path, encoding="utf-8") as f:
        trained = json.load(f)
    if trained.get("pooling") in CLASSIFIER_POOLINGS:
        return trained["pooling"]
    objective = trained.get("objective")
    no_sentence_task = objective == "mlm" or (objective == "rtd" and not trained.get("rtd_sop"))
    return "mean" if no_sentence_task else "pooled"


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


def predict_outputs(model, data, batch_size=64):
    return model.predict(data.x, batch_size=batch_size, verbose=0)


# -- the run -------------------------------------------------------------------------------


def make_dataset(data, batch_size, shuffle, seed):
    parts = (data.x, data.y) if data.sample_weight is None else (data.x, data.y, data.sample_weight)
    ds = tf.data.Dataset.from_tensor_slices(parts)
    if shuffle:
        ds = ds.shuffle(len(data), seed=seed, reshuffle_each_iteration=True)
    # Whole batches only when training (static shapes for TPUs), if there
    # is at least one.
    return ds.batch(batch_size, drop_remainder=shuffle and len(data) >= batch_size).prefetch(2)


def finetune(init, train_path, eval_path, out_dir, cfg=None, tokenizer=None, overwrite=False,  # noqa: PLR0913,PLR0915 (to split into named steps: issue 59)
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
    check_output(out_dir, [init, train_path, eval_path, tokenizer, validation_path], overwrite,
                 folder=True)
    keras.utils.set_random_seed(cfg.seed)
    # -- data ------------------------------------------------------------------------
    pieces = read_tokenizer(init, tokenizer)
    task = get_task(cfg.task)
    train, spec = task.read(train_path, task_spec(cfg), pieces)
    evaluation = task.read(eval_path, spec, pieces)[0] if eval_path else None
    validation = task.read(validation_path, spec, pieces)[0] if validation_path else None
    train, validation = hold_out(task, train, validation, cfg.validation_split, cfg.seed,
                                 train_path)
    logger.info(f"{cfg.task}: {len(train)} training rows"
                + (f", {len(evaluation)} eval rows" if evaluation else "")
                + (f", {len(validation)} validation rows" if validation else "")
                + (f", labels {list(spec.labels)}"
                   if spec.labels and len(spec.labels) <= 20 else ""))

    # -- model -----------------------------------------------------------------------
    strategy = make_strategy(cfg.strategy)
    with strategy.scope():
        encoder = load_encoder(init, dtype=cfg.precision, from_scratch=cfg.from_scratch,
                               dropout=cfg.encoder_dropout)
        chosen = {k: v for k, v in size_defaults(encoder.config.hidden_size).items()
                  if getattr(cfg, k) is None}
        if chosen:
            cfg = dataclasses.replace(cfg, **chosen)
            logger.info(f"hidden size {encoder.config.hidden_size}: "
                        + ", ".join(f"{k} {v}" for k, v in chosen.items()))
        steps_per_epoch = max(1, len(train) // cfg.batch_size)
        total = steps_per_epoch * cfg.epochs
        check_tokenizer_fit(pieces, encoder.config.vocab_size, train.x["token_ids"],
                            train.x["padding_mask"], train_path)
        if cfg.sequence_length > encoder.config.max_position_embeddings:
            raise ValueError(
                f"sequence_length {cfg.sequence_length} exceeds the model's "
                f"max_position_embeddings {encoder.config.max_position_embeddings}"
            )
        cut = truncation_report(train, cfg.sequence_length,
                                encoder.config.max_position_embeddings)
        if cfg.task == "classify":
            cfg = dataclasses.replace(cfg, pooling=resolve_pooling(cfg.pooling, init))
            logger.info(f"classifier head reads the {cfg.pooling} output")
            model = task.build_model(spec, encoder, cfg.dropout, pooling=cfg.pooling)
        else:
            model = task.build_model(spec, encoder, cfg.dropout)
        model.compile(
            optimizer=make_optimizer(
                "adamw", learning_rate=cfg.learning_rate, total_steps=total,
                warmup_steps=int(cfg.warmup_fraction * total),
                weight_decay=cfg.weight_decay, clip_norm=1.0,
                lr_scales=layer_rate_scales(encoder, cfg.layer_decay),
                ema_momentum=cfg.ema,
            ),
            **task.compile_args(spec),
        )

    with writing_folder(out_dir) as tmp:
        # -- fit -------------------------------------------------------------------
        guard = NanGuard()
        callbacks = [guard, keras.callbacks.CSVLogger(os.path.join(tmp, METRICS_CSV)),
                     ProgressLog(total, every=50), *callbacks]
        best = epoch_selector(task, spec, evaluation, validation, cfg.select_metric,
                              cfg.patience)
        if best is not None:
            callbacks.insert(1, best)
        if cfg.ema:
            # Before the selector, so the epoch's score is the average's and
            # the weights it keeps are the average; Keras' callback swaps the
            # raw weights back in for the next epoch's steps.
            callbacks.insert(1, keras.callbacks.SwapEMAWeights(swap_on_epoch=True))
        with unused_pooler_quiet():  # tagging and QA read no pooler
            history = model.fit(
                make_dataset(train, cfg.batch_size, True, cfg.seed),
                epochs=cfg.epochs,
                shuffle=False,  # the dataset shuffles itself
                callbacks=callbacks,
                verbose=2,  # one plain line per epoch; ProgressLog adds one per 50 steps
            )
        if guard.bad_step is not None:
            raise RuntimeError(f"loss became NaN at step {guard.bad_step}; lower --learning-rate")

        # -- evaluate (the best epoch's weights) and write ----------------------------
        result = {"train_loss": float(history.history["loss"][-1]), **cut}
        if cfg.validation_split:
            result.update({f"{name}_examples": int(task.example_of_rows(part).max()) + 1
                           for name, part in (("train", train), ("validation", validation))})
        if evaluation is not None and evaluation.y is not None:
            result.update(task.score(spec, evaluation, predict_outputs(model, evaluation)))
        result.update(selection_report(best))
        write_task_folder(
            tmp, model, pieces, spec.to_json(), result,
            {**dataclasses.asdict(cfg), "init": os.path.abspath(init),
             "train": os.path.abspath(train_path),
             "eval": os.path.abspath(eval_path) if eval_path else None,
             "validation": os.path.abspath(validation_path) if validation_path else None})
    return result
