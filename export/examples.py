"""The examples an export is validated (and int8-calibrated) on: rows of a
task or text file packed as the model reads them, or random ids when no
data is given."""

import dataclasses

import numpy as np
import tensorflow as tf

from albert_keras.export.converter import ExportError
from albert_keras.export.converter import Signature
from albert_keras.export.export_config import arg
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import ValidationTexts
from albert_keras.text.packer import SegmentPacker
from albert_keras.text.packer import pack_texts
from albert_keras.text.truncation import DEFAULT_TRUNCATE


def _texts_from_file(path, spec, tokenizer, pair):
    """``ValidationTexts`` from a task file (through its task) or plain text."""
    if spec is not None:
        return get_task(spec.task).validation_texts(path, spec, tokenizer)
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if pair:
        split = [line.split("\t", 1) for line in lines]
        if any(len(s) != 2 for s in split):
            raise ExportError(f"{path}: with {arg('pair')} each line must be 'text<TAB>pair'")
        return ValidationTexts([s[0] for s in split], [s[1] for s in split])
    return ValidationTexts(lines)


class Examples:
    """Feeds for the ``.tflite`` and the matching Keras inputs (and the texts
    they were made from, when they were)."""

    def __init__(self, keras_inputs, feeds, labels=None, source="", texts=None):
        self.keras_inputs, self.feeds, self.labels, self.source = \
            keras_inputs, feeds, labels, source
        self.texts = texts

    def __len__(self):
        return len(self.feeds)


def build_examples(path, job, count, seed, string_in=False):
    """Up to ``count`` examples from ``path`` (random ids when it is None).

    Args:
        path: a task or text file, or None.
        job: the export's ``_Job`` (kind, spec, tokenizer, sequence length,
            pair, choices, model).
        count: the most examples.
        seed: the sample's (and the random ids') seed.
        string_in: feeds of texts (``text``, ``text_pair``) instead of ids.
    """
    rng = np.random.default_rng(seed)
    if path is None and string_in:
        raise ExportError(f"string-in validation needs texts: pass {arg('validation_data')}")
    x, found, row_texts = ((_random_ids(job, count, rng), None, None) if path is None
                           else _file_examples(path, job, count, rng))
    source = path or "random ids (no data given)"
    n = min(count, len(x["token_ids"]))
    x = {k: v[:n] for k, v in x.items()}
    if job.kind.masked_positions:
        x["masked_positions"] = np.tile(np.minimum(np.arange(1, Signature.max_predictions + 1),
                                                   job.sequence_length - 1), (n, 1)).astype(np.int32)
    if string_in:
        feeds = [{"text": found.texts[i],
                  **({"text_pair": found.pairs[i]} if found.pairs else {})} for i in range(n)]
    else:
        names = {"token_ids": "ids", "padding_mask": "mask", "segment_ids": "segment_ids",
                 "masked_positions": "masked_positions"}
        feeds = [{names[k]: v[i:i + 1] for k, v in x.items()} for i in range(n)]
    labels = found.labels if found is not None else None
    return Examples(x, feeds, labels[:n] if labels is not None else None, source,
                    row_texts[:n] if row_texts is not None else None)


def _random_ids(job, count, rng):
    """Random packed ids of random lengths, ``[CLS]`` first (no data given)."""
    S = job.sequence_length
    shape = (count, job.num_choices, S) if job.kind.per_choice else (count, S)
    ids = rng.integers(5, job.model.config.vocab_size, shape).astype(np.int32)
    lengths = rng.integers(3, S + 1, shape[:-1])
    mask = (np.arange(S) < lengths[..., None]).astype(np.int32)
    special = job.tokenizer.special_ids
    ids = np.where(mask == 1, ids, special["pad"]).astype(np.int32)
    ids[..., 0] = special["cls"]
    return {"token_ids": ids, "padding_mask": mask, "segment_ids": np.zeros_like(ids)}


def _file_examples(path, job, count, rng):
    """``(x, found, row_texts)``: a sample of the file's rows, packed as the
    model reads them (``found`` keeps the sampled texts, pairs and labels)."""
    if job.tokenizer is None:
        raise ExportError(f"no tokenizer found for the validation texts: pass {arg('tokenizer')}")
    spec = job.spec.replace(sequence_length=job.sequence_length) if job.spec else None
    found = _texts_from_file(path, spec, job.tokenizer, job.pair)
    if found.x is not None:
        return found.x, found, None
    order = rng.permutation(len(found.texts))[:count]
    found = dataclasses.replace(
        found, texts=[found.texts[i] for i in order],
        pairs=[found.pairs[i] for i in order] if found.pairs else None,
        labels=[found.labels[i] for i in order] if found.labels is not None else None)
    truncate = spec.truncate if spec else DEFAULT_TRUNCATE
    if not job.tokenizer.in_graph:  # a kind with no in-graph form packs on the host
        return (pack_texts(job.tokenizer, found.texts, found.pairs, job.sequence_length,
                           truncate), found, None if found.pairs else found.texts)
    layer = job.tokenizer.keras_layer()
    packer = SegmentPacker(job.sequence_length, truncate=truncate,
                          special_ids=job.tokenizer.special_ids)
    packed = packer(layer(tf.constant(found.texts)),
                    layer(tf.constant(found.pairs)) if found.pairs else None)
    return ({k: v.numpy() for k, v in packed.items()}, found,
            None if found.pairs else found.texts)
