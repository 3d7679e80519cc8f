"""Raw documents to an objective's training batches, from Python.

``pretraining_data`` writes the data folder ``albert-keras data create``
writes (sentence pairs or whole sentences, stored masks, shards and their
manifest) from a list of strings or from corpus files; ``pretraining_inputs``
reads a data folder as the endless ``(x, y)`` batches an objective's model
trains on, masked afresh for every batch, exactly as ``albert-keras
pretrain`` reads it.
"""

import json
import os
import tempfile

import tensorflow as tf

from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from albert_keras.data.reader import read_manifest
from albert_keras.training.datasets import train_pipeline
from albert_keras.training.objectives import get_objective
from albert_keras.training.pretrain_config import PretrainConfig


def pretraining_data(documents, tokenizer, data_dir, workers=1, overwrite=False, **settings):  # noqa: PLR0913 (the documents, where they go, and DataConfig's fields)
    """Writes a pretraining data folder from raw documents.

    Args:
        documents: a list of strings, one document each (its sentences are
            split as a corpus file's paragraphs are), or of corpus file and
            folder paths (what ``data create`` reads).
        tokenizer: a tokenizer object (``Tokenizer.from_preset``) or file.
        data_dir: the folder to write.
        workers: processes for tokenizing.
        overwrite: replace an existing ``data_dir``.
        **settings: ``DataConfig`` fields (``max_seq_length``,
            ``dupe_factor``, ``packing``, ``eval_fraction``, ...).

    Returns:
        The folder's manifest (``examples`` per split and the config).

    Example:
    >>> pretraining_data(["First text. Its second sentence.", "Another one."],
    ...                  "spm.model", "data/", max_seq_length=64)  # doctest: +SKIP
    """
    texts = _documents_argument(documents)
    path = getattr(tokenizer, "source", tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        inputs = texts
        if texts is None:
            inputs = [os.path.join(tmp, "documents.jsonl")]
            with open(inputs[0], "w", encoding="utf-8") as f:
                for text in documents:
                    f.write(json.dumps({"text": text}) + "\n")
            settings = {"layout": "jsonl", "text_field": "text", **settings}
        return create_pretraining_data(inputs, os.fspath(path), data_dir,
                                       DataConfig(**settings), workers=workers,
                                       overwrite=overwrite)


def _documents_argument(documents):
    """None for a list of texts, or the list of paths; a bad list is one
    ``ValueError`` naming the row."""
    if isinstance(documents, (str, os.PathLike)):
        documents = [documents]
    documents = list(documents)
    if not documents:
        raise ValueError("documents: an empty list")
    for row, item in enumerate(documents):
        if not isinstance(item, (str, os.PathLike)):
            raise ValueError(f"documents[{row}]: {type(item).__name__}, not a string")
    if all(os.path.exists(os.fspath(item)) for item in documents):
        return [os.fspath(item) for item in documents]
    for row, item in enumerate(documents):
        if not isinstance(item, str) or not item.strip():
            raise ValueError(f"documents[{row}]: an empty text")
    return None


def pretraining_inputs(data_dir, objective="auto", batch_size=64, seed=0, mask_rate=None):
    """The endless ``(x, y)`` training batches of a data folder for an
    objective, masked afresh for every batch (the stored masks are ignored).

    Args:
        data_dir: a folder from ``pretraining_data`` or ``data create``.
        objective: ``mlm_sop``, ``mlm``, ``rtd``, ... (``auto``: the data's).
        batch_size: rows per batch.
        seed: the shuffling and masking seed.
        mask_rate: the share of tokens masked (default: the data's).

    Returns:
        A ``tf.data.Dataset`` of ``(x, y)`` dicts, as ``fit`` takes them.

    Example:
    >>> x, y = next(iter(pretraining_inputs("data/", "mlm_sop", batch_size=8)))  # doctest: +SKIP
    >>> sorted(x)  # doctest: +SKIP
    ['masked_positions', 'padding_mask', 'segment_ids', 'token_ids']
    """
    config = PretrainConfig(objective=objective, batch_size=batch_size, seed=seed,
                            mask_rate=mask_rate)
    config.validate()
    task = get_objective(objective, read_manifest(os.fspath(data_dir)), config)
    return train_pipeline(tf.distribute.InputContext(), os.fspath(data_dir), config, task)
