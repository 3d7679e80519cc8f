"""Packing one example inside a TFLite graph with builtin ops only.

``AlbertPacker`` uses tf-text's trimmers and ``combine_segments``, which
work on ragged tensors; TFLite has no builtin kernels for those, so a
string-in model would need the Flex delegate. For one example (batch 1) the
same packing is a few slices, concatenations and a pad, written here by
hand; the tests check it equals ``AlbertPacker`` for every length pair.
"""

import tensorflow as tf

from albert_keras.config import CLS_ID
from albert_keras.config import SEP_ID


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


def pack_one(first, second, sequence_length, truncate="longest_first"):
    """``[CLS] A [SEP] (B [SEP])`` padded to ``[1, sequence_length]``.

    Args:
        first: 1-D int32 piece ids.
        second: 1-D int32 piece ids, or None.
        sequence_length: S.
        truncate: ``longest_first`` or ``waterfall`` (as ``AlbertPacker``).

    Returns:
        ``(token_ids, padding_mask, segment_ids)``, each int32 ``[1, S]``.
    """
    first = tf.cast(first, tf.int32)
    cls = tf.constant([CLS_ID], tf.int32)
    sep = tf.constant([SEP_ID], tf.int32)
    if second is None:
        keep_a = tf.minimum(tf.shape(first)[0], sequence_length - 2)
        ids = tf.concat([cls, first[:keep_a], sep], 0)
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
        tf.reshape(tf.pad(ids, padding), shape),
        tf.reshape(tf.pad(tf.ones([length], tf.int32), padding), shape),
        tf.reshape(tf.pad(segments, padding), shape),
    )
