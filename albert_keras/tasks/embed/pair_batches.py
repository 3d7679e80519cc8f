"""Batches of text pairs (and hard negatives) for in-batch-negatives
training: each column packed alone, each batch cut to its longest row."""

import numpy as np
import tensorflow as tf


def pair_batches(packed, batch_size, seed, copies=1):
    """A ``tf.data.Dataset`` of ``(columns, labels)``: shuffled every epoch
    (seeded), full batches only (a row's negatives are the batch's other
    rows), each column cut to its longest row; the label of row ``i`` is
    ``i``, the labels repeated ``copies`` times (``InBatchNegatives.copies``:
    both directions, each Matryoshka width)."""
    rows = len(next(iter(packed.values()))["token_ids"])
    if rows < batch_size:
        raise ValueError(f"{rows} pairs, fewer than one batch of {batch_size}: lower "
                         "batch_size")
    arrays = {name: {k: np.asarray(v, np.int32) for k, v in part.items()}
              for name, part in packed.items()}
    dataset = tf.data.Dataset.from_tensor_slices(arrays).shuffle(
        rows, seed=seed, reshuffle_each_iteration=True).batch(batch_size, drop_remainder=True)

    def cut(batch):
        columns = {}
        for name, part in batch.items():
            longest = tf.reduce_max(tf.reduce_sum(part["padding_mask"], axis=1))
            columns[name] = {k: v[:, :longest] for k, v in part.items()}
        return columns, tf.tile(tf.range(batch_size), [copies])

    return dataset.map(cut, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
