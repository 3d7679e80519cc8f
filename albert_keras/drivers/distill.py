"""Distillation: a fine-tuned teacher's task, taught to a smaller student.

Phases: read the teacher's folder (model, task spec, tokenizer) -> features
of the labelled training file and of the unlabelled rows (a file in the
task's format, or paragraphs of the embedded corpus) -> the teacher's
outputs for all of them, once -> a student (a preset, or a pretrained
folder with the same tokenizer) -> optionally, its encoder trained on the
teacher encoder's hidden states and attention maps -> the task's head and
``fit`` on the soft targets and, for labelled rows, the labels -> an
ordinary fine-tuned model folder, which ``evaluate``, ``predict`` and
``export`` take.
"""

import dataclasses
import logging
import os
import tempfile

import keras
import numpy as np

from albert_keras.data.length_buckets import ENCODER_INPUTS
from albert_keras.data.length_buckets import along_the_sequence
from albert_keras.data.length_buckets import bucketed_dataset
from albert_keras.drivers.distill_config import DistillConfig
from albert_keras.families import build_backbone
from albert_keras.files import check_output
from albert_keras.files import writing_folder
from albert_keras.models.distillers.distiller import Distiller
from albert_keras.models.distillers.layer_distiller import LayerDistiller
from albert_keras.models.distillers.layer_map import parse_layer_map
from albert_keras.optimizers.optimizer import build_optimizer
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.precision import resolve_precision
from albert_keras.presets import get_preset
from albert_keras.sources.folder_writing import write_task_folder
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import TaskData
from albert_keras.tasks.task import TaskSpec
from albert_keras.tasks.task_run import eval_scores
from albert_keras.tasks.task_run import fit_with_selection
from albert_keras.tasks.task_run import predict_outputs
from albert_keras.tasks.task_run import read_task_sets
from albert_keras.tasks.task_run import task_optimizer
from albert_keras.tasks.task_run import with_size_defaults
from albert_keras.training import adversarial as adversarial_training
from albert_keras.training.adversarial import check_backend
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.callbacks import ProgressLog
from albert_keras.training.strategy import where_it_runs

logger = logging.getLogger(__name__)

CORPUS = "corpus"
# the layer stage's history, next to the soft-target stage's metrics.csv
LAYERS_CSV = "layers.csv"


# -- unlabelled rows ---------------------------------------------------------------------


def _take(data, count, seed):
    """At most ``count`` rows of ``data.x``, chosen at random."""
    n = len(data)
    if n <= count:
        return data.x
    keep = np.sort(np.random.default_rng(seed).choice(n, count, replace=False))
    return {k: v[keep] for k, v in data.x.items()}


# -- targets -----------------------------------------------------------------------------


def _targets(labelled, unlabelled_count, output_keys):
    """``labels`` and ``label_weight`` for the labelled rows followed by
    ``unlabelled_count`` rows of zeros (weight 0: no hard loss there)."""
    labels, weights = {}, {}
    for key in output_keys:
        y = np.asarray(labelled.y[key])
        w = (np.asarray(labelled.sample_weight[key], np.float32)
             if labelled.sample_weight else np.ones(y.shape[:1], np.float32))
        labels[key] = np.concatenate([y, np.zeros((unlabelled_count, *y.shape[1:]), y.dtype)])
        weights[key] = np.concatenate(
            [w, np.zeros((unlabelled_count, *w.shape[1:]), np.float32)])
    return labels, weights


def _same_tokenizer(a, b):
    if a.vocabulary_size != b.vocabulary_size:
        return False
    return all(a.id_to_piece(i) == b.id_to_piece(i) for i in range(a.vocabulary_size))


# -- intermediate layers ---------------------------------------------------------------------


