"""Distiller: the soft-target loss against numpy, the alpha mix of
soft and hard losses, and the shared model checks."""

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import SequenceClassifier
from albert_keras import TokenTagger
from albert_keras.models.distillers.distiller import Distiller
from albert_keras.models.distillers.distiller import soft_target_loss
from tests.helpers import TINY
from tests.helpers import encoder_inputs
from tests.helpers import run_model_test


def _np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _np_soft(student, teacher, t, mask=None):
    p = np.exp(_np_log_softmax(teacher / t))
    kl = (p * (_np_log_softmax(teacher / t) - _np_log_softmax(student / t))).sum(-1) * t * t
    if mask is None:
        return kl.mean()
    return (kl * mask).sum() / mask.sum()


@pytest.mark.parametrize("temperature", [1.0, 2.0, 4.0])
def test_soft_target_loss_equals_numpy(temperature):
    rng = np.random.default_rng(0)
    student = rng.normal(size=(3, 5, 4)).astype(np.float32) * 3
    teacher = rng.normal(size=(3, 5, 4)).astype(np.float32) * 3
    mask = (rng.random((3, 5)) > 0.3).astype(np.float32)
    got = float(soft_target_loss(student, teacher, temperature, mask))
    assert got == pytest.approx(_np_soft(student, teacher, temperature, mask), rel=1e-5)
    got = float(soft_target_loss(student[:, 0], teacher[:, 0], temperature))
    assert got == pytest.approx(_np_soft(student[:, 0], teacher[:, 0], temperature), rel=1e-5)
    # the same distribution costs nothing
    assert float(soft_target_loss(teacher, teacher, temperature)) == pytest.approx(0, abs=1e-6)


def _classifier(dtype=None, classes=3):
    return SequenceClassifier(AlbertEncoder(AlbertConfig(**TINY), dtype=dtype), classes,
                            dtype=dtype)


def test_distiller_model_checks():
    run_model_test(
        lambda dtype: Distiller(_classifier(dtype), temperature=3.0, alpha=0.7),
        encoder_inputs,
        lambda b, s: {"logits": (b, 3)},
    )


def _hard_ce(logits, labels, weights):
    """Keras' default reduction: the weighted sum over the batch size."""
    nll = -_np_log_softmax(logits)[np.arange(len(labels)), labels]
    return (nll * weights).sum() / len(labels)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_loss_mixes_soft_and_hard_by_alpha(alpha):
    keras.utils.set_random_seed(0)
    student = _classifier()
    student.compile(loss={"logits": keras.losses.SparseCategoricalCrossentropy(
        from_logits=True)})
    model = Distiller(student, temperature=2.0, alpha=alpha)
    x = encoder_inputs(4, 9)
    logits = np.asarray(model(x)["logits"], np.float32)
    teacher = np.random.default_rng(1).normal(size=(4, 3)).astype(np.float32)
    labels = np.array([0, 2, 1, 0])
    weights = np.array([1, 1, 0, 0], np.float32)  # the last two rows are unlabelled
    y = {"teacher": {"logits": teacher}, "labels": {"logits": labels},
         "label_weight": {"logits": weights}}
    got = float(model.compute_loss(x, y, {"logits": logits}))
    want = alpha * _np_soft(logits, teacher, 2.0) + (1 - alpha) * _hard_ce(logits, labels,
                                                                           weights)
    assert got == pytest.approx(want, rel=1e-5)


def test_tagger_soft_loss_counts_real_positions_only():
    keras.utils.set_random_seed(0)
    student = TokenTagger(AlbertEncoder(AlbertConfig(**TINY)), 4)
    model = Distiller(student, temperature=1.0, alpha=1.0)
    x = encoder_inputs(2, 6)
    x["padding_mask"] = np.array([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], np.int32)
    logits = np.asarray(model(x)["logits"], np.float32)
    teacher = np.random.default_rng(2).normal(size=(2, 6, 4)).astype(np.float32)
    got = float(model.soft_loss(x, {"logits": teacher}, {"logits": logits}))
    assert got == pytest.approx(_np_soft(logits, teacher, 1.0, x["padding_mask"]), rel=1e-5)


def test_regression_uses_squared_error():
    model = Distiller(_classifier(classes=1), alpha=1.0, regression=True)
    x = encoder_inputs(3, 5)
    student = np.array([[0.5], [1.0], [-2.0]], np.float32)
    teacher = np.array([[1.5], [1.0], [0.0]], np.float32)
    got = float(model.soft_loss(x, {"logits": teacher}, {"logits": student}))
    assert got == pytest.approx(np.mean((student - teacher) ** 2), rel=1e-6)
