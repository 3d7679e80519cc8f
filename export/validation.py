"""Validation: the converted model must agree with Keras before it is written.

Float modes are held to a max absolute difference; quantized modes to the
cosine similarity of each output with Keras' and to the agreement of the
top-1 class (for logits). With labels, the task accuracy of both is
reported as well.
"""

import numpy as np

from albert_keras.export.runtime import TFLiteRunner

# Defaults (each has a CLI flag): float32 and float16 bound max |diff|;
# quantized modes need this mean cosine (over examples) and this top-1
# agreement on every output. The mean, not the minimum: a few-class logit
# vector near a tie has a low cosine while its argmax still agrees.
DEFAULT_TOLERANCE = {"none": 1e-4, "float16": 1e-2}
DEFAULT_MIN_COSINE = 0.98
DEFAULT_MIN_AGREEMENT = 0.9


class ValidationError(ValueError):
    """The converted model disagrees with Keras; ``report`` says where."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def _cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / denominator) if denominator else float(np.allclose(a, b))


def validate(blob, feeds, expected, quantize, tolerance=None, min_cosine=DEFAULT_MIN_COSINE,
             min_agreement=DEFAULT_MIN_AGREEMENT, labels=None, label_output="logits"):
    """Runs ``blob`` on ``feeds`` and compares with Keras' ``expected``.

    Args:
        blob: the ``.tflite`` bytes.
        feeds: list of feed dicts (input name -> one example).
        expected: list of dicts (output name -> Keras' output), same order.
        quantize: the mode, which picks the test.
        tolerance: max |diff| for float modes (default 1e-4 / 1e-2).
        min_cosine, min_agreement: bounds for quantized modes.
        labels: optional gold class per example, for task accuracy.
        label_output: the output whose argmax is the prediction.

    Returns:
        The report dict (``passed`` True), or raises ``ValidationError``.
    """
    runner = TFLiteRunner(blob)
    got = [runner(feed) for feed in feeds]
    report = {"quantize": quantize, "examples": len(feeds), "outputs": {}}
    failures = []
    float_mode = quantize in ("none", "float16")
    limit = tolerance if tolerance is not None else DEFAULT_TOLERANCE.get(quantize)
    for name in expected[0]:
        if name not in got[0]:
            failures.append(f"output {name} is missing from the TFLite model")
            continue
        diffs = [float(np.max(np.abs(g[name] - e[name]))) for g, e in zip(got, expected)]
        cosines = [_cosine(g[name], e[name]) for g, e in zip(got, expected)]
        entry = {"max_abs_diff": max(diffs), "min_cosine": min(cosines),
                 "mean_cosine": float(np.mean(cosines))}
        if "logits" in name:
            agree = [np.array_equal(np.argmax(g[name], -1), np.argmax(e[name], -1))
                     for g, e in zip(got, expected)]
            entry["top1_agreement"] = float(np.mean(agree))
        report["outputs"][name] = entry
        finite = all(np.all(np.isfinite(g[name])) for g in got)
        entry["finite"] = bool(finite)
        if not finite:
            # NaN compares false with every bound, so it is checked first:
            # this is what an unsafe conversion path produces (trap 2).
            failures.append(f"{name}: the TFLite model outputs NaN or inf")
        elif float_mode:
            if entry["max_abs_diff"] > limit:
                failures.append(f"{name}: max |diff| {entry['max_abs_diff']:.3g} > {limit:g}")
        else:
            if entry["mean_cosine"] < min_cosine:
                failures.append(f"{name}: mean cosine {entry['mean_cosine']:.4f} < {min_cosine}")
            if entry.get("top1_agreement", 1.0) < min_agreement:
                failures.append(
                    f"{name}: top-1 agreement {entry['top1_agreement']:.3f} < {min_agreement}")
    if labels is not None and label_output in expected[0]:
        labels = np.asarray(labels)
        keras_pred = np.array([np.argmax(e[label_output], -1).ravel()[0] for e in expected])
        lite_pred = np.array([np.argmax(g[label_output], -1).ravel()[0] for g in got])
        report["keras_accuracy"] = float(np.mean(keras_pred == labels))
        report["tflite_accuracy"] = float(np.mean(lite_pred == labels))
    report["passed"] = not failures
    report["failures"] = failures
    if failures:
        raise ValidationError(
            f"the {quantize} TFLite model disagrees with Keras: " + "; ".join(failures), report)
    return report
