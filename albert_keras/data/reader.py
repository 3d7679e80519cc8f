"""Reading pretraining shards into the pretraining feature dict (the encoder's
three inputs plus masked_positions, masked_ids, masked_weights, sop_label)."""

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


def verify_shards(data_dir, split):
    """Checks every shard's size and SHA-256 against the manifest, the
    manifest's vocabulary against its tokenizer, and the first records of
    every shard against the manifest's lengths.

    A truncated or corrupted shard is named here, before training starts,
    rather than surfacing as a CRC error deep inside ``fit``.
    """
    manifest = read_manifest(data_dir)
    if split not in manifest["splits"]:
        raise DataError(f"{data_dir}: no {split!r} split (has {sorted(manifest['splits'])})")
    for shard in manifest["splits"][split]["shards"]:
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


def pretraining_dataset(  # noqa: C901,PLR0913,PLR0915 (to split into named steps: issue 59)
    data_dir,
    split="train",
    batch_size=32,
    dynamic_masking=False,
    seed=0,
    shuffle=True,
    repeat=True,
    drop_remainder=True,
    shuffle_buffer=10000,
    input_context=None,
    verify=True,
    skip_batches=0,
    masked_lm_prob=None,
):
    """A ``tf.data.Dataset`` of pretraining feature dicts.

    Each element: int32 ``token_ids``, ``segment_ids``, ``padding_mask``
    ``[B, S]``, ``masked_positions``, ``masked_ids`` ``[B, P]``, float32
    ``masked_weights`` ``[B, P]`` and int32 ``sop_label`` ``[B]``; shapes are
    static with ``drop_remainder`` (as a TPU needs).

    Args:
        data_dir: a folder made by ``albert-keras data create``.
        split: ``train`` or ``eval``.
        batch_size: examples per batch; with an ``input_context``, per
            replica (each element then feeds one replica).
        dynamic_masking: re-mask every batch in TF ops (RoBERTa-style) from
            the unmasked sequences, instead of the masks stored in the shards.
        seed: shuffling and dynamic-masking seed.
        shuffle, repeat, drop_remainder, shuffle_buffer: the usual.
        input_context: a ``tf.distribute.InputContext``. Every input
            pipeline reads the same global batches (``batch_size`` times the
            replica count) and keeps its replicas' rows, so a step trains on
            the same examples, with the same dynamic masks, on one device or on
            many workers, and a run may resume on another topology. The price
            is that each worker reads and parses every global batch (cheap next
            to a training step; tokenization happened in ``data create``).
        verify: check shard checksums first (names a corrupted file).
        skip_batches: global batches to pass over first (a resumed run
            continues with the batches, and masks, an uninterrupted run
            would see); skipped before parsing, so resuming late is cheap.
        masked_lm_prob: with ``dynamic_masking``, the share of tokens to
            mask instead of the data's (``None``). The gathered positions
            ``P`` grow with it, in the data's ratio of positions to rate.

    Example:
    >>> ds = pretraining_dataset("data/", batch_size=64)  # doctest: +SKIP
    """
    data_dir = os.fspath(data_dir)
    manifest = verify_shards(data_dir, split) if verify else read_manifest(data_dir)
    config = manifest["config"]
    s, p = config["max_seq_length"], config["max_predictions"]
    files = [os.path.join(data_dir, x["file"]) for x in manifest["splits"][split]["shards"]]

    # Global batches: one per step over all replicas. This pipeline feeds
    # `local` of them, rows [first, first + local * batch_size) of each.
    replicas, local, first = 1, 1, 0
    if input_context is not None:
        replicas = input_context.num_replicas_in_sync
        local = replicas // input_context.num_input_pipelines
        first = input_context.input_pipeline_id * local * batch_size
        if replicas > 1 and not drop_remainder:
            raise ValueError("several replicas need drop_remainder=True (equal slices)")

    # The order is a function of the seed alone, never of how many iterators
    # were made before: Keras makes an extra one to build the model under a
    # tf.distribute strategy, and with reshuffle_each_iteration that shifted
    # every later order (a distributed run then trained on other batches than
    # one device). Each pass over the files gets its own stateless file order.
    file_names = tf.constant(files)

    def one_pass(epoch):
        names = file_names
        if shuffle:
            order = tf.random.experimental.stateless_shuffle(
                tf.range(len(files)), seed=tf.stack([tf.cast(seed, tf.int64), epoch]))
            names = tf.gather(file_names, order)
        return tf.data.Dataset.from_tensor_slices(names)

    if repeat:
        ds = tf.data.Dataset.counter().flat_map(one_pass)
    else:
        ds = one_pass(tf.constant(0, tf.int64))
    ds = ds.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 4),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=False)
    ds = ds.batch(batch_size * replicas, drop_remainder=drop_remainder)
    if skip_batches:
        ds = ds.skip(skip_batches)

    spec = feature_spec(s, p)

    def parse(records):
        parsed = tf.io.parse_example(records, spec)
        out = {k: tf.cast(v, tf.int32) for k, v in parsed.items() if k != "masked_weights"}
        out["masked_weights"] = parsed["masked_weights"]
        out["sop_label"] = out["sop_label"][:, 0]
        return out

    ds = ds.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

    if dynamic_masking:
        tokenizer = load_tokenizer(os.path.join(data_dir, manifest["tokenizer"]))
        word_starts = tf.constant(tokenizer.word_starts(), tf.bool)

        probs, whole_word = masking_scheme(config.get("masking", "ngram"),
                                           config["max_ngram"], config["whole_word"])
        rate = config["masked_lm_prob"] if masked_lm_prob is None else masked_lm_prob
        if not 0 < rate < 1:
            raise ValueError(f"masked_lm_prob must be in (0, 1), got {masked_lm_prob}")
        # The data's share of slots per masked token (max_predictions 20 for
        # 15% of 128 leaves room for whole words that overshoot), kept at
        # the new rate, and never more slots than tokens.
        predictions = min(s, max(p, round(p * rate / config["masked_lm_prob"])))

        def remask(step, features):
            original = unmask(features)
            masked = mask_batch(
                original,
                features["padding_mask"],
                word_starts,
                tf.stack([tf.cast(seed, tf.int64) * 1000, step]),
                manifest["vocab_size"],
                masked_lm_prob=rate,
                max_predictions=predictions,
                whole_word=whole_word,
                special_ids=tokenizer.special_ids,
                ngram_probs=probs,
            )
            return {**features, **masked}

        ds = ds.enumerate(start=skip_batches).map(
            remask, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if replicas > 1:
        # This pipeline's rows, one batch_size element per local replica
        # (a distributed dataset hands consecutive elements to its replicas).
        rows = local * batch_size
        ds = ds.map(lambda f: {k: v[first:first + rows] for k, v in f.items()},
                    num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
        if local > 1:
            ds = ds.rebatch(batch_size, drop_remainder=True)
    return ds.prefetch(tf.data.AUTOTUNE)
