"""Whole-word n-gram masking in TF ops, fresh for every batch (RoBERTa-style).

The same algorithm as ``masking.mask_sequence`` (read that docstring), run on
a whole ``[B, S]`` batch with stateless random ops: no ``py_function``, so it
runs in a TPU host's input pipeline and in the tf.data service. The greedy
span selection is sequential by nature; the loop runs over word ranks
(at most S steps) and handles every row of the batch at once.
"""

import dataclasses

import tensorflow as tf

from albert_keras.data.masking import FIRST_NORMAL_ID
from albert_keras.data.masking import MaskingScheme


def unmask(features):
    """Puts ``masked_ids`` back at ``masked_positions``: the original tokens."""
    tokens = features["token_ids"]
    positions = features["masked_positions"]
    weights = tf.cast(features["masked_weights"] > 0, tokens.dtype)
    batch = tf.shape(tokens)[0]
    rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(positions))
    index = tf.stack([rows, positions], axis=-1)
    current = tf.gather_nd(tokens, index)
    update = current * (1 - weights) + features["masked_ids"] * weights
    return tf.tensor_scatter_nd_update(tokens, index, update)


def mask_batch(token_ids, padding_mask, word_starts, seed, vocab_size, scheme=None, **fields):
    """Masks a batch of packed, unmasked sequences.

    Args:
        token_ids: int32 ``[B, S]``.
        padding_mask: int32 ``[B, S]``.
        word_starts: bool ``[V]``: does piece ``i`` start a word.
        seed: int ``[2]`` for the stateless random ops (vary it per batch).
        vocab_size: for random replacements.
        scheme: a ``MaskingScheme`` (the rate, the slots, the n-grams).
        **fields: ``MaskingScheme`` fields, as a shorthand for ``scheme``.

    Returns:
        A dict of ``token_ids`` (masked), ``masked_positions``,
        ``masked_ids`` (int32 ``[B, P]``) and ``masked_weights`` (float32).
    """
    scheme = dataclasses.replace(scheme or MaskingScheme(), **fields)
    token_ids = tf.cast(token_ids, tf.int32)
    padding_mask = tf.cast(padding_mask, tf.int32)
    seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 6)
    words = _words(token_ids, padding_mask, word_starts, scheme)
    budget = tf.minimum(scheme.max_predictions, tf.maximum(1, tf.cast(tf.round(
        tf.cast(tf.reduce_sum(padding_mask, axis=1), tf.float32) * scheme.masked_lm_prob),
        tf.int32)))
    order, ngram = _draw_words_and_ngrams(words, seeds, scheme)
    covered = _greedy_selection(words, order, ngram, budget, len(scheme.weights))
    return _masked_features(token_ids, words, covered, seeds, vocab_size, scheme)


def _words(token_ids, padding_mask, word_starts, scheme):
    """The maskable words of each row: which word each token is in, how many
    tokens each word has, and their running sum."""
    batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    ids = scheme.ids
    special = (token_ids == ids["cls"]) | (token_ids == ids["sep"]) | (padding_mask == 0)
    candidate = ~special
    prev_special = tf.concat([tf.ones([batch, 1], tf.bool), special[:, :-1]], axis=1)
    if scheme.whole_word:
        starts_word = tf.gather(tf.cast(word_starts, tf.bool), token_ids)
        is_start = candidate & (starts_word | prev_special)
    else:
        is_start = candidate
    word_id = tf.cumsum(tf.cast(is_start, tf.int32), axis=1) - 1  # per token
    word_of_token = tf.where(candidate, word_id, length)  # non-candidates -> S
    word_len = tf.reduce_sum(
        tf.one_hot(word_of_token, length + 1, dtype=tf.int32), axis=1
    )[:, :length]  # [B, S]: tokens in word w
    cum_len = tf.concat(
        [tf.zeros([batch, 1], tf.int32), tf.cumsum(word_len, axis=1)], axis=1
    )  # [B, S + 1]
    return {"candidate": candidate, "num": tf.reduce_sum(tf.cast(is_start, tf.int32), axis=1),
            "of_token": word_of_token, "len": word_len, "cum_len": cum_len}


