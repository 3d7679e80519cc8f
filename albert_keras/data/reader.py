"""Reading pretraining shards into the pretraining feature dict (the encoder's
three inputs plus masked_positions, masked_ids, masked_weights, sop_label)."""

import dataclasses
import json
import os

import tensorflow as tf

from albert_keras.data.dynamic_masking import mask_batch
from albert_keras.data.dynamic_masking import unmask
from albert_keras.data.masking import masking_scheme
from albert_keras.data.record_check import check_records
from albert_keras.data.record_check import check_tokenizer
from albert_keras.data.tfrecords import FORMAT
from albert_keras.data.tfrecords import DataError
from albert_keras.data.tfrecords import feature_spec
from albert_keras.files import sha256_file
from albert_keras.text.registry import load_tokenizer

# The data folder's description: its config, splits, shards and checksums.
MANIFEST_FILE = "manifest.json"


def read_manifest(data_dir):
    path = os.path.join(os.fspath(data_dir), MANIFEST_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise DataError(f"{path}: no manifest; create the data with albert-keras data create") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: unreadable manifest: {e}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else None
        raise DataError(f"{path}: format {found!r}, expected {FORMAT!r}")
    _check_manifest(manifest, path)
    return manifest


def _check_manifest(manifest, path):
    """The fields the readers use, with their types: a hand-edited or damaged
    manifest is one line naming the field, not a KeyError later."""
    def need(value, kind, where, positive=False):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise DataError(f"{path}: {where} must be a {kind.__name__}")
        if positive and value < 1:
            raise DataError(f"{path}: {where} must be positive")
        return value

    config = need(manifest.get("config"), dict, "'config'")
    need(config.get("max_seq_length"), int, "config.max_seq_length", positive=True)
    need(config.get("max_predictions"), int, "config.max_predictions", positive=True)
    need(config.get("random_next", False), bool, "config.random_next")
    if need(config.get("packing", "pairs"), str, "config.packing") not in (
            "pairs", "full_sentences"):
        raise DataError(f"{path}: config.packing must be pairs or full_sentences")
    name = need(manifest.get("tokenizer"), str, "'tokenizer'")
    if os.path.basename(name) != name or name in ("", ".", ".."):
        raise DataError(f"{path}: 'tokenizer' must be a file name in the folder")
    need(manifest.get("vocab_size"), int, "'vocab_size'", positive=True)
    for split, summary in need(manifest.get("splits"), dict, "'splits'").items():
        need(summary, dict, f"splits.{split}")
        need(summary.get("examples"), int, f"splits.{split}.examples")
        for i, shard in enumerate(need(summary.get("shards"), list, f"splits.{split}.shards")):
            where = f"splits.{split}.shards[{i}]"
            need(shard, dict, where)
            file = need(shard.get("file"), str, f"{where}.file")
            if os.path.basename(file) != file or file in ("", ".", ".."):
                raise DataError(f"{path}: {where}.file must be a file name in the folder")
            need(shard.get("bytes"), int, f"{where}.bytes")
            need(shard.get("sha256"), str, f"{where}.sha256")
            need(shard.get("examples"), int, f"{where}.examples")


def split_shards(data_dir, manifest, split):
    """The manifest's shard entries of ``split``; one line naming the folder
    when the data has no such split."""
    if split not in manifest["splits"]:
        raise DataError(f"{data_dir}: no {split!r} split (has {sorted(manifest['splits'])})")
    return manifest["splits"][split]["shards"]


def verify_shards(data_dir, split):
    """Checks every shard's size and SHA-256 against the manifest, the
    manifest's vocabulary against its tokenizer, and the first records of
    every shard against the manifest's lengths.

    A truncated or corrupted shard is named here, before training starts,
    rather than surfacing as a CRC error deep inside ``fit``.
    """
    manifest = read_manifest(data_dir)
    for shard in split_shards(data_dir, manifest, split):
        path = os.path.join(data_dir, shard["file"])
        if not os.path.isfile(path):
            raise DataError(f"{path}: shard missing")
        if os.path.getsize(path) != shard["bytes"]:
            raise DataError(
                f"{path}: corrupted shard ({os.path.getsize(path)} bytes, "
                f"manifest says {shard['bytes']})"
            )
        if sha256_file(path) != shard["sha256"]:
            raise DataError(f"{path}: corrupted shard (checksum differs from the manifest)")
    check_tokenizer(data_dir, manifest)
    check_records(data_dir, manifest, split)
    return manifest


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    """How ``pretraining_dataset`` reads a data folder.

    Args:
        batch_size: examples per batch; with an ``input_context``, per
            replica (each element then feeds one replica).
        dynamic_masking: re-mask every batch in TF ops (RoBERTa-style) from
            the unmasked sequences, instead of the masks stored in the shards.
        seed: shuffling and dynamic-masking seed.
        shuffle: shuffle the files (a stateless order per pass) and the records.
        repeat: pass over the data again and again.
        drop_remainder: whole batches only (static shapes, as a TPU needs).
        shuffle_buffer: records in the shuffle buffer.
        verify: check shard checksums first (names a corrupted file).
        skip_batches: global batches to pass over first (a resumed run
            continues with the batches, and masks, an uninterrupted run
            would see); skipped before parsing, so resuming late is cheap.
        masked_lm_prob: with ``dynamic_masking``, the share of tokens to
            mask instead of the data's (``None``). The gathered positions
            ``P`` grow with it, in the data's ratio of positions to rate.
    """

    batch_size: int = 32
    dynamic_masking: bool = False
    seed: int = 0
    shuffle: bool = True
    repeat: bool = True
    drop_remainder: bool = True
    shuffle_buffer: int = 10000
    verify: bool = True
    skip_batches: int = 0
    masked_lm_prob: float = None


def pretraining_dataset(data_dir, split="train", options=None, input_context=None, **fields):
    """A ``tf.data.Dataset`` of pretraining feature dicts.

    Each element: int32 ``token_ids``, ``segment_ids``, ``padding_mask``
    ``[B, S]``, ``masked_positions``, ``masked_ids`` ``[B, P]``, float32
    ``masked_weights`` ``[B, P]`` and int32 ``sop_label`` ``[B]``; shapes are
    static with ``drop_remainder`` (as a TPU needs).

    Args:
        data_dir: a folder made by ``albert-keras data create``.
        split: ``train`` or ``eval``.
        options: a ``ReadOptions``.
        input_context: a ``tf.distribute.InputContext``. Every input
            pipeline reads the same global batches (``batch_size`` times the
            replica count) and keeps its replicas' rows, so a step trains on
            the same examples, with the same dynamic masks, on one device or on
            many workers, and a run may resume on another topology. The price
            is that each worker reads and parses every global batch (cheap next
            to a training step; tokenization happened in ``data create``).
        **fields: ``ReadOptions`` fields, as a shorthand for ``options``.

    Example:
    >>> ds = pretraining_dataset("data/", batch_size=64)  # doctest: +SKIP
    """
    o = dataclasses.replace(options or ReadOptions(), **fields)
    data_dir = os.fspath(data_dir)
    manifest = verify_shards(data_dir, split) if o.verify else read_manifest(data_dir)
    config = manifest["config"]
    files = [os.path.join(data_dir, x["file"]) for x in split_shards(data_dir, manifest, split)]
    replicas, local, first = _pipeline_share(input_context, o)
    ds = _batched_records(files, o, o.batch_size * replicas)
    spec = feature_spec(config["max_seq_length"], config["max_predictions"])
    ds = ds.map(lambda records: _parse(records, spec), num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True)
    if o.dynamic_masking:
        ds = _dynamic_masks(ds, data_dir, manifest, o)
    if replicas > 1:
        # This pipeline's rows, one batch_size element per local replica
        # (a distributed dataset hands consecutive elements to its replicas).
        rows = local * o.batch_size
        ds = ds.map(lambda f: {k: v[first:first + rows] for k, v in f.items()},
                    num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if local > 1:
            ds = ds.rebatch(o.batch_size, drop_remainder=True)
    return ds.prefetch(tf.data.AUTOTUNE)


def _pipeline_share(input_context, o):
    """``(replicas, local, first)``: global batches feed every replica; this
    pipeline feeds ``local`` of them, rows ``[first, first + local * B)``."""
    if input_context is None:
        return 1, 1, 0
    replicas = input_context.num_replicas_in_sync
    local = replicas // input_context.num_input_pipelines
    if replicas > 1 and not o.drop_remainder:
        raise ValueError("several replicas need drop_remainder=True (equal slices)")
    return replicas, local, input_context.input_pipeline_id * local * o.batch_size


def _batched_records(files, o, global_batch):
    """Serialized records in global batches, in an order set by the seed."""
    # The order is a function of the seed alone, never of how many iterators
    # were made before: Keras makes an extra one to build the model under a
    # tf.distribute strategy, and with reshuffle_each_iteration that shifted
    # every later order (a distributed run then trained on other batches than
    # one device). Each pass over the files gets its own stateless file order.
    file_names = tf.constant(files)

    def one_pass(epoch):
        names = file_names
        if o.shuffle:
            order = tf.random.experimental.stateless_shuffle(
                tf.range(len(files)), seed=tf.stack([tf.cast(o.seed, tf.int64), epoch]))
            names = tf.gather(file_names, order)
        return tf.data.Dataset.from_tensor_slices(names)

    ds = (tf.data.Dataset.counter().flat_map(one_pass) if o.repeat
          else one_pass(tf.constant(0, tf.int64)))
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 4),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if o.shuffle:
        ds = ds.shuffle(o.shuffle_buffer, seed=o.seed, reshuffle_each_iteration=False)
    ds = ds.batch(global_batch, drop_remainder=o.drop_remainder)
    return ds.skip(o.skip_batches) if o.skip_batches else ds


def _parse(records, spec):
    parsed = tf.io.parse_example(records, spec)
    out = {k: tf.cast(v, tf.int32) for k, v in parsed.items() if k != "masked_weights"}
    out["masked_weights"] = parsed["masked_weights"]
    out["sop_label"] = out["sop_label"][:, 0]
    return out


def _dynamic_masks(ds, data_dir, manifest, o):
    """Every batch masked afresh from its unmasked sequences (seeded by step)."""
    config = manifest["config"]
    tokenizer = load_tokenizer(os.path.join(data_dir, manifest["tokenizer"]))
    word_starts = tf.constant(tokenizer.word_starts(), tf.bool)
    probs, whole_word = masking_scheme(config.get("masking", "ngram"), config["max_ngram"],
                                       config["whole_word"])
    rate = config["masked_lm_prob"] if o.masked_lm_prob is None else o.masked_lm_prob
    if not 0 < rate < 1:
        raise ValueError(f"masked_lm_prob must be in (0, 1), got {o.masked_lm_prob}")
    # The data's share of slots per masked token (max_predictions 20 for
    # 15% of 128 leaves room for whole words that overshoot), kept at the
    # new rate, and never more slots than tokens.
    s, p = config["max_seq_length"], config["max_predictions"]
    predictions = min(s, max(p, round(p * rate / config["masked_lm_prob"])))

    def remask(step, features):
        masked = mask_batch(
            unmask(features), features["padding_mask"], word_starts,
            tf.stack([tf.cast(o.seed, tf.int64) * 1000, step]), manifest["vocab_size"],
            masked_lm_prob=rate, max_predictions=predictions, whole_word=whole_word,
            special_ids=tokenizer.special_ids, ngram_probs=probs)
        return {**features, **masked}

    return ds.enumerate(start=o.skip_batches).map(
        remask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
