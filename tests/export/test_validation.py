"""Each output is judged by what its user sees (the TFLite runner is
replaced by fixed outputs, so every bound is tested on its own)."""

import numpy as np
import pytest

import albert_keras
from albert_keras.export import validation
from albert_keras.export.export_config import ExportConfig
from albert_keras.export.validation import ValidationError
from albert_keras.export.validation import validate


@pytest.fixture
def fake_runner(monkeypatch):
    """``validate`` runs these outputs instead of a .tflite."""
    outputs = []

    class Runner:
        def __init__(self, blob, signature="serving_default"):
            self.calls = iter(outputs)

        def __call__(self, feed):
            return next(self.calls)

    monkeypatch.setattr(validation, "TFLiteRunner", Runner)
    return outputs


_KINDS = {kind.name: kind for kind in (albert_keras.SequenceClassifier.export_kind,
                                        albert_keras.SentenceEmbedder.export_kind,
                                        albert_keras.SpanExtractor.export_kind)}


def _run(fake_runner, got, expected, kind, **kwargs):
    fake_runner[:] = got
    return validate(b"", [{}] * len(got), expected, "int8", kind=_KINDS[kind], **kwargs)


def test_two_class_logits_near_the_origin_pass_on_agreement(fake_runner):
    """The user's case: cosine of 2-class logits near 0 is negative while
    every prediction holds; it is not refused, and no cosine is reported for
    class outputs (it is not their check)."""
    rng = np.random.default_rng(0)
    expected, got = [], []
    for _ in range(200):
        e = rng.normal(size=(1, 2)) * 3
        g = e + rng.normal(size=(1, 2)) * 0.05
        expected.append({"logits": e})
        got.append({"logits": g})
    expected[0], got[0] = {"logits": np.array([[0.01, 0.02]])}, {"logits": np.array([[-0.02, -0.01]])}
    report = _run(fake_runner, got, expected, "classifier")
    entry = report["outputs"]["logits"]
    assert entry["measure"] == "classes" and "min_cosine" not in entry
    assert entry["top1_agreement"] > 0.95 and entry["mean_probability_diff"] < 0.05


def test_class_bounds_refuse_disagreement_probability_moves_and_accuracy_drops(fake_runner):
    expected = [{"logits": np.array([[2.0, -2.0]])}] * 100
    flipped = [{"logits": np.array([[-2.0, 2.0]])}] * 20 + [{"logits": np.array([[2.0, -2.0]])}] * 80
    with pytest.raises(ValidationError, match=r"logits: top-1 agreement 0\.800 < 0\.9"):
        _run(fake_runner, flipped, expected, "classifier")
    softer = [{"logits": np.array([[0.3, 0.0]])}] * 100  # same class, p 0.98 -> 0.57
    with pytest.raises(ValidationError, match="mean probability change"):
        _run(fake_runner, softer, expected, "classifier")
    some = [{"logits": np.array([[-2.0, 2.0]])}] * 5 + [{"logits": np.array([[2.0, -2.0]])}] * 95
    with pytest.raises(ValidationError, match=r"accuracy drops by 0\.050"):
        _run(fake_runner, some, expected, "classifier", labels=[0] * 100)


def test_a_regressions_one_output_is_judged_by_its_error_not_by_a_class(fake_runner):
    """One output is one class, so top-1 agreement and the probability
    change would pass any file: a regressor's score is judged by its mean
    error against the spread of Keras' scores."""
    rng = np.random.default_rng(2)
    scores = rng.normal(size=100) * 2 + 3
    expected = [{"logits": np.array([[s]])} for s in scores]
    close = [{"logits": np.array([[s + 0.05 * rng.normal()]])} for s in scores]
    entry = _run(fake_runner, close, expected, "classifier")["outputs"]["logits"]
    assert entry["measure"] == "scores" and entry["score_error"] < 0.05
    shuffled = [{"logits": np.array([[s]])} for s in rng.permutation(scores)]
    with pytest.raises(ValidationError, match="logits: mean score error"):
        _run(fake_runner, shuffled, expected, "classifier")


def test_vectors_keep_the_cosine_bound_and_nan_is_refused(fake_runner):
    rng = np.random.default_rng(1)
    vectors = [{"embeddings": rng.normal(size=(1, 16))} for _ in range(10)]
    noisy = [{"embeddings": v["embeddings"] + rng.normal(size=(1, 16))} for v in vectors]
    with pytest.raises(ValidationError, match="embeddings: mean cosine"):
        _run(fake_runner, noisy, vectors, "embedder")
    bad = [dict(v) for v in vectors]
    bad[3] = {"embeddings": np.full((1, 16), np.nan)}
    with pytest.raises(ValidationError, match="NaN or inf"):
        _run(fake_runner, bad, vectors, "embedder")


def test_qa_is_judged_by_the_decoded_span(fake_runner):
    expected = [{"start_logits": np.eye(8)[[2]] * 5, "end_logits": np.eye(8)[[4]] * 5}] * 10
    moved = [dict(e) for e in expected]
    for i in range(3):  # the end moves in 3 of 10: each output alone agrees 0.7-1.0
        moved[i] = {"start_logits": expected[i]["start_logits"],
                    "end_logits": np.eye(8)[[5]] * 5}
    with pytest.raises(ValidationError, match=r"answer spans: agreement 0\.700"):
        _run(fake_runner, moved, expected, "qa", min_agreement=0.75)


def test_help_defaults_are_the_code_defaults():
    config = ExportConfig()
    assert config.min_cosine == validation.DEFAULT_MIN_COSINE
    assert config.min_agreement == validation.DEFAULT_MIN_AGREEMENT
    assert config.max_probability_diff == validation.DEFAULT_MAX_PROBABILITY_DIFF
    assert config.max_accuracy_drop == validation.DEFAULT_MAX_ACCURACY_DROP
    assert config.max_score_error == validation.DEFAULT_MAX_SCORE_ERROR
    assert config.examples == validation.DEFAULT_EXAMPLES
