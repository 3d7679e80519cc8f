"""The pretraining losses, written once for both pretrainers.

``EncoderPretrainer`` and ``ElectraPretrainer`` (generator and
discriminator) train on these Keras losses; the held-out evaluation sums
the same quantities in NumPy over a whole split (``masked_lm_sums``,
``sentence_order_sums``), from the models' outputs.
"""

import keras
import numpy as np
from keras import ops

from albert_keras.replicas import weighted_mean


def masked_lm_loss(masked_ids, logits, masked_weights):
    """Cross-entropy of the masked positions, averaged over the real ones
    (``masked_weights`` 1) of the global batch.

    Example:
    >>> logits = ops.array([[[0.0, 0.0], [5.0, 0.0]]])
    >>> round(float(masked_lm_loss(ops.array([[0, 0]]), logits, ops.array([[1.0, 0.0]]))), 4)
    0.6931
    """
    losses = keras.losses.sparse_categorical_crossentropy(masked_ids, logits, from_logits=True)
    return weighted_mean(losses, ops.cast(masked_weights, "float32"))


def sentence_order_loss(labels, logits):
    """Cross-entropy of the sentence-order (or next-sentence) head, averaged
    over the examples."""
    return ops.mean(keras.losses.sparse_categorical_crossentropy(labels, logits,
                                                                 from_logits=True))


def masked_lm_sums(logits, labels, weights):
    """``(summed cross-entropy, correct, weighed count)`` of one batch's
    masked-LM predictions (NumPy).

    Example:
    >>> sums = masked_lm_sums(np.array([[[0.0, 0.0]]]), np.array([[1]]), np.array([[1.0]]))
    >>> [round(float(x), 4) for x in sums]
    [0.6931, 0.0, 1.0]
    """
    logits, labels, weights = np.asarray(logits), np.asarray(labels), np.asarray(weights)
    log_probs = logits - _logsumexp(logits)
    picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    return (-float((picked * weights).sum()),
            float(((logits.argmax(-1) == labels) * weights).sum()), float(weights.sum()))


def sentence_order_sums(logits, labels):
    """``(summed cross-entropy, correct, count)`` of one batch's
    sentence-order predictions (NumPy)."""
    return masked_lm_sums(logits, labels, np.ones(np.shape(labels), np.float64))


def _logsumexp(x):
    m = x.max(-1, keepdims=True)
    return m + np.log(np.exp(x - m).sum(-1, keepdims=True))
