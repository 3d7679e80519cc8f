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

from albert_keras.data.tfrecords import DataError
from albert_keras.data.tfrecords import feature_spec


def check_tokenizer(data_dir, manifest):
    """The manifest's vocabulary size is its tokenizer's."""
    from albert_keras.text.registry import load_tokenizer

    path = os.path.join(data_dir, manifest["tokenizer"])
    if not os.path.isfile(path):
        raise DataError(f"{path}: the data's tokenizer is missing")
    size = load_tokenizer(path).vocabulary_size
    if size != manifest["vocab_size"]:
        raise DataError(f"{os.path.join(data_dir, 'manifest.json')}: vocab_size "
                     f"{manifest['vocab_size']} but its tokenizer {path} has {size} pieces")


def _records(path):
    """``(index, bytes)`` of a TFRecord file (the framing, without CRCs: the
    shard's SHA-256 has been checked)."""
    with open(path, "rb") as f:
        index = 0
        while True:
            header = f.read(12)
            if not header:
                return
            if len(header) < 12:
                raise DataError(f"{path}: record {index} is cut short")
            length = int.from_bytes(header[:8], "little")
            data = f.read(length)
            if len(data) < length or len(f.read(4)) < 4:
                raise DataError(f"{path}: record {index} is cut short")
            yield index, data
            index += 1


def check_record(raw, path, index, manifest):
    """Checks one serialized record as the reader will parse it."""
    config = manifest["config"]
    where = (f"{path}: record {index} does not match the manifest (sequence "
             f"{config['max_seq_length']}, {config['max_predictions']} predictions)")
    try:
        features = tf.train.Example.FromString(raw).features.feature
    except Exception:  # noqa: BLE001  (protobuf's DecodeError and its kin)
        raise DataError(f"{where}: not a tf.train.Example") from None
    # The reader's own spec, checked in Python: no TensorFlow op may run here
    # (a multi-worker strategy must be made before the first op of a process).
    values = {}
    spec = feature_spec(config["max_seq_length"], config["max_predictions"])
    for name, feature in spec.items():
        kind = "float_list" if feature.dtype == tf.float32 else "int64_list"
        if name not in features or features[name].WhichOneof("kind") != kind:
            raise DataError(f"{where}: no {kind.split('_')[0]} feature {name!r}")
        values[name] = list(getattr(features[name], kind).value)
        expected = feature.shape[0]
        if len(values[name]) != expected:
            raise DataError(f"{where}: {name} has {len(values[name])} values, not {expected}")
    for name in ("token_ids", "masked_ids"):
        if values[name] and (min(values[name]) < 0
                             or max(values[name]) >= manifest["vocab_size"]):
            raise DataError(f"{path}: record {index}: {name} holds id {max(values[name])}, "
                         f"outside the manifest's vocabulary of {manifest['vocab_size']}")
    positions = values["masked_positions"]
    if positions and (min(positions) < 0 or max(positions) >= config["max_seq_length"]):
        raise DataError(f"{path}: record {index}: a masked position is outside the sequence")


def check_records(data_dir, manifest, split, per_shard=2):
    """Checks the first ``per_shard`` records of every shard of ``split``."""
    for shard in manifest["splits"][split]["shards"]:
        path = os.path.join(data_dir, shard["file"])
        for index, raw in _records(path):
            if index >= per_shard:
                break
            check_record(raw, path, index, manifest)


def find_bad_record(data_dir, manifest, split):
    """The first record of ``split`` that does not parse, as a ``DataError``.

    Every record, one at a time: for naming the culprit after ``fit`` failed
    on a record, not for every run. Returns None when all parse.
    """
    for shard in manifest["splits"][split]["shards"]:
        path = os.path.join(data_dir, shard["file"])
        try:
            for index, raw in _records(path):
                check_record(raw, path, index, manifest)
        except DataError as e:
            return e
    return None
