"""Progressive knowledge transfer: each loss term against a numpy reference
written from MobileBERT's code (TF Model Garden's
``projects/mobilebert/distillation.py``), then the stages on tiny models."""

import keras
import numpy as np
import pytest

from albert_keras import EncoderPretrainer
from albert_keras import MobileBertConfig
from albert_keras import MobileBertEncoder
from albert_keras.models.distillers.progressive_distiller import ProgressiveDistiller
from albert_keras.models.distillers.progressive_distiller import attention_loss
from albert_keras.models.distillers.progressive_distiller import distribution_losses
from albert_keras.models.distillers.progressive_distiller import feature_map_loss
from albert_keras.models.distillers.progressive_distiller import soft_masked_lm_loss
from albert_keras.models.distillers.progressive_distiller import stage_rate_scales
from tests.helpers import MOBILEBERT

RNG = np.random.default_rng(0)
MASK = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")


def _real(values):
    """The rows of ``values`` ``[B, S, ...]`` at MASK's real positions."""
    return values[MASK.astype(bool)]


def _log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def test_feature_map_loss_is_layer_normed_mse():
    s, t = RNG.normal(size=(2, 5, 6)), 3 * RNG.normal(size=(2, 5, 6)) + 1

    def layer_norm(x):  # Keras' LayerNormalization, no weights, its epsilon 1e-3
        return (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-3)

    want = np.mean((layer_norm(_real(t)) - layer_norm(_real(s))) ** 2)
    np.testing.assert_allclose(float(feature_map_loss(s, t, MASK)), want, rtol=1e-5)


def test_distribution_losses_are_mean_mse_and_variance_l1():
    s, t = RNG.normal(size=(2, 5, 6)), 2 * RNG.normal(size=(2, 5, 6)) + 0.5
    mean, variance = distribution_losses(s, t, MASK)
    s, t = _real(s), _real(t)
    np.testing.assert_allclose(float(mean), np.mean((s.mean(-1) - t.mean(-1)) ** 2), rtol=1e-5)
    np.testing.assert_allclose(float(variance), np.mean(np.abs(s.var(-1) - t.var(-1))),
                               rtol=1e-5)


def test_attention_loss_is_the_cross_entropy_of_the_scores():
    # scores [B, N, S, S] with the padded keys masked out, as the encoders do
    scores = {k: RNG.normal(size=(2, 3, 5, 5)) for k in ("s", "t")}
    keys = MASK[:, None, None, :].astype(bool)
    probs = {}
    for k, x in scores.items():
        x = np.where(keys, x, -1e9)
        scores[k] = x
        probs[k] = np.exp(_log_softmax(x))
    cross = -(np.exp(_log_softmax(scores["t"])) * _log_softmax(scores["s"])).sum(-1)  # [B,N,S]
    want = cross.transpose(0, 2, 1)[MASK.astype(bool)].mean()
    np.testing.assert_allclose(float(attention_loss(probs["s"], probs["t"], MASK)), want,
                               rtol=1e-5)


@pytest.mark.parametrize("ratio", [0.0, 0.5, 1.0])
def test_soft_masked_lm_loss_mixes_labels_and_the_teachers_softmax(ratio):
    student, teacher = RNG.normal(size=(2, 3, 7)), RNG.normal(size=(2, 3, 7))
    ids = RNG.integers(0, 7, (2, 3))
    weights = np.array([[1, 1, 0], [1, 0, 0]], "float32")
    target = ratio * np.eye(7)[ids] + (1 - ratio) * np.exp(_log_softmax(teacher))
    per_row = -(target * _log_softmax(student)).sum(-1)
    want = (per_row * weights).sum() / weights.sum()
    got = soft_masked_lm_loss(ids, student, teacher, weights, ratio)
    np.testing.assert_allclose(float(got), want, rtol=1e-5)


def _pretrainer(seed, **shape):
    keras.utils.set_random_seed(seed)
    fields = {k: v for k, v in MOBILEBERT.items() if k in MobileBertConfig.__dataclass_fields__}
    config = MobileBertConfig(**{**fields, "vocab_size": 50, **shape})
    return EncoderPretrainer(MobileBertEncoder(config))


