"""Checking a data folder's records against its manifest and tokenizer.

A shard can pass its checksum and still not hold what the manifest says: a
manifest edited by hand, shards copied in from another run, a tokenizer
swapped after the data was made. Parse errors then surface deep inside
``fit`` as an op error naming neither file nor record, and a vocabulary
mismatch trains to completion on ids the tokenizer cannot read back. These
checks name the file (and record) before training starts, and find the bad
record when one surfaces later.
"""

import os

import tensorflow as tf

from albert_keras.data.tfrecords import feature_spec


def _error(message):
    from albert_keras.data.reader import DataError

    return DataError(message)


def check_tokenizer(data_dir, manifest):
    """The manifest's vocabulary size is its tokenizer's."""
    from albert_keras.text.registry import load_tokenizer

    path = os.path.join(data_dir, manifest["tokenizer"])
    if not os.path.isfile(path):
        raise _error(f"{path}: the data's tokenizer is missing")
    size = load_tokenizer(path).vocabulary_size
    if size != manifest["vocab_size"]:
        raise _error(f"{os.path.join(data_dir, 'manifest.json')}: vocab_size "
                     f"{manifest['vocab_size']} but its tokenizer {path} has {size} pieces")


def check_record(raw, path, index, manifest):
    """Parses one serialized record as the reader will; a bad one names itself."""
    config = manifest["config"]
    try:
        parsed = tf.io.parse_single_example(
            raw, feature_spec(config["max_seq_length"], config["max_predictions"]))
    except (tf.errors.InvalidArgumentError, ValueError) as e:
        detail = " ".join(str(e).split())[:200]
        raise _error(f"{path}: record {index} does not match the manifest (sequence "
                     f"{config['max_seq_length']}, {config['max_predictions']} predictions): "
                     f"{detail}") from None
    for name in ("token_ids", "masked_ids"):
        ids = parsed[name].numpy()
        if ids.size and (ids.min() < 0 or ids.max() >= manifest["vocab_size"]):
            raise _error(f"{path}: record {index}: {name} holds id {int(ids.max())}, outside "
                         f"the manifest's vocabulary of {manifest['vocab_size']}")
    positions = parsed["masked_positions"].numpy()
    if positions.size and (positions.min() < 0 or positions.max() >= config["max_seq_length"]):
        raise _error(f"{path}: record {index}: a masked position is outside the sequence")


def check_records(data_dir, manifest, split, per_shard=2):
    """Parses the first ``per_shard`` records of every shard of ``split``."""
    for shard in manifest["splits"][split]["shards"]:
        path = os.path.join(data_dir, shard["file"])
        try:
            for index, raw in enumerate(tf.data.TFRecordDataset(path).take(per_shard)):
                check_record(raw, path, index, manifest)
        except tf.errors.DataLossError:
            raise _error(f"{path}: not a TFRecord file (or cut short)") from None


def find_bad_record(data_dir, manifest, split):
    """The first record of ``split`` that does not parse, as a ``DataError``.

    Slow (every record, one at a time): for naming the culprit after ``fit``
    failed on a record, not for every run. Returns None when all parse.
    """
    for shard in manifest["splits"][split]["shards"]:
        path = os.path.join(data_dir, shard["file"])
        index = 0
        try:
            for index, raw in enumerate(tf.data.TFRecordDataset(path)):
                check_record(raw, path, index, manifest)
        except tf.errors.DataLossError:
            return _error(f"{path}: record {index + 1} is cut short or corrupted")
        except ValueError as e:  # DataError
            return e
    return None