def _draw_words_and_ngrams(words, seeds, scheme):
    """A random order of each row's words, and an n-gram length drawn for each."""
    batch, length = tf.shape(words["len"])[0], tf.shape(words["len"])[1]
    max_ngram = len(scheme.weights)
    word_index = tf.range(length)[None, :]
    valid_word = word_index < words["num"][:, None]
    keys = tf.random.stateless_uniform([batch, length], seeds[0])
    keys = tf.where(valid_word, keys, 2.0)
    order = tf.argsort(keys, axis=1, stable=True)  # [B, S] word indices
    weights = tf.constant(scheme.weights, tf.float32)
    max_n = tf.clip_by_value(words["num"][:, None] - word_index, 1, max_ngram)  # [B, S]
    allowed = tf.range(1, max_ngram + 1)[None, None, :] <= max_n[:, :, None]
    probs = tf.where(allowed, weights[None, None, :], 0.0)
    cdf = tf.cumsum(probs, axis=-1) / tf.reduce_sum(probs, axis=-1, keepdims=True)
    u = tf.random.stateless_uniform([batch, length, 1], seeds[1])
    ngram = 1 + tf.reduce_sum(tf.cast(u > cdf[:, :, :-1], tf.int32), axis=-1)  # [B, S]
    return order, ngram


def _greedy_selection(words, order, ngram, budget, max_ngram):
    """Which words are masked: one word rank per step, all rows at once."""
    batch, length = tf.shape(words["len"])[0], tf.shape(words["len"])[1]
    rows, word_index = tf.range(batch), tf.range(length)[None, :]
    num_words, cum_len, word_len = words["num"], words["cum_len"], words["len"]

    def body(r, covered, count):
        w = order[:, r]
        n = tf.gather_nd(ngram, tf.stack([rows, w], axis=1))
        ok = (w < num_words) & (count < budget)
        chosen = tf.zeros_like(w)
        for k in range(1, max_ngram + 1):  # the largest k <= n that fits
            end = tf.minimum(w + k, length)
            span = tf.gather_nd(cum_len, tf.stack([rows, end], 1)) - tf.gather_nd(
                cum_len, tf.stack([rows, w], 1)
            )
            fits = (k <= n) & (w + k <= num_words) & (count + span <= budget)
            chosen = tf.where(fits, k, chosen)
        in_span = (word_index >= w[:, None]) & (word_index < (w + chosen)[:, None])
        overlap = tf.reduce_any(in_span & covered, axis=1)
        accept = ok & (chosen > 0) & ~overlap
        take = in_span & accept[:, None]
        added = tf.reduce_sum(tf.where(take, word_len, 0), axis=1)
        return r + 1, covered | take, count + added

    _, covered, _ = tf.while_loop(
        lambda r, c, n: r < length,
        body,
        (tf.constant(0), tf.zeros([batch, length], tf.bool), tf.zeros([batch], tf.int32)),
    )
    return covered


def _masked_features(token_ids, words, covered, seeds, vocab_size, scheme):  # noqa: PLR0913 (the step's inputs)
    """The chosen words' tokens replaced (80% [MASK], 10% random, 10% kept),
    and their positions and original ids in ``P`` slots."""
    batch, length = tf.shape(token_ids)[0], tf.shape(token_ids)[1]
    max_predictions = scheme.max_predictions
    safe_word = tf.minimum(words["of_token"], length - 1)
    selected = words["candidate"] & tf.gather(covered, safe_word, batch_dims=1)
    u1 = tf.random.stateless_uniform([batch, length], seeds[2])
    u2 = tf.random.stateless_uniform([batch, length], seeds[3])
    random_ids = tf.random.stateless_uniform(
        [batch, length], seeds[4], minval=FIRST_NORMAL_ID, maxval=vocab_size, dtype=tf.int32
    )
    replacement = tf.where(u1 < 0.8, scheme.ids["mask"],
                           tf.where(u2 < 0.5, token_ids, random_ids))
    masked_tokens = tf.where(selected, replacement, token_ids)

    positions = tf.range(length)[None, :]
    rank_key = tf.where(selected, positions, length + positions)
    masked_positions = tf.argsort(rank_key, axis=1)[:, :max_predictions]
    # Sequences shorter than max_predictions: pad the position list.
    pad = tf.maximum(0, max_predictions - length)
    masked_positions = tf.pad(masked_positions, [[0, 0], [0, pad]])
    weight = tf.range(max_predictions)[None, :] < tf.reduce_sum(
        tf.cast(selected, tf.int32), axis=1, keepdims=True
    )
    masked_positions = tf.where(weight, masked_positions, 0)
    masked_ids = tf.where(weight, tf.gather(token_ids, masked_positions, batch_dims=1), 0)
    return {
        "token_ids": masked_tokens,
        "masked_positions": masked_positions,
        "masked_ids": masked_ids,
        "masked_weights": tf.cast(weight, tf.float32),
    }
