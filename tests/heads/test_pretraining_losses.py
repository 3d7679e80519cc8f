"""The pretraining losses against PyTorch's cross-entropy (code we did not write)."""

import numpy as np
import torch

from albert_keras.heads.pretraining_losses import masked_lm_loss
from albert_keras.heads.pretraining_losses import masked_lm_sums
from albert_keras.heads.pretraining_losses import sentence_order_loss
from albert_keras.heads.pretraining_losses import sentence_order_sums


def _batch(seed=0, batch=3, positions=5, vocab=11):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, (batch, positions, vocab)).astype("float32")
    ids = rng.integers(0, vocab, (batch, positions))
    weights = (rng.random((batch, positions)) < 0.7).astype("float32")
    return logits, ids, weights


def _torch_ce(logits, labels):
    return torch.nn.functional.cross_entropy(
        torch.tensor(logits).reshape(-1, logits.shape[-1]), torch.tensor(labels).reshape(-1),
        reduction="none").numpy().reshape(labels.shape)


def test_masked_lm_loss_is_the_weighted_mean_cross_entropy():
    logits, ids, weights = _batch()
    ce = _torch_ce(logits, ids)
    expected = (ce * weights).sum() / (weights.sum() + 1e-5)
    got = float(masked_lm_loss(ids, logits, weights))
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    # the held-out sums: the same cross-entropy, the argmax hits, the count
    summed, correct, count = masked_lm_sums(logits, ids, weights)
    np.testing.assert_allclose(summed, (ce * weights).sum(), rtol=1e-5)
    assert correct == ((logits.argmax(-1) == ids) * weights).sum() and count == weights.sum()


def test_sentence_order_loss_is_the_mean_cross_entropy():
    rng = np.random.default_rng(1)
    logits = rng.normal(0, 2, (7, 2)).astype("float32")
    labels = rng.integers(0, 2, 7)
    ce = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(labels),
                                           reduction="none").numpy()
    np.testing.assert_allclose(float(sentence_order_loss(labels, logits)), ce.mean(), rtol=1e-5)
    summed, correct, count = sentence_order_sums(logits, labels)
    np.testing.assert_allclose(summed, ce.sum(), rtol=1e-5)
    assert correct == (logits.argmax(-1) == labels).sum() and count == 7
