"""LayerDistiller: the hidden-state and attention losses against numpy,
the layer map, the shared model checks, and a teacher that stays frozen."""

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.models.distillers.layer_distiller import LayerDistiller
from albert_keras.models.distillers.layer_distiller import attention_transfer_loss
from albert_keras.models.distillers.layer_distiller import hidden_transfer_loss
from albert_keras.models.distillers.layer_map import parse_layer_map
from albert_keras.models.distillers.layer_map import uniform_layer_map
from tests.helpers import TINY
from tests.helpers import encoder_inputs
from tests.helpers import run_model_test

# 2 blocks, narrower, one head: the teacher (TINY) has 8 blocks of 2 heads
STUDENT = dict(TINY, hidden_size=8, num_hidden_layers=2, num_hidden_groups=1,
               inner_group_num=1, num_attention_heads=1, intermediate_size=12)


def _softmax(z, mask=None):
    if mask is not None:
        z = np.where(mask, z, -1e9)
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def test_hidden_loss_equals_numpy():
    rng = np.random.default_rng(0)
    s, t = rng.normal(size=(2, 3, 5, 4)), rng.normal(size=(2, 3, 5, 4))
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    per_token = ((s - t) ** 2).mean(-1)  # [B, K, S]
    want = (per_token * mask[:, None]).sum() / (mask.sum() * 3)
    got = float(hidden_transfer_loss(s.astype("float32"), t.astype("float32"), mask))
    assert got == pytest.approx(want, rel=1e-5)


def test_attention_loss_equals_numpy_and_ignores_padding():
    rng = np.random.default_rng(1)
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]])
    keys = mask[:, None, None, None, :].astype(bool)
    s = _softmax(rng.normal(size=(2, 2, 3, 4, 4)), keys)
    t = _softmax(rng.normal(size=(2, 2, 3, 4, 4)), keys)
    # exactly 0 at padded keys, as the encoder's softmax gives in float32
    s, t = s * keys, t * keys
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(t > 0, t * (np.log(t) - np.log(s)), 0.0).sum(-1)  # [B, K, N, S]
    want = (kl * mask[:, None, None]).sum() / (mask.sum() * 2 * 3)
    got = float(attention_transfer_loss(s.astype("float32"), t.astype("float32"), mask))
    assert got == pytest.approx(want, rel=1e-5)
    assert float(attention_transfer_loss(t, t, mask)) == pytest.approx(0.0, abs=1e-6)
    # what padded query rows hold does not count
    noisy = s.copy()
    noisy[0, :, :, 3] = _softmax(rng.normal(size=(2, 3, 4)))
    assert float(attention_transfer_loss(noisy.astype("float32"), t.astype("float32"),
                                         mask)) == pytest.approx(got, rel=1e-6)


def test_layer_maps():
    assert uniform_layer_map(2, 8) == [(0, 0), (1, 4), (2, 8)]
    assert uniform_layer_map(3, 12) == [(0, 0), (1, 4), (2, 8), (3, 12)]
    assert uniform_layer_map(4, 4) == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]
    assert parse_layer_map("2:12, 1:6", 2, 12) == [(2, 12), (1, 6)]
    assert parse_layer_map(None, 1, 3) == [(0, 0), (1, 3)]
    with pytest.raises(ValueError, match="more blocks"):
        uniform_layer_map(4, 2)
    for bad, match in [("1-3", "STUDENT:TEACHER"), ("3:1", "outside"), ("1:13", "outside"),
                       ("0:2", "embedding"), ("1:2,1:3", "twice")]:
        with pytest.raises(ValueError, match=match):
            parse_layer_map(bad, 2, 12)


def _model(dtype=None, student=STUDENT, **kwargs):
    keras.utils.set_random_seed(0)
    return LayerDistiller(AlbertEncoder(AlbertConfig(**TINY), dtype=dtype),
                                AlbertEncoder(AlbertConfig(**student), dtype=dtype), **kwargs)


def test_layer_distiller_model_checks():
    # 3 hidden pairs (embeddings and 2 blocks), 2 block pairs, heads averaged
    run_model_test(_model, encoder_inputs, lambda b, s: {
        "student_hidden": (b, 3, s, 16), "teacher_hidden": (b, 3, s, 16),
        "student_attention": (b, 2, 1, s, s), "teacher_attention": (b, 2, 1, s, s)})


def test_projection_only_when_widths_differ_and_heads_kept_when_equal():
    narrow = _model()
    assert narrow.hidden_projection is not None and not narrow.same_heads
    same = _model(student=dict(STUDENT, hidden_size=16, num_attention_heads=2),
                  layer_map=[(1, 2), (2, 8)])
    assert same.hidden_projection is None and same.same_heads
    out = same(encoder_inputs(2, 6))
    assert tuple(out["student_hidden"].shape) == (2, 2, 6, 16)
    assert tuple(out["teacher_attention"].shape) == (2, 2, 2, 6, 6)
    # the teacher's states are its own: block 8's output is the encoder's output
    teacher_out = same.teacher(encoder_inputs(2, 6))["sequence_output"]
    np.testing.assert_allclose(np.asarray(out["teacher_hidden"])[:, 1],
                               np.asarray(teacher_out), atol=1e-5)
    # embeddings only: no attention pairs, no attention outputs
    assert "student_attention" not in _model(layer_map=[(0, 0)])(encoder_inputs(2, 6))


def test_fit_lowers_both_losses_and_leaves_the_teacher_alone():
    model = _model()
    teacher_before = [np.array(w) for w in model.teacher.weights]
    student_before = [np.array(w) for w in model.student.weights]
    x = encoder_inputs(8, 10)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    history = model.fit(x, epochs=25, batch_size=8, verbose=0).history
    assert history["hidden_loss"][-1] < 0.7 * history["hidden_loss"][0]
    assert history["attention_loss"][-1] < history["attention_loss"][0]
    for before, w in zip(teacher_before, model.teacher.weights):
        np.testing.assert_array_equal(before, np.array(w))
    assert any(not np.array_equal(b, np.array(w))
               for b, w in zip(student_before, model.student.weights))
