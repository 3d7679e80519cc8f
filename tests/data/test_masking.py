import random

import numpy as np
import pytest
import tensorflow as tf

from albert_keras.data.dynamic_masking import mask_batch
from albert_keras.data.masking import candidate_words
from albert_keras.data.masking import mask_sequence
from albert_keras.data.masking import masking_scheme
from albert_keras.text.special_ids import CLS_ID
from albert_keras.text.special_ids import MASK_ID
from albert_keras.text.special_ids import SEP_ID

V = 200
WORD_STARTS = [True] * 5 + [random.Random(7).random() < 0.55 for _ in range(V - 5)]


def random_sequences(n, seed=0, max_len=128):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        length = rng.randint(20, max_len)
        a = rng.randint(5, length - 8)
        body = [rng.randint(5, V - 1) for _ in range(length - 3)]
        out.append([CLS_ID] + body[:a] + [SEP_ID] + body[a:] + [SEP_ID])
    return out


def check_statistics(sequences, masked_sequences, positions_list, max_predictions=20):
    total = masked = kept = replaced = mask_token = 0
    for tokens, out, positions in zip(sequences, masked_sequences, positions_list):
        positions = list(positions)
        assert len(positions) <= max_predictions
        assert positions == sorted(set(positions))
        total += len(tokens)
        masked += len(positions)
        for i in positions:
            assert tokens[i] not in (CLS_ID, SEP_ID)  # never a special token
            if out[i] == MASK_ID:
                mask_token += 1
            elif out[i] == tokens[i]:
                kept += 1
            else:
                replaced += 1
                assert out[i] >= 5
        unmasked = set(range(len(tokens))) - set(positions)
        assert all(out[i] == tokens[i] for i in unmasked)
        # Whole words are masked whole.
        chosen = set(positions)
        for word in candidate_words(tokens, WORD_STARTS):
            assert len(chosen & set(word)) in (0, len(word)), word
    rate = masked / total
    assert abs(rate - 0.15) < 0.01, rate
    assert abs(mask_token / masked - 0.8) < 0.02
    assert abs(kept / masked - 0.1) < 0.015
    assert abs(replaced / masked - 0.1) < 0.015


def test_static_mask_statistics():
    sequences = random_sequences(3000)
    rng = random.Random(0)
    drawn, masked_counts = [0, 0, 0], [0, 0, 0]
    outs, positions = [], []
    for tokens in sequences:
        out, pos, labels = mask_sequence(tokens, WORD_STARTS, rng, V,
                                         drawn_counts=drawn, masked_counts=masked_counts)
        assert labels == [tokens[i] for i in pos]
        outs.append(out)
        positions.append(pos)
    check_statistics(sequences, outs, positions)
    fractions = np.array(drawn) / sum(drawn)
    np.testing.assert_allclose(fractions, [6 / 11, 3 / 11, 2 / 11], atol=0.015)
    # Budget shortening and overlaps favour short n-grams, as in the original.
    masked_fractions = np.array(masked_counts) / sum(masked_counts)
    assert masked_fractions[0] >= fractions[0] and masked_fractions[2] > 0.05


def test_static_masking_is_seeded():
    tokens = random_sequences(1)[0]
    a = mask_sequence(tokens, WORD_STARTS, random.Random(5), V)
    b = mask_sequence(tokens, WORD_STARTS, random.Random(5), V)
    c = mask_sequence(tokens, WORD_STARTS, random.Random(6), V)
    assert a == b and a != c


def test_prediction_cap():
    tokens = random_sequences(1, max_len=128)[0]
    _, pos, _ = mask_sequence(tokens, WORD_STARTS, random.Random(0), V,
                              masked_lm_prob=0.5, max_predictions=7)
    assert len(pos) == 7


def _pad(sequences, length=128):
    ids = np.zeros((len(sequences), length), np.int32)
    mask = np.zeros_like(ids)
    for i, s in enumerate(sequences):
        ids[i, : len(s)] = s
        mask[i, : len(s)] = 1
    return ids, mask


@pytest.mark.parametrize("whole_word", [True, False])
def test_dynamic_mask_statistics(whole_word):
    sequences = random_sequences(2048, seed=1)
    ids, mask = _pad(sequences)
    outs, positions = [], []
    for start in range(0, len(sequences), 256):
        result = mask_batch(ids[start:start + 256], mask[start:start + 256],
                            tf.constant(WORD_STARTS), [3, start], V, whole_word=whole_word)
        for row in range(result["token_ids"].shape[0]):
            w = result["masked_weights"][row].numpy() > 0
            positions.append(result["masked_positions"][row].numpy()[w].tolist())
            n = len(sequences[start + row])
            outs.append(result["token_ids"][row].numpy()[:n].tolist())
            np.testing.assert_array_equal(
                result["masked_ids"][row].numpy()[w], ids[start + row, positions[-1]])
            assert (result["token_ids"][row].numpy()[n:] == 0).all()
    if whole_word:
        check_statistics(sequences, outs, positions)
    else:
        total = sum(len(s) for s in sequences)
        assert abs(sum(len(p) for p in positions) / total - 0.15) < 0.01


