"""Fine-tuning with ``model.fit``: task files in, model folder out.

Phases: read and check the files (labels discovered on the training file)
-> features -> task model on the ``--init`` encoder -> ``fit`` with AdamW,
warmup and linear decay -> evaluation with the task's metrics -> the model
folder (``model.keras``, ``spm.model``, ``task.json``, ``metrics.json``,
``train_config.json``, ``metrics.csv``), written under a temporary name and
renamed at the end.
"""

import logging
import dataclasses
import os
import shutil

import keras
import numpy as np
import tensorflow as tf

from albert_keras.models.albert_classifier import AlbertClassifier
from albert_keras.models.albert_multiple_choice import AlbertMultipleChoice
from albert_keras.models.albert_question_answerer import AlbertQuestionAnswerer
from albert_keras.models.albert_token_classifier import AlbertTokenClassifier
from albert_keras.saving import save_model
from albert_keras.files import write_json
from albert_keras.files import writing_folder
from albert_keras.tasks import metrics as task_metrics
from albert_keras.tasks import readers
from albert_keras.tasks.encoding import PieceEncoder
from albert_keras.tasks.encoding import pack_texts
from albert_keras.tasks.model_folder import TASK_FILE
from albert_keras.tasks.model_folder import load_encoder
from albert_keras.tasks.model_folder import tokenizer_path
from albert_keras.tasks.qa import decode_answers
from albert_keras.tasks.qa import qa_features
from albert_keras.tasks.tagging import decode_tags
from albert_keras.tasks.tagging import tag_features
from albert_keras.training.callbacks import NanGuard
from albert_keras.training.optimizer import make_optimizer
from albert_keras.training.strategy import make_strategy

logger = logging.getLogger(__name__)

TASKS = ("classify", "tag", "qa", "choice")


