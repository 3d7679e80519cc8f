"""Fine-tuning an embedder on pairs, and scoring an embed folder.

The steps are ``finetune``'s (``albert_keras.tasks.task_run``): the files
read by the task, the width's defaults, AdamW with warmup and linear decay,
the best epoch on the eval (or validation) pairs, the folder written under a
temporary name. What differs is the model: a ``SentenceEmbedder`` (the
encoder, mean pooling, unit length) trained inside ``InBatchNegatives``, and
the folder's ``model.keras`` is the embedder itself, so that ``embed``,
``export`` and ``--init`` read it as they read any of our models.
"""

import dataclasses
import logging
import os

import keras

from albert_keras.files import check_output
from albert_keras.files import writing_folder
from albert_keras.models.task_models.in_batch_negatives import InBatchNegatives
from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
from albert_keras.options import name_of
from albert_keras.precision import resolve_precision
from albert_keras.sources.folder_writing import write_task_folder
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.tasks.embed.embedder_source import embedder_source
from albert_keras.tasks.embed.pair_batches import pair_batches
from albert_keras.tasks.embed.pairs import SCORE_COLUMN
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.finetune_config import fit_length
from albert_keras.tasks.task import TaskSpec
from albert_keras.tasks.task_run import eval_scores
from albert_keras.tasks.task_run import fit_with_selection
from albert_keras.tasks.task_run import read_task_sets
from albert_keras.tasks.task_run import task_optimizer
from albert_keras.tasks.task_run import task_spec
from albert_keras.tasks.task_run import truncation_report
from albert_keras.tasks.task_run import with_size_defaults

logger = logging.getLogger(__name__)

# Fine-tuning settings an embedder has no use for: set away from their
# defaults they are refused, not dropped (a classifier head's dropout, the
# classify columns, layer-wise decay, adversarial training, other strategies).
_NOT_FOR_EMBED = ("dropout", "layer_decay", "strategy", "text_column", "text_pair_column",
                  "label_column", "adversarial")


def embed_pooling(pooling):
    """The embedder's pooling for ``--pooling``: ``auto`` is ``mean`` (as
    sentence-transformers' models pool; a folder that is an embedder keeps
    its own), ``mean`` and ``pooled`` as asked."""
    if pooling == "both":
        raise ValueError("pooling 'both' is a classifier's; an embedder pools mean or pooled")
    return "mean" if pooling == "auto" else pooling


def check_embed_settings(cfg):
    """Refuses the fine-tuning settings ``--task embed`` does not use."""
    defaults = {f.name: f.default for f in dataclasses.fields(FinetuneConfig)}
    for name in _NOT_FOR_EMBED:
        if getattr(cfg, name) != defaults[name]:
            raise ValueError(f"{name_of(FinetuneConfig, name)} does not apply to --task embed")


def check_matryoshka_dims(dims, width):
    """``dims`` sorted, each checked below ``width`` (the embedder's full
    vector, always trained); a one-line error naming the flag."""
    dims = sorted(set(int(d) for d in dims or ()))
    bad = [d for d in dims if not 1 <= d < width]
    if bad:
        raise ValueError(f"{name_of(FinetuneConfig, 'matryoshka_dims')}: {bad[0]} is not "
                         f"below the embedder's {width} features (the full vector is "
                         f"always trained)")
    return tuple(dims)


def finetune_embedder(task, run):
    """``finetune`` for ``--task embed``; returns the run's metrics.

    Args:
        task: the ``Embed`` task unit.
        run: the ``FinetuneRun`` (init, files, folder, settings).
    """
    check_embed_settings(run.cfg)
    check_output(run.out_dir, [run.init, *run.paths, run.tokenizer], run.overwrite,
                 folder=True, marks=(TASK_FILE, TASK_MODEL_FILE))
    keras.utils.set_random_seed(run.cfg.seed)
    origin, trained = embedder_source(run.init, run.tokenizer)
    with writing_folder(run.out_dir) as tmp:
        embedder, cfg = _embedder(origin, trained, run.cfg)
        tokenizer = embedder.encoder.tokenizer
        sets, spec = read_task_sets(task, task_spec(cfg), tokenizer, run.paths,
                                    cfg.validation_split, cfg.seed)
        cut = truncation_report(sets.train, spec.sequence_length,
                                embedder.encoder.config.max_position_embeddings)
        history, best = train_pairs(task, embedder, (spec, sets, cfg), run.paths[0], tmp,
                                    run.callbacks)
        result = {"train_loss": float(history.history["loss"][-1]),
                  "precision": embedder.encoder.dtype_policy.name, **cut,
                  **getattr(history, "timing", {})}
        result.update(eval_scores(task, spec, embedder, sets, best,
                                  length_buckets=cfg.length_buckets))
        write_task_folder(
            tmp, embedder, tokenizer, spec.to_json(), result,
            {**dataclasses.asdict(cfg), "init": os.path.abspath(run.init),
             **{name: os.path.abspath(path) if path else None
                for name, path in zip(("train", "eval", "validation"), run.paths)}})
    return result


