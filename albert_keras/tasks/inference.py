"""Using models: evaluate and predict with a fine-tuned folder, fill-mask
with a pretraining folder, embeddings from any of them."""

import os

import numpy as np
import tensorflow as tf

from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.model_folder import TASK_FILE
from albert_keras.model_folder import ModelSource
from albert_keras.models.albert_embedder import AlbertEmbedder
from albert_keras.tasks import readers
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import TaskSpec
from albert_keras.tasks.task import softmax
from albert_keras.tasks.task_run import predict_outputs
from albert_keras.text.packer import pack_texts

MASK_TOKEN = "[MASK]"


def _read_task(folder, path, require_labels=True):
    source = ModelSource(folder)
    model, spec = source.task_model()
    spec = TaskSpec.from_json(spec, os.path.join(folder, TASK_FILE))
    task = get_task(spec.task)
    data, _ = task.read(path, spec, source.tokenizer, require_labels=require_labels)
    return model, spec, task, data


def evaluate(folder, path, batch_size=64, length_buckets=True):
    """The task metrics of a fine-tuned folder on a labelled file (rows
    batched by length unless ``length_buckets`` is False)."""
    model, spec, task, data = _read_task(folder, path)
    return task.score(spec, data, predict_outputs(model, data, batch_size, length_buckets))


def predict(folder, path, batch_size=64, length_buckets=True):
    """Predictions for every row of ``path`` (labels not needed), as dicts,
    each with ``row``: the example's place in the file, from 0. Rows are
    batched by length unless ``length_buckets`` is False; the predictions
    come back in the file's order either way."""
    model, spec, task, data = _read_task(folder, path, require_labels=False)
    records = task.records(spec, data, predict_outputs(model, data, batch_size,
                                                       length_buckets))
    return [{"row": i, **record} for i, record in enumerate(records)]


# -- fill-mask ---------------------------------------------------------------------------


def encode_with_masks(tokenizer, text):
    """Ids for ``text`` with every ``[MASK]`` as the mask id."""
    parts = text.split(MASK_TOKEN)
    if len(parts) < 2:
        raise ValueError(f"no {MASK_TOKEN} in {text!r}")
    ids = []
    for i, part in enumerate(parts):
        if part.strip():
            ids.extend(tokenizer.encode([part.strip()])[0])
        if i < len(parts) - 1:
            ids.append(tokenizer.special_ids["mask"])
    return ids


def fill_mask(folder, texts, top_k=5, sequence_length=128, tokenizer=None):
    """Top-k pieces for each ``[MASK]`` of each text, with the pretrained
    MLM head (``pretrainer.keras`` of a pretraining folder, or a published
    checkpoint with its MLM head).

    Each text runs at its own length (one text per forward pass: nothing is
    padded).

    Args:
        folder: the pretraining folder or checkpoint.
        texts: texts with one or more ``[MASK]``.
        top_k: candidates per mask.
        sequence_length: texts are cut to this many tokenizer.
        tokenizer: a tokenizer file (default: the folder's).

    Returns:
        Per text, a list (one per mask) of ``[{"token", "text", "id",
        "probability"}]``, best first: ``token`` is the piece as the
        vocabulary spells it, ``text`` the piece decoded.
    """
    source = ModelSource(folder, tokenizer)
    model, path = source.pretrainer()
    if not hasattr(model, "mlm_head"):
        raise ValueError(f"{path}: {type(model).__name__} has no masked-LM head")
    return fill_mask_with(model, source.tokenizer, texts, top_k, sequence_length)


def fill_mask_with(model, tokenizer, texts, top_k=5, sequence_length=128):
    """``fill_mask`` with a model that has a masked-LM head, and its tokenizer."""
    sequence_length = min(sequence_length, model.config.max_position_embeddings)
    results = []
    for text in texts:
        special = tokenizer.special_ids
        ids = [special["cls"]] + encode_with_masks(tokenizer, text)[:sequence_length - 2] + \
            [special["sep"]]
        positions = [i for i, t in enumerate(ids) if t == special["mask"]]
        if not positions:
            raise ValueError(f"the {MASK_TOKEN} in {text!r} falls past sequence_length")
        x = {
            "token_ids": tf.constant([ids], tf.int32),
            "segment_ids": tf.zeros((1, len(ids)), tf.int32),
            "padding_mask": tf.ones((1, len(ids)), tf.int32),
            "masked_positions": tf.constant([positions], tf.int32),
        }
        if hasattr(model, "generator_logits"):  # rtd: the generator is the MLM
            logits = np.asarray(model.generator_logits(x), np.float32)[0]
        else:
            logits = np.asarray(model(x, training=False)["mlm_logits"], np.float32)[0]
        probs = softmax(logits)
        per_mask = []
        for p in probs:
            best = np.argsort(p)[::-1][:top_k]
            per_mask.append([{"token": tokenizer.id_to_piece(i), "text": tokenizer.decode([i]),
                              "id": int(i),
                              "probability": float(p[i])} for i in best])
        results.append(per_mask)
    return results


# -- embeddings --------------------------------------------------------------------------


def embed(folder, texts, sequence_length=128, batch_size=64, tokenizer=None,  # noqa: PLR0913 (the command's flags, and the embedder's choices)
          length_buckets=True, **embedding):
    """``[N, D]`` float32 text embeddings from any of our model folders.

    Args:
        folder: a model folder, a ``.keras`` file (with ``tokenizer``) or a
            published checkpoint folder.
        texts: the texts.
        sequence_length: the packed length (at most the model's).
        batch_size: texts per forward pass.
        tokenizer: a tokenizer file (default: the folder's).
        length_buckets: batch the texts by length (the same vectors, less
            padding computed).
        **embedding: ``AlbertEmbedder``'s choices: ``layers``, ``pooling``,
            ``combine``, ``normalize``.
    """
    source = ModelSource(folder, tokenizer)
    pooling = embedding.get("pooling", "mean")
    encoder = source.encoder(dtype="float32", output_hidden_states=pooling != "pooled")
    model = AlbertEmbedder(encoder, **embedding)
    tokenizer = source.tokenizer
    for i, text in enumerate(texts):
        if not text.strip():
            raise readers.TaskDataError(f"text {i + 1} is empty")
    sequence_length = min(sequence_length, encoder.config.max_position_embeddings)
    x = pack_texts(tokenizer, list(texts), None, sequence_length)
    if length_buckets:
        return predict_in_buckets(model, x, batch_size)["embeddings"]
    return model.predict(x, batch_size=batch_size, verbose=0)["embeddings"]
