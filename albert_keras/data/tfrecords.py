"""The on-disk format of pretraining examples: TFRecord shards + manifest.

Each record is a ``tf.train.Example`` with int64 ``token_ids``,
``segment_ids``, ``padding_mask`` ``[S]``, ``masked_positions``,
``masked_ids`` ``[P]``, float ``masked_weights`` ``[P]`` and int64
``sop_label`` ``[1]``. The unmasked sequence is recoverable (put
``masked_ids`` back at ``masked_positions``), which is what dynamic masking
starts from.
"""

import os

import tensorflow as tf

from albert_keras.files import sha256_file

FORMAT = "albert_keras.pretraining.v1"


class DataError(ValueError):
    """A dataset folder or shard we cannot use, with the file named."""


def _int64(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _float(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def serialize_example(tokens, segments, positions, labels, sop_label, config):
    """One ``tf.train.Example``, padded to the configured lengths."""
    s, p = config.max_seq_length, config.max_predictions
    n = len(tokens)
    features = {
        "token_ids": _int64(list(tokens) + [0] * (s - n)),
        "segment_ids": _int64(list(segments) + [0] * (s - n)),
        "padding_mask": _int64([1] * n + [0] * (s - n)),
        "masked_positions": _int64(list(positions) + [0] * (p - len(positions))),
        "masked_ids": _int64(list(labels) + [0] * (p - len(labels))),
        "masked_weights": _float([1.0] * len(positions) + [0.0] * (p - len(positions))),
        "sop_label": _int64([sop_label]),
    }
    return tf.train.Example(
        features=tf.train.Features(feature=features)
    ).SerializeToString(deterministic=True)  # map keys sorted: same bytes in every process


def feature_spec(max_seq_length, max_predictions):
    """The ``tf.io.parse_example`` spec of a record."""
    s, p = max_seq_length, max_predictions
    return {
        "token_ids": tf.io.FixedLenFeature([s], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([s], tf.int64),
        "padding_mask": tf.io.FixedLenFeature([s], tf.int64),
        "masked_positions": tf.io.FixedLenFeature([p], tf.int64),
        "masked_ids": tf.io.FixedLenFeature([p], tf.int64),
        "masked_weights": tf.io.FixedLenFeature([p], tf.float32),
        "sop_label": tf.io.FixedLenFeature([1], tf.int64),
    }


def shard_name(split, index, num_shards):
    return f"{split}-{index:05d}-of-{num_shards:05d}.tfrecord"


def write_shard(records, folder, split, index, num_shards):
    """Writes one shard of serialized examples, in the order given.

    Returns:
        ``{"file", "examples", "bytes", "sha256"}``.
    """
    name = shard_name(split, index, num_shards)
    path = os.path.join(folder, name)
    count = 0
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
            count += 1
    return {"file": name, "examples": count, "bytes": os.path.getsize(path),
            "sha256": sha256_file(path)}
