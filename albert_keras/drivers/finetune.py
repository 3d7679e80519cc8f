"""Fine-tuning with ``model.fit``: task files in, model folder out.

Phases: read and check the files (labels discovered on the training file)
-> the task's Python class (``TextClassifier`` and the others) on the
``--init`` encoder -> its one training path (``TextTask.fit_rows``: the
head, AdamW with warmup and linear decay, the best epoch) -> evaluation with
the task's metrics -> the model folder (``model.keras``, ``spm.model``,
``task.json``, ``metrics.json``, ``train_config.json``, ``metrics.csv``),
written under a temporary name and renamed at the end -> a LiteRT copy of
the folder's model kept in the converted-model cache (``keep_converted``),
so that a few texts run there by default (``runtime="auto"``). The file-path
function is a convenience over the class: a Python ``fit`` with the same
rows and settings trains the same model.
"""

import dataclasses
import logging
import os
import time

import keras

from albert_keras.files import check_output
from albert_keras.files import writing_folder
from albert_keras.sources.folder_writing import write_task_folder
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks import litert_cache
from albert_keras.tasks import litert_runtime
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task_run import FinetuneRun
from albert_keras.tasks.task_run import eval_scores
from albert_keras.tasks.task_run import read_task_sets
from albert_keras.tasks.task_run import task_spec
from albert_keras.tasks.text_task import TextTask
from albert_keras.training.strategy import check_layout
from albert_keras.training.strategy import make_strategy
from albert_keras.training.strategy import where_it_runs

logger = logging.getLogger(__name__)


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
    task = get_task(cfg.task)
    if task.finetune is not None:  # a task whose model is no task object (embed)
        return task.finetune(FinetuneRun(init, paths, out_dir, cfg, tokenizer, overwrite,
                                         tuple(callbacks)))
    check_output(out_dir, [init, *paths, tokenizer], overwrite, folder=True,
                 marks=(TASK_FILE, TASK_MODEL_FILE))
    keras.utils.set_random_seed(cfg.seed)
    source = ModelSource(init, tokenizer)  # the one reader of init
    strategy = make_strategy(cfg.strategy)
    with strategy.scope(), writing_folder(out_dir) as tmp:
        # the object's settings (a sequence length the model reads) and
        # tokenizer read the rows, as its Python fit would
        model, _ = TextTask.for_task(cfg.task).on_source(source, cfg, keep_head=False)
        split = check_layout(strategy, model.encoder)
        logger.info(where_it_runs(strategy, model.encoder.dtype_policy.name, cfg.batch_size,
                                  model.encoder, split))
        sets, spec = read_task_sets(task, task_spec(model.settings), model.tokenizer, paths,
                                    cfg.validation_split, cfg.seed)
        _log_rows(cfg.task, sets, spec)
        history, best, cut = model.fit_rows(sets, spec, callbacks, folder=tmp, where=train_path)
        cfg = model.settings  # with the width's defaults and the head's choices
        result = {"train_loss": float(history.history["loss"][-1]),
                  "precision": model.encoder.dtype_policy.name, **cut,
                  **getattr(history, "timing", {})}
        if cfg.validation_split:
            result.update({f"{name}_examples": int(task.example_of_rows(part).max()) + 1
                           for name, part in (("train", sets.train),
                                              ("validation", sets.validation))})
        result.update(eval_scores(task, spec, model.task_model, sets, best,
                                  length_buckets=cfg.length_buckets))
        write_task_folder(
            tmp, model.task_model, model.tokenizer, spec.to_json(), result,
            {**dataclasses.asdict(cfg), "init": os.path.abspath(init),
             **{name: os.path.abspath(path) if path else None
                for name, path in zip(("train", "eval", "validation"), paths)}})
    keep_converted(out_dir)
    return result


def keep_converted(folder):
    """Converts the fine-tuned model of ``folder`` to LiteRT and keeps the
    file in the converted-model cache (``litert_cache``), so that
    ``predict`` of a few texts runs there by default; seconds (MiniLM-L6's
    shape about 9 s), paid once here instead of at a user's first request.

    The model is read back from the folder, as ``TextTask.load`` reads it
    later, so the kept file is found by that key. Nothing happens where the
    cache is turned off (``ALBERT_KERAS_CACHE=""``) or the model's kind does
    not run in LiteRT; a conversion that fails is one warning (its
    traceback under ``--verbose``), never the run's failure: the folder is
    the result, and predictions then run on TensorFlow.
    """
    if litert_cache.cache_folder() is None:
        return
    began = time.perf_counter()
    try:
        model = TextTask.load(folder, runtime="keras")
        if not litert_runtime.runs_in_litert(model.task_model):
            return
        litert_runtime.LiteRTRunner(model.task_model)  # converts and keeps
    except Exception as e:  # noqa: BLE001 (only saves a later prediction time; see above)
        logger.warning(f"{folder}: no LiteRT copy kept for one-text predictions "
                       f"({type(e).__name__}: {e}); they run on TensorFlow",
                       exc_info=logger.isEnabledFor(logging.DEBUG))
        return
    logger.info(f"kept a LiteRT copy for one-text predictions "
                f"({time.perf_counter() - began:.1f} s)")


def _log_rows(task_name, sets, spec):
    logger.info(f"{task_name}: {len(sets.train)} training rows"
                + (f", {len(sets.evaluation)} eval rows" if sets.evaluation else "")
                + (f", {len(sets.validation)} validation rows" if sets.validation else "")
                + (f", labels {list(spec.labels)}"
                   if spec.labels and len(spec.labels) <= 20 else ""))