def _inputs(batch=8, seq=10):
    ids = RNG.integers(5, 50, (batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[::2, 7:] = 0
    return {"token_ids": ids * mask, "segment_ids": np.zeros_like(ids), "padding_mask": mask,
            "masked_positions": np.tile(np.arange(3, dtype="int32"), (batch, 1)),
            "masked_ids": ids[:, :3], "masked_weights": np.ones((batch, 3), "float32")}


def test_a_layer_stage_reads_the_mapped_layers_and_learns_them():
    teacher, student = _pretrainer(0, hidden_size=48), _pretrainer(1)
    model = ProgressiveDistiller(teacher, student, stage=1, layer_map=[1, 3, 3])
    x = _inputs()
    out = model(x)
    want = teacher.encoder.encode(x, return_attention=True)
    np.testing.assert_allclose(out["teacher_feature"], want["hidden_states"][3], atol=1e-6)
    np.testing.assert_allclose(out["teacher_attention"], want["attention"][2], atol=1e-6)
    assert out["student_feature"].shape == (8, 10, 48)  # through the projection
    # the loss is the weighted terms over stage + 1
    features, mask = (out["student_feature"], out["teacher_feature"]), x["padding_mask"]
    mean, variance = distribution_losses(*features, mask)
    terms = (100 * feature_map_loss(*features, mask) + 5000 * mean + 5 * variance
             + attention_loss(out["student_attention"], out["teacher_attention"], mask))
    np.testing.assert_allclose(float(model.compute_loss(x, None, out)), float(terms) / 2,
                               rtol=1e-5)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    before = float(model.compute_loss(x, None, model(x)))
    for _ in range(60):
        model.train_on_batch(x)
    after = float(model.compute_loss(x, None, model(x)))
    assert after < 0.5 * before, (before, after)
    # the teacher did not move
    np.testing.assert_allclose(model.teacher.encoder.encode(x)["hidden_states"][3],
                               want["hidden_states"][3], atol=1e-6)


def test_the_last_stage_is_the_soft_masked_lm_and_stages_share_weights():
    teacher, student = _pretrainer(0), _pretrainer(1)
    first = ProgressiveDistiller(teacher, student, stage=0)
    assert first.layer_map == [1, 2, 3]
    last = first.with_stage(3)
    x = _inputs()
    out = last(x)
    np.testing.assert_allclose(out["student_logits"], student(x)["mlm_logits"], atol=1e-6)
    want = soft_masked_lm_loss(x["masked_ids"], out["student_logits"], out["teacher_logits"],
                               x["masked_weights"], 0.5)
    np.testing.assert_allclose(float(last.compute_loss(x, None, out)), float(want), rtol=1e-6)
    assert last.student is student and last.teacher is teacher


def test_stage_rate_scales_slow_the_layers_below():
    encoder = _pretrainer(0).encoder
    depths = encoder.variables_by_depth()
    scales = stage_rate_scales(encoder, 2)
    assert scales and all(depths[p] <= 2 and v == 0.1 for p, v in scales.items())
    assert {p for p, d in depths.items() if d <= 2} == set(scales)
    assert stage_rate_scales(encoder, 3) == {}  # the last stage


def test_a_stage_steps_only_what_its_loss_reaches():
    teacher, student = _pretrainer(0, hidden_size=48), _pretrainer(1)
    depths = student.encoder.variables_by_depth()
    first = ProgressiveDistiller(teacher, student, stage=0)
    paths = {v.path for v in first.trainable_weights}
    assert paths == {p for p, d in depths.items() if d <= 1} | {
        v.path for v in first.projection.trainable_weights}
    last = first.with_stage(3)
    assert {v.path for v in last.trainable_weights} == set(depths) | {
        v.path for v in student.mlm_head.trainable_weights}


def test_config_round_trip_and_bad_arguments():
    teacher, student = _pretrainer(0), _pretrainer(1)
    model = ProgressiveDistiller(teacher, student, stage=2, ratio=0.3,
                                 transfer_weights={"attention": 0.0})
    again = ProgressiveDistiller.from_config(model.get_config())
    assert (again.stage, again.ratio, again.transfer_weights.attention) == (2, 0.3, 0.0)
    with pytest.raises(ValueError, match=r"stage must be in \[0, 3\]"):
        ProgressiveDistiller(teacher, student, stage=4)
    with pytest.raises(ValueError, match="vocabulary"):
        ProgressiveDistiller(_pretrainer(0, vocab_size=60), student)
    with pytest.raises(TypeError, match="EncoderPretrainer"):
        ProgressiveDistiller(teacher.encoder, student)
    with pytest.raises(ValueError, match="layer_map names 2"):
        ProgressiveDistiller(teacher, student, layer_map=[1, 2])
