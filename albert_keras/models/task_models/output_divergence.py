"""How far a task model's perturbed outputs are from its clean ones, by the
shape of the outputs: what adversarial fine-tuning (SiFT, R3F) adds to the
loss. Each task model class says which of these reads its outputs (its
``divergence``); ``kl`` is the per-row divergence of two logit rows
(``albert_keras.training.adversarial.symmetric_kl`` or ``full_symmetric_kl``).

Example:
>>> import numpy as np
>>> from albert_keras.training.adversarial import symmetric_kl
>>> a = np.zeros((2, 3), "float32")
>>> float(per_row(a, a, symmetric_kl))
0.0
"""

from keras import ops

_SPAN_MASK = -1e4  # a padded position's span logit, out of the softmax


def per_row(logits, clean, kl):
    """One row of logits per example (a classifier's, multiple choice's):
    the mean of ``kl`` over the rows."""
    return ops.mean(kl(logits, clean))


def squared_error(values, clean):
    """A regressor's one output: the mean squared difference (DeBERTa's ``mse``)."""
    return ops.mean(ops.square(ops.cast(values, "float32") - ops.cast(clean, "float32")))


def per_token(logits, clean, padding_mask, kl):
    """One row per token ``[B, S, C]`` (a tagger's): the mean of ``kl`` over
    the real tokens."""
    weights = ops.cast(padding_mask, "float32")
    rows = kl(logits, clean)  # [B, S]
    return ops.sum(rows * weights) / ops.maximum(ops.sum(weights), 1.0)


def over_positions(logits, clean, padding_mask, kl):
    """One row over the sequence per example ``[B, S]`` (QA's start or end
    logits), padded positions left out: the mean of ``kl`` over the rows."""
    pad = (1.0 - ops.cast(padding_mask, "float32")) * _SPAN_MASK
    return ops.mean(kl(ops.cast(logits, "float32") + pad, ops.cast(clean, "float32") + pad))