def _embedder(origin, trained, cfg):
    """``(SentenceEmbedder, cfg)``: ``origin``'s encoder in the run's
    precision, pooled as ``cfg`` says into unit vectors (``auto``: as the
    ``trained`` embedder it starts from pools, if any), and the settings
    with the width's defaults and a length the model reads."""
    pooling = embed_pooling(cfg.pooling)
    if cfg.pooling == "auto":
        pooling = trained.get("pooling", pooling)
    encoder = origin.give_tokenizer(origin.encoder(
        dtype=resolve_precision(cfg.precision), from_scratch=cfg.from_scratch,
        dropout=cfg.encoder_dropout, output_hidden_states=pooling != "pooled"))
    cfg = fit_length(cfg, encoder.config.max_position_embeddings, origin.path)
    cfg = dataclasses.replace(with_size_defaults(cfg, encoder.config.hidden_size),
                              pooling=pooling)
    return SentenceEmbedder(encoder, pooling=pooling, normalize=True, name="embedder"), cfg


def train_pairs(task, embedder, run, where="the training file", folder=None, callbacks=(),  # noqa: PLR0913 (the run, and how it is named, kept and shown)
                verbose=2):
    """Trains ``embedder`` on the training pairs with in-batch negatives:
    ``finetune --task embed``'s and ``TextEmbedder.fit``'s one loop.

    Args:
        task: the ``Embed`` task unit.
        embedder: the ``SentenceEmbedder``.
        run: ``(spec, sets, cfg)``: the scale and direction (``spec``), the
            pairs (``TaskSets``) and the optimizer's settings.
        where: what errors call the training pairs.
        folder: where ``metrics.csv`` goes (None: nowhere).
        callbacks: more Keras callbacks.
        verbose: Keras' ``verbose``.

    Returns:
        ``(history, best)`` as ``fit_with_selection``'s.
    """
    spec, sets, cfg = run
    if sets.train.extra["examples"].scores is not None:
        raise ValueError(f"{where}: scored pairs (a {SCORE_COLUMN!r} column) score an "
                         "embedder but train none: in-batch negatives take pairs whose "
                         "positive answers the anchor; give the scored file as --eval")
    if len(sets.train) < cfg.batch_size:
        raise ValueError(f"{where}: {len(sets.train)} training pairs, fewer than one batch of "
                         f"{cfg.batch_size}; lower {name_of(FinetuneConfig, 'batch_size')}")
    dims = check_matryoshka_dims(spec.matryoshka_dims, embedder.width)
    scorer = InBatchNegatives(embedder, scale=spec.scale, symmetric=spec.symmetric, dims=dims)
    dataset = pair_batches(sets.train.x, cfg.batch_size, cfg.seed, scorer.copies)
    total = (len(sets.train) // cfg.batch_size) * cfg.epochs
    # the rows' mean times the widths: the sum of each width's loss
    scorer.compile(optimizer=task_optimizer(cfg, embedder.encoder, total),
                   loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                   loss_weights=float(1 + len(dims)))
    return fit_with_selection(scorer, dataset, (task, spec, sets, cfg, total), folder,
                              callbacks, verbose=verbose)


def evaluate_embedder(task, folder, path, batch_size=64, length_buckets=True):
    """The retrieval scores of an embed folder on a pairs file (its columns
    named as in training)."""
    origin = embedder_source(folder)[0]
    model, spec = origin.task_model()
    origin.give_tokenizer(model.encoder)
    spec = TaskSpec.from_json(spec, os.path.join(folder, TASK_FILE))
    data, _ = task.read(path, spec, model.encoder.tokenizer)
    return task.score(spec, data, task.outputs(model, data, batch_size, length_buckets))