def _transfer_layers(teacher_encoder, encoder, x, cfg, folder):
    """TinyBERT's first stage: ``encoder`` learns ``teacher_encoder``'s hidden
    states and attention maps on the rows ``x`` for ``cfg.layer_epochs``;
    its history goes to ``layers.csv`` in ``folder``.

    Returns:
        The stage's first and last epoch losses.
    """
    import tensorflow as tf

    # multiple choice reads [B, C, S]: the encoders see C rows per example
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in x.items()}
    rows = len(flat["token_ids"])
    model = LayerDistiller(
        teacher_encoder, encoder,
        layer_map=parse_layer_map(cfg.layer_map, LayerDistiller._blocks(encoder),
                                  LayerDistiller._blocks(teacher_encoder)),
        hidden_weight=cfg.hidden_weight, attention_weight=cfg.attention_weight)
    steps_per_epoch = max(1, rows // cfg.batch_size)
    total = steps_per_epoch * cfg.layer_epochs
    model.compile(optimizer=make_optimizer(
        "adamw", learning_rate=cfg.learning_rate, total_steps=total,
        warmup_steps=int(cfg.warmup_fraction * total), weight_decay=cfg.weight_decay,
        clip_norm=1.0))
    logger.info(f"distill: {cfg.layer_epochs} epochs of layer transfer, layer map "
                f"{model.layer_map}")
    if cfg.length_buckets:
        # both losses average over real positions only, so cut batches give
        # the loss a padded batch of the same rows gives
        ds = bucketed_dataset((flat,), cfg.batch_size, cfg.seed)
    else:
        ds = tf.data.Dataset.from_tensor_slices(flat)
        ds = ds.shuffle(rows, seed=cfg.seed, reshuffle_each_iteration=True)
        ds = ds.batch(cfg.batch_size, drop_remainder=rows >= cfg.batch_size).prefetch(2)
    guard = NanGuard()
    # No loss of this stage reads the pooler: frozen, it is not reported as
    # a variable without gradients, and the task stage trains it.
    encoder.pooler.trainable = False
    try:
        build_optimizer(model)  # after freezing the pooler: it has no slots
        history = model.fit(ds, epochs=cfg.layer_epochs, verbose=2, shuffle=False, callbacks=[
            guard, keras.callbacks.CSVLogger(os.path.join(folder, LAYERS_CSV)),
            ProgressLog(total, every=50)])
    finally:
        encoder.pooler.trainable = True
    if guard.bad_step is not None:
        raise RuntimeError(f"layer transfer: the loss became NaN at step {guard.bad_step}; "
                           "lower --learning-rate")
    result = {"layer_map": [list(p) for p in model.layer_map]}
    for key in ("hidden_loss", "attention_loss"):
        values = history.history.get(key)
        if values:
            result[f"layer_{key}_first"] = float(values[0])
            result[f"layer_{key}_last"] = float(values[-1])
    return result


# -- the run -------------------------------------------------------------------------------


def distill(teacher, train_path, eval_path, out_dir, cfg=None, unlabeled=None,  # noqa: PLR0913 (the command's files and flags, as finetune takes them)
            overwrite=False, callbacks=(), validation_path=None):
    """Distils a fine-tuned ``teacher`` folder into a new student folder.

    Args:
        teacher: a fine-tuned model folder (``albert-keras finetune``'s, or a
            student of an earlier run).
        train_path: the labelled training file, in the teacher's task format.
        eval_path: a labelled file scored every epoch (the best epoch is
            kept), or None.
        validation_path: a labelled file the best epoch is chosen on
            instead; ``eval_path`` is then scored once, with those weights.
        out_dir: the student's model folder.
        cfg: a ``DistillConfig``.
        unlabeled: a file in the task's format whose rows the teacher labels
            (labels in it are ignored), ``"corpus"`` for the embedded
            speeches, or None.
        overwrite: replace an existing ``out_dir``.
        callbacks: more Keras callbacks for ``fit``.

    Returns:
        The student's eval metrics (and ``teacher_<metric>`` on the same file).

    Example:
    >>> distill("runs/cls", "train.csv", "eval.csv", "runs/student",  # doctest: +SKIP
    ...         DistillConfig(student="albert_tiny"), unlabeled="corpus")
    """
    cfg = cfg or DistillConfig()
    cfg.validate()
    check_backend(cfg.adversarial_setting())  # before the teacher labels a row
    paths = (train_path, eval_path, validation_path)
    unlabeled_file = unlabeled if unlabeled not in (None, CORPUS) else None
    check_output(out_dir, [teacher, *paths, unlabeled_file, cfg.student_init], overwrite,
                 folder=True, marks=(TASK_FILE, TASK_MODEL_FILE))
    keras.utils.set_random_seed(cfg.seed)
    taught = _teach(teacher, paths, unlabeled, cfg)
    keras.utils.set_random_seed(cfg.seed)
    student, model, cfg, total = _student(taught, cfg)
    logger.info(where_it_runs(None, batch_size=cfg.batch_size, model=student))
    task, spec, sets = taught.task, taught.spec, taught.sets
    with writing_folder(out_dir) as tmp:
        layer_result = {}
        if taught.teacher_encoder is not None:  # TinyBERT's first stage, when asked for
            layer_result = _transfer_layers(taught.teacher_encoder, student.encoder,
                                            taught.x, cfg, tmp)
            taught.teacher_encoder = None
        history, best = fit_with_selection(model, _soft_target_dataset(taught, cfg),
                                           (task, spec, sets, cfg, total), tmp, callbacks)
        result = {"train_loss": float(history.history["loss"][-1]),
                  "soft_loss": float(history.history["soft_loss"][-1]),
                  "labelled_rows": len(sets.train), "unlabelled_rows": taught.rows - len(sets.train),
                  **layer_result, **eval_scores(task, spec, student, sets, best,
                                               length_buckets=cfg.length_buckets)}
        if sets.labelled_eval:
            result.update({f"teacher_{k}": v for k, v in taught.teacher_scores.items()
                           if isinstance(v, (int, float))})
        write_task_folder(
            tmp, student, taught.pieces, spec.to_json(), result,
            {**dataclasses.asdict(cfg), "teacher": os.path.abspath(teacher),
             **{name: os.path.abspath(path) if path else None
                for name, path in zip(("train", "eval", "validation"), paths)},
             "unlabeled": (unlabeled if unlabeled in (None, CORPUS)
                           else os.path.abspath(unlabeled))})
    return result


@dataclasses.dataclass
class _Taught:
    """What the teacher gives the student: rows, its scores and its setup."""

    task: object
    spec: object
    pieces: object
    sets: object
    x: dict
    rows: int
    teacher_out: dict
    teacher_scores: dict
    vocab_size: int
    teacher_encoder: object = None
    # the teacher's outputs that run along the sequence (a QA model's start
    # and end logits): cut with the inputs when batches are bucketed by length
    along: tuple = ()


def _teach(teacher, paths, unlabeled, cfg):
    """Reads the files (and unlabelled rows) and scores them with the teacher."""
    source = ModelSource(teacher)
    teacher_model, spec_json = source.task_model()
    spec = TaskSpec.from_json(spec_json, os.path.join(teacher, TASK_FILE))
    task = get_task(spec.task)
    if task.python_class is None:  # its own run (an embedder): no student head to build
        raise ValueError(f"{teacher}: {task.name} folders are not distilled here yet")
    pieces = source.tokenizer
    sets, _ = read_task_sets(task, spec, pieces, paths, cfg.validation_split, cfg.seed)
    extra_x = _unlabelled_rows(task, spec, pieces, unlabeled, cfg)
    x = sets.train.x if extra_x is None else {
        k: np.concatenate([sets.train.x[k], extra_x[k]]) for k in sets.train.x}
    rows = len(next(iter(x.values())))
    logger.info(f"distill {spec.task}: {len(sets.train)} labelled rows, "
                f"{rows - len(sets.train)} unlabelled; the teacher scores them")
    teacher_out = predict_outputs(teacher_model, TaskData(x), 64, cfg.length_buckets)
    teacher_scores = (task.score(spec, sets.evaluation,
                                 predict_outputs(teacher_model, sets.evaluation, 64,
                                                 cfg.length_buckets))
                      if sets.labelled_eval else {})
    taught = _Taught(task, spec, pieces, sets, x, rows,
                     {k: np.asarray(v, np.float32) for k, v in teacher_out.items()},
                     teacher_scores, teacher_model.encoder.config.vocab_size)
    # The layer stage runs the teacher's encoder in every step; without it
    # the teacher is no longer needed.
    taught.teacher_encoder = teacher_model.encoder if cfg.layer_epochs else None
    if np.ndim(x["padding_mask"]) == 2:  # [rows, choices, S] inputs have none
        taught.along = tuple(f"teacher/{name}" for name in sorted(
            along_the_sequence(teacher_model)))
    del teacher_model
    if taught.teacher_encoder is None:
        keras.backend.clear_session()
    return taught


def _unlabelled_rows(task, spec, pieces, unlabeled, cfg):
    if unlabeled is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = (get_task(spec.task).corpus_file(spec, tmp, cfg.max_unlabeled, cfg.seed)
                if unlabeled == CORPUS else unlabeled)
        extra = task.read(path, spec, pieces, require_labels=False)[0]
    return _take(extra, cfg.max_unlabeled, cfg.seed)


def _student_encoder(taught, cfg):
    """The student's encoder: ``student_init``'s, or a new one of the preset."""
    if cfg.student_init:
        source = ModelSource(cfg.student_init)
        if not _same_tokenizer(source.tokenizer, taught.pieces):
            raise ValueError(f"{cfg.student_init}: its tokenizer is not the teacher's "
                             f"({taught.pieces.source}); the student must read the same "
                             "pieces")
        encoder = source.encoder(dtype=resolve_precision(cfg.precision))
    else:
        config = get_preset(cfg.student, vocab_size=taught.vocab_size,
                            **(cfg.student_overrides or {}))
        encoder = build_backbone(config, dtype=resolve_precision(cfg.precision))
    if encoder.config.vocab_size != taught.vocab_size:
        raise ValueError(f"{cfg.student_init}: vocabulary of {encoder.config.vocab_size}, "
                         f"the teacher's has {taught.vocab_size}")
    if taught.spec.sequence_length > encoder.config.max_position_embeddings:
        raise ValueError(f"the task's sequence length {taught.spec.sequence_length} exceeds "
                         f"the student's max_position_embeddings "
                         f"{encoder.config.max_position_embeddings}")
    return encoder


class AdversarialDistiller(Distiller):
    """The distiller with SiFT or R3F on the student (``adversarial``, set
    by ``_student``): the weighted term added to its loss in training. A
    driver's class (the models import nothing from training), never saved:
    the student is what the folder keeps."""

    adversarial = None

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        total = super().compute_loss(x, y, y_pred, sample_weight, training)
        if not training:
            return total
        seed = self.__dict__["_adversarial_seed"]
        return total + self.adversarial.weight * adversarial_training.task_model_term(
            self.adversarial, self.student, x, y_pred, seed)


def _student(taught, cfg):
    """``(student task model, distiller, cfg with the width's defaults, steps)``."""
    encoder = _student_encoder(taught, cfg)
    cfg = with_size_defaults(cfg, encoder.config.hidden_size)
    total = max(1, taught.rows // cfg.batch_size) * cfg.epochs
    student = taught.task.build_model(taught.spec, encoder, cfg.dropout)
    optimizer = task_optimizer(cfg, encoder, total)
    # One optimizer for both: the distiller steps it, and the student's
    # saved file carries it as a fine-tuned folder's does.
    student.compile(optimizer=optimizer, **taught.task.compile_args(taught.spec))
    setting = cfg.adversarial_setting()
    kind = Distiller if setting is None else AdversarialDistiller
    model = kind(student, temperature=cfg.temperature, alpha=cfg.alpha,
                 regression=bool(taught.spec.regression))
    if setting is not None:
        model.adversarial = setting
        adversarial_training.untracked_seed(model, cfg.seed)
    model.compile(optimizer=optimizer)
    return student, model, cfg, total


def _soft_target_dataset(taught, cfg):
    """The rows with the teacher's outputs, the labels where there are any."""
    import tensorflow as tf

    labels, label_weight = _targets(taught.sets.train, taught.rows - len(taught.sets.train),
                                    taught.teacher_out.keys())
    targets = {"teacher": taught.teacher_out, "labels": labels, "label_weight": label_weight}
    if cfg.length_buckets:
        return bucketed_dataset((taught.x, targets), cfg.batch_size, cfg.seed,
                                ENCODER_INPUTS + tuple(taught.task.per_token_targets)
                                + taught.along)
    ds = tf.data.Dataset.from_tensor_slices((taught.x, targets))
    ds = ds.shuffle(taught.rows, seed=cfg.seed, reshuffle_each_iteration=True)
    return ds.batch(cfg.batch_size, drop_remainder=taught.rows >= cfg.batch_size).prefetch(2)
