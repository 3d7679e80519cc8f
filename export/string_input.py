"""Packing one example inside a TFLite graph with builtin ops only.

``SegmentPacker`` uses tf-text's trimmers and ``combine_segments``, which
work on ragged tensors; TFLite has no builtin kernels for those, so a
string-in model would need the Flex delegate. For one example (batch 1) the
same packing is a few slices, concatenations and a pad, written here by
hand; the tests check it equals ``SegmentPacker`` for every length pair.
"""

import tensorflow as tf

from albert_keras.text.special_ids import ALBERT_SPECIAL_IDS
from albert_keras.text.truncation import DEFAULT_TRUNCATE
from albert_keras.text.truncation import SINGLE_TEXT_TRUNCATIONS


def _keep_lengths(len_a, len_b, budget, truncate):
    """How many pieces of each segment survive truncation."""
    if truncate == "waterfall":
        keep_a = tf.minimum(len_a, budget)
        return keep_a, tf.minimum(len_b, budget - keep_a)
    # longest_first = tf-text's RoundRobinTrimmer: pieces are handed out
    # one at a time, first segment first, until the budget is spent.
    half_up = (budget + 1) // 2
    keep_a = tf.minimum(len_a, tf.maximum(half_up, budget - len_b))
    return keep_a, tf.minimum(len_b, budget - keep_a)


def _keep_ends_one(ids, budget, mode):
    """One example's ``SegmentPacker`` head/tail/head+tail cut, as slices."""
    length = tf.shape(ids)[0]
    head = {"head": budget, "tail": 0, "head+tail": budget // 4}[mode]
    tail = budget - head
    # Arithmetic instead of tf.cond (an IF op): a short text keeps all of
    # itself as its "head" and nothing as its tail.
    long = length > budget
    head_end = tf.where(long, head, length)
    tail_start = tf.where(long, length - tail, length)
    return tf.concat([ids[:head_end], ids[tail_start:]], 0)


def pack_one(first, second, sequence_length, truncate=DEFAULT_TRUNCATE, special_ids=None):
    """``[CLS] A [SEP] (B [SEP])`` padded to ``[1, sequence_length]``.

    Args:
        first: 1-D int32 piece ids.
        second: 1-D int32 piece ids, or None.
        sequence_length: S.
        truncate: as ``SegmentPacker``.
        special_ids: the tokenizer's ``{"cls", "sep"}`` ids (default: ALBERT's).

    Returns:
        ``(token_ids, padding_mask, segment_ids)``, each int32 ``[1, S]``.
    """
    first = tf.cast(first, tf.int32)
    special = {**ALBERT_SPECIAL_IDS, **(special_ids or {})}
    cls = tf.constant([special["cls"]], tf.int32)
    sep = tf.constant([special["sep"]], tf.int32)
    if second is None:
        if truncate in SINGLE_TEXT_TRUNCATIONS:
            kept = _keep_ends_one(first, sequence_length - 2, truncate)
        else:
            kept = first[:tf.minimum(tf.shape(first)[0], sequence_length - 2)]
        ids = tf.concat([cls, kept, sep], 0)
        segments = tf.zeros_like(ids)
    else:
        second = tf.cast(second, tf.int32)
        keep_a, keep_b = _keep_lengths(
            tf.shape(first)[0], tf.shape(second)[0], sequence_length - 3, truncate
        )
        ids = tf.concat([cls, first[:keep_a], sep, second[:keep_b], sep], 0)
        segments = tf.concat(
            [tf.zeros([keep_a + 2], tf.int32), tf.ones([keep_b + 1], tf.int32)], 0
        )
    length = tf.shape(ids)[0]
    padding = [[0, sequence_length - length]]
    # Reshape (a builtin) pins the static shape; EnsureShape is not a builtin.
    shape = [1, sequence_length]
    return (
        tf.reshape(tf.pad(ids, padding, constant_values=special["pad"]), shape),
        tf.reshape(tf.pad(tf.ones([length], tf.int32), padding), shape),
        tf.reshape(tf.pad(segments, padding), shape),
    )