@dataclasses.dataclass
class FinetuneConfig:
    """Every knob of a fine-tuning run (saved as ``train_config.json``).

    Args:
        task: ``classify``, ``tag``, ``qa`` or ``choice``.
        epochs, batch_size, learning_rate: AdamW with linear warmup over
            ``warmup_fraction`` of the steps, then linear decay to 0.
        sequence_length: S. QA: ``stride`` between windows,
            ``max_question_length``, ``max_answer_length``, ``n_best``,
            ``null_threshold`` and ``version_2`` (no-answer questions).
        regression: ``classify`` with a numeric label (one output, MSE).
        text_column, text_pair_column, label_column, context_column,
            choices_column, question_column: where the fields are in
            CSV/TSV/JSONL files (``context_column`` is for ``choice``).
        dropout: on the head's input.
        precision, strategy, seed: as in pretraining.
        from_scratch: same architecture as ``--init``, untrained weights
            (the baseline that shows what pretraining is worth).
    """

    task: str = "classify"
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    sequence_length: int = 128
    truncate: str = "longest_first"
    regression: bool = False
    text_column: str = "text"
    text_pair_column: str = None
    label_column: str = "label"
    context_column: str = "context"
    choices_column: str = "choices"
    question_column: str = "question"
    stride: int = 128
    max_question_length: int = 64
    max_answer_length: int = 30
    n_best: int = 20
    null_threshold: float = 0.0
    version_2: bool = False
    dropout: float = 0.1
    precision: str = "float32"
    strategy: str = "auto"
    seed: int = 0
    from_scratch: bool = False

    def validate(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        for name in ("epochs", "batch_size", "sequence_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError("warmup_fraction must be in [0, 1)")


# -- task data -------------------------------------------------------------------------


class TaskData:
    """Features (``x``), targets (``y``, ``sample_weight``) and what decoding
    and scoring need, for one file."""

    def __init__(self, x, y=None, sample_weight=None, extra=None):
        self.x, self.y, self.sample_weight, self.extra = x, y, sample_weight, extra or {}

    def __len__(self):
        return len(next(iter(self.x.values())))


def load_task_data(path, spec, encoder, require_labels=True):
    """Reads ``path`` for the task described by ``spec`` (``task.json``).

    A spec whose ``labels`` are None (a new task) takes them from this file,
    as it does ``num_choices``: the training file defines both.
    """
    task, seq = spec["task"], spec["sequence_length"]
    if task == "classify":
        examples = readers.read_text_table(
            path, spec["text_column"], spec.get("text_pair_column"), spec["label_column"],
            require_labels=require_labels,
        )
        x = pack_texts(encoder, examples.texts, examples.pairs, seq, spec["truncate"])
        y = None
        if examples.labels is not None:
            if spec["regression"]:
                y = np.asarray(readers.regression_targets(path, examples), np.float32)[:, None]
            else:
                if spec["labels"] is None:  # the training file: discover the labels
                    spec["labels"] = readers.discover_labels(examples.labels)
                    if len(spec["labels"]) < 2:
                        raise readers.TaskDataError(
                            f"{path}: only one label ({spec['labels'][0]!r}); "
                            "classification needs 2+")
                y = np.asarray(readers.label_ids(path, examples, spec["labels"]), np.int32)
        return TaskData(x, None if y is None else {"logits": y}, extra={"examples": examples})
    if task == "tag":
        sentences = readers.read_conll(path, require_tags=require_labels)
        words = [s[0] for s in sentences]
        tags = [s[1] for s in sentences] if sentences[0][1] is not None else None
        if spec["labels"] is None:  # the training file: discover the tags
            spec["labels"] = readers.discover_labels(t for s in tags for t in s)
        index = {t: i for i, t in enumerate(spec["labels"])}
        if tags is not None:
            for (w, t, line) in sentences:
                for offset, tag in enumerate(t):
                    if tag not in index:
                        raise readers.TaskDataError(
                            f"{path}:{line + offset}: unknown tag {tag!r}; the model knows "
                            f"{', '.join(spec['labels'])}"
                        )
        features = tag_features(encoder, words, seq, tags, index if tags else None)
        y = {"logits": features.labels} if tags is not None else None
        weights = {"logits": features.weights} if tags is not None else None
        return TaskData(features.inputs, y, weights,
                        extra={"features": features, "words": words, "tags": tags})
    if task == "qa":
        examples = readers.read_squad(path, require_answers=require_labels)
        features = qa_features(encoder, examples, seq, spec["stride"], spec["max_question_length"])
        y = {"start_logits": features.start_positions, "end_logits": features.end_positions}
        return TaskData(features.inputs, y, extra={"features": features, "examples": examples})
    if task == "choice":
        examples = readers.read_choices(
            path, spec["context_column"], spec["question_column"], spec["choices_column"],
            spec["label_column"], require_labels=require_labels,
        )
        count = len(examples.choices[0])
        spec.setdefault("num_choices", count)  # the training file sets it
        if count != spec["num_choices"]:
            raise readers.TaskDataError(
                f"{path}: {count} choices per question, but the model was trained with "
                f"{spec['num_choices']}"
            )
        firsts = [c for c in examples.contexts for _ in range(count)]
        seconds = [s for choices in examples.choices for s in choices]
        flat = pack_texts(encoder, firsts, seconds, seq, spec["truncate"])
        x = {k: v.reshape(len(examples.contexts), count, seq) for k, v in flat.items()}
        y = None
        if examples.labels is not None:
            y = {"logits": np.asarray(examples.labels, np.int32)}
        return TaskData(x, y, extra={"examples": examples})
    raise ValueError(f"unknown task {task!r}")


def _task_spec(cfg):
    """The task description saved as ``task.json``. Labels (and the number
    of choices) are left to be discovered when the training file is read."""
    spec = {
        key: getattr(cfg, key)
        for key in ("task", "sequence_length", "truncate", "regression", "text_column",
                    "text_pair_column", "label_column", "context_column", "choices_column",
                    "question_column", "stride", "max_question_length", "max_answer_length",
                    "n_best", "null_threshold", "version_2")
    }
    needs_labels = cfg.task == "tag" or (cfg.task == "classify" and not cfg.regression)
    spec["labels"] = None if needs_labels else []
    return spec


# -- model ---------------------------------------------------------------------------------


def build_task_model(spec, encoder, dropout=0.1):
    task = spec["task"]
    if task == "classify":
        classes = 1 if spec["regression"] else len(spec["labels"])
        return AlbertClassifier(encoder, classes, dropout=dropout, name="classifier")
    if task == "tag":
        return AlbertTokenClassifier(encoder, len(spec["labels"]), dropout=dropout, name="tagger")
    if task == "qa":
        return AlbertQuestionAnswerer(encoder, name="question_answerer")
    return AlbertMultipleChoice(encoder, dropout=dropout, name="multiple_choice")


def task_losses(spec):
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if spec["task"] == "qa":
        return ({"start_logits": ce, "end_logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True)},
                {"start_logits": 0.5, "end_logits": 0.5}, None)
    if spec["task"] == "classify" and spec["regression"]:
        return {"logits": keras.losses.MeanSquaredError()}, None, None
    # Tagging weighs each position (1 on a word's first piece, else 0), so
    # its accuracy is a weighted metric.
    return {"logits": ce}, None, {"logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]}


# -- evaluation ------------------------------------------------------------------------------


def predict_outputs(model, data, batch_size=64):
    return model.predict(data.x, batch_size=batch_size, verbose=0)


def qa_answers(spec, data, outputs):
    """The decoded answer per question id, with the spec's decoding knobs."""
    return decode_answers(
        data.extra["features"], outputs["start_logits"], outputs["end_logits"],
        data.extra["examples"], n_best=spec["n_best"],
        max_answer_length=spec["max_answer_length"], null_threshold=spec["null_threshold"],
        allow_no_answer=spec["version_2"],
    )


def score(spec, data, outputs):
    """The task's metrics on labelled ``data``."""
    task = spec["task"]
    if task == "classify":
        logits = outputs["logits"]
        y = data.y["logits"]
        if spec["regression"]:
            return task_metrics.regression_scores(y[:, 0], logits[:, 0])
        predicted = logits.argmax(-1)
        return {
            "accuracy": task_metrics.accuracy(y, predicted),
            "macro_f1": task_metrics.macro_f1(y, predicted, len(spec["labels"])),
            "confusion_matrix": task_metrics.confusion_matrix(
                y, predicted, len(spec["labels"])).tolist(),
            "examples": len(y),
        }
    if task == "tag":
        predicted = decode_tags(data.extra["features"], outputs["logits"], data.extra["words"],
                                spec["labels"])
        entity = task_metrics.entity_scores(data.extra["tags"], predicted)
        flat_true = [t for s in data.extra["tags"] for t in s]
        flat_pred = [t for s in predicted for t in s]
        return {
            "entity_f1": entity["f1"],
            "entity_precision": entity["precision"],
            "entity_recall": entity["recall"],
            "per_type": entity["per_type"],
            "token_accuracy": task_metrics.accuracy(flat_true, flat_pred),
            "sentences": len(predicted),
        }
    if task == "qa":
        predictions = {qid: a["text"] for qid, a in qa_answers(spec, data, outputs).items()}
        references = {e.qid: [a[0] for a in e.answers] for e in data.extra["examples"]}
        return task_metrics.squad_scores(predictions, references)
    predicted = outputs["logits"].argmax(-1)
    return {"accuracy": task_metrics.accuracy(data.y["logits"], predicted),
            "examples": len(predicted)}


# -- the run -------------------------------------------------------------------------------


def make_dataset(data, batch_size, shuffle, seed):
    parts = (data.x, data.y) if data.sample_weight is None else (data.x, data.y, data.sample_weight)
    ds = tf.data.Dataset.from_tensor_slices(parts)
    if shuffle:
        ds = ds.shuffle(len(data), seed=seed, reshuffle_each_iteration=True)
    # Whole batches only when training (static shapes for TPUs), if there
    # is at least one.
    return ds.batch(batch_size, drop_remainder=shuffle and len(data) >= batch_size).prefetch(2)


def finetune(init, train_path, eval_path, out_dir, cfg=None, tokenizer=None, overwrite=False):
    """Fine-tunes the encoder of ``init`` on a task; returns the eval metrics.

    Args:
        init: a pretraining (or fine-tuned) model folder, or a ``.keras``
            file with ``tokenizer`` given.
        train_path, eval_path: task files (``eval_path`` may be None).
        out_dir: the model folder to write.
        cfg: a ``FinetuneConfig``.
        tokenizer: a SentencePiece ``.model`` (default: the one in ``init``).
        overwrite: replace an existing ``out_dir``.

    Example:
    >>> finetune("runs/pretrain", "train.csv", "eval.csv", "runs/cls")  # doctest: +SKIP
    """
    cfg = cfg or FinetuneConfig()
    cfg.validate()
    if os.path.exists(out_dir) and not overwrite:
        raise FileExistsError(f"{out_dir} exists; pass --overwrite to replace it")
    keras.utils.set_random_seed(cfg.seed)
    # -- data ------------------------------------------------------------------------
    spm_file = tokenizer_path(init, tokenizer)
    pieces = PieceEncoder(spm_file)
    spec = _task_spec(cfg)
    train = load_task_data(train_path, spec, pieces)
    evaluation = load_task_data(eval_path, spec, pieces) if eval_path else None
    logger.info(f"{cfg.task}: {len(train)} training rows"
        + (f", {len(evaluation)} eval rows" if evaluation else "")
        + (f", labels {spec['labels']}" if spec["labels"] and len(spec["labels"]) <= 20 else ""))

    # -- model -----------------------------------------------------------------------
    strategy = make_strategy(cfg.strategy)
    steps_per_epoch = max(1, len(train) // cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    with strategy.scope():
        encoder = load_encoder(init, dtype=cfg.precision, from_scratch=cfg.from_scratch)
        if pieces.vocabulary_size > encoder.config.vocab_size:
            raise ValueError(
                f"{spm_file}: {pieces.vocabulary_size} pieces, but the model's vocabulary "
                f"has {encoder.config.vocab_size}"
            )
        if cfg.sequence_length > encoder.config.max_position_embeddings:
            raise ValueError(
                f"sequence_length {cfg.sequence_length} exceeds the model's "
                f"max_position_embeddings {encoder.config.max_position_embeddings}"
            )
        model = build_task_model(spec, encoder, cfg.dropout)
        loss, loss_weights, metrics = task_losses(spec)
        weighted = spec["task"] == "tag"
        model.compile(
            optimizer=make_optimizer(
                "adamw", learning_rate=cfg.learning_rate, total_steps=total,
                warmup_steps=int(cfg.warmup_fraction * total),
                weight_decay=cfg.weight_decay, clip_norm=1.0,
            ),
            loss=loss, loss_weights=loss_weights,
            metrics=None if weighted else metrics,
            weighted_metrics=metrics if weighted else None,
        )

    with writing_folder(out_dir) as tmp:
        # -- fit -------------------------------------------------------------------
        guard = NanGuard()
        history = model.fit(
            make_dataset(train, cfg.batch_size, True, cfg.seed),
            epochs=cfg.epochs,
            shuffle=False,  # the dataset shuffles itself
            callbacks=[guard, keras.callbacks.CSVLogger(os.path.join(tmp, "metrics.csv"))],
            verbose=2,
        )
        if guard.bad_step is not None:
            raise RuntimeError(f"loss became NaN at step {guard.bad_step}; lower --learning-rate")

        # -- evaluate and write ------------------------------------------------------
        result = {"train_loss": float(history.history["loss"][-1])}
        if evaluation is not None and evaluation.y is not None:
            result.update(score(spec, evaluation, predict_outputs(model, evaluation)))
        save_model(model, os.path.join(tmp, "model.keras"))
        shutil.copyfile(spm_file, os.path.join(tmp, "spm.model"))
        write_json(os.path.join(tmp, TASK_FILE), spec)
        write_json(os.path.join(tmp, "metrics.json"), result)
        write_json(os.path.join(tmp, "train_config.json"),
                   {**dataclasses.asdict(cfg), "init": os.path.abspath(init),
                    "train": os.path.abspath(train_path),
                    "eval": os.path.abspath(eval_path) if eval_path else None})
    return result