def test_dynamic_masking_changes_with_the_seed_and_repeats_with_it():
    ids, mask = _pad(random_sequences(8, seed=2))
    a = mask_batch(ids, mask, tf.constant(WORD_STARTS), [1, 1], V)
    b = mask_batch(ids, mask, tf.constant(WORD_STARTS), [1, 1], V)
    c = mask_batch(ids, mask, tf.constant(WORD_STARTS), [1, 2], V)
    np.testing.assert_array_equal(a["token_ids"], b["token_ids"])
    assert not np.array_equal(a["masked_positions"], c["masked_positions"])


def test_dynamic_masking_in_a_graph_without_py_function():
    fn = tf.function(lambda i, m, s: mask_batch(i, m, tf.constant(WORD_STARTS), s, V))
    ids, mask = _pad(random_sequences(4, seed=3))
    graph = fn.get_concrete_function(
        tf.TensorSpec([4, 128], tf.int32), tf.TensorSpec([4, 128], tf.int32),
        tf.TensorSpec([2], tf.int64)).graph
    ops = {op.type for op in graph.get_operations()}
    assert not ops & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}
    fn(ids, mask, tf.constant([0, 1], tf.int64))


def _runs(positions, tokens):
    """Lengths (in words) of the contiguous masked stretches of one row."""
    words = candidate_words(tokens, WORD_STARTS)
    masked = [all(i in positions for i in w) for w in words]
    runs, current = [], 0
    for m in masked + [False]:
        if m:
            current += 1
        elif current:
            runs.append(current)
            current = 0
    return runs


def test_span_masking_draws_geometric_whole_word_spans():
    """SpanBERT: lengths ~ Geometric(0.2) clipped at 10, whole words, 15%."""
    sequences = random_sequences(3000, seed=2)
    probs, whole_word = masking_scheme("span")
    assert whole_word and len(probs) == 10 and sum(probs) == pytest.approx(1.0)
    geometric = np.array([0.2 * 0.8 ** (n - 1) for n in range(1, 11)])
    np.testing.assert_allclose(probs, geometric / geometric.sum(), rtol=1e-12)
    rng = random.Random(0)
    drawn, outs, positions, runs = [0] * 10, [], [], {"span": [], "ngram": []}
    for tokens in sequences:
        out, pos, _ = mask_sequence(tokens, WORD_STARTS, rng, V, ngram_probs=probs,
                                    drawn_counts=drawn)
        outs.append(out)
        positions.append(pos)
        runs["span"] += _runs(set(pos), tokens)
        _, pos3, _ = mask_sequence(tokens, WORD_STARTS, rng, V)
        runs["ngram"] += _runs(set(pos3), tokens)
    check_statistics(sequences, outs, positions)
    # A word near the end of a sequence allows only the lengths that fit, so
    # short spans are drawn a little more often than the clipped geometric.
    fractions = np.array(drawn) / sum(drawn)
    np.testing.assert_allclose(fractions, probs, atol=0.03)
    assert fractions[0] > probs[0] and fractions[9] > 0.01
    assert max(runs["span"]) > 3  # spans longer than ALBERT's n-grams reach
    assert np.mean(runs["span"]) > np.mean(runs["ngram"])


def test_dynamic_span_and_token_masking():
    sequences = random_sequences(1024, seed=4)
    ids, mask = _pad(sequences)
    for masking in ("span", "token"):
        probs, whole_word = masking_scheme(masking)
        result = mask_batch(ids, mask, tf.constant(WORD_STARTS), [5, 0], V,
                            whole_word=whole_word, ngram_probs=probs)
        outs, positions, runs = [], [], []
        for row in range(len(sequences)):
            w = result["masked_weights"][row].numpy() > 0
            positions.append(result["masked_positions"][row].numpy()[w].tolist())
            outs.append(result["token_ids"][row].numpy()[:len(sequences[row])].tolist())
            runs += _runs(set(positions[-1]), sequences[row])
        if masking == "span":
            check_statistics(sequences, outs, positions)
            assert max(runs) > 3
        else:
            total = sum(len(s) for s in sequences)
            assert abs(sum(len(p) for p in positions) / total - 0.15) < 0.01
    with pytest.raises(ValueError, match="masking must be one of"):
        masking_scheme("words")
