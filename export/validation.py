"""Validation: the converted model must agree with Keras before it is written.

Float modes are held to a max absolute difference on every output.
Quantized modes are judged by what a user of each output sees:

* one number per example (a regression's score): its mean error is small
  against the spread of Keras' numbers over the examples (the class checks
  below would pass any file: one class always agrees).
* class logits (classifier, multiple choice, SOP): the top-1 class agrees,
  the probabilities move little, and with labels the accuracy drops by
  little. Not cosine: the cosine of a 2-class logit vector near the origin
  swings between -1 and 1 while the prediction holds.
* per-token class logits (tagger, MLM): the top-1 class per position agrees.
* QA start/end logits: the (start, end) span agrees, example by example.
* replaced-token logits: the replaced/original call per token agrees.
* vectors (hidden states, pooled output, embeddings): cosine with Keras.

NaN or inf anywhere is refused in every mode.
"""

import dataclasses
import time

import numpy as np

from albert_keras.export.runtime import TFLiteRunner
from albert_keras.tasks.task import softmax

# Defaults (each has a CLI flag).
DEFAULT_TOLERANCE = {"none": 1e-4, "float16": 1e-2}
DEFAULT_MIN_COSINE = 0.98  # vectors: mean cosine over examples
DEFAULT_MIN_AGREEMENT = 0.9  # top-1 class, span or replaced-token agreement
DEFAULT_MAX_PROBABILITY_DIFF = 0.1  # class logits: mean |p_tflite - p_keras| of the top class
DEFAULT_MAX_ACCURACY_DROP = 0.03  # with labels: Keras accuracy minus TFLite accuracy
DEFAULT_MAX_SCORE_ERROR = 0.1  # scores: mean |s_tflite - s_keras| / spread of s_keras
DEFAULT_EXAMPLES = 200  # one disagreement moves the agreement by half a point

def measure_of(kind, name):
    """How the output ``name`` of a ``kind`` model (an ``ExportKind``, or
    None: vectors) is judged."""
    return kind.measure(name) if kind is not None else "vectors"


class ValidationError(ValueError):
    """The converted model disagrees with Keras; ``report`` says where."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def _cosine(a, b):
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / denominator) if denominator else float(np.allclose(a, b))


@dataclasses.dataclass(frozen=True)
class Bounds:
    """What a quantized (or float) file must meet against Keras.

    Args:
        tolerance: max |diff| for float modes (default 1e-4 / 1e-2 by mode).
        min_cosine: vectors, quantized modes: least mean cosine.
        min_agreement: class, span and replaced-token outputs, quantized
            modes: least agreement with Keras.
        max_probability_diff: class logits: largest mean change of the top
            class's probability.
        max_accuracy_drop: with labels: largest drop in accuracy.
        max_score_error: one number per example: largest mean error, in
            standard deviations of Keras' numbers.
    """

    tolerance: float = None
    min_cosine: float = DEFAULT_MIN_COSINE
    min_agreement: float = DEFAULT_MIN_AGREEMENT
    max_probability_diff: float = DEFAULT_MAX_PROBABILITY_DIFF
    max_accuracy_drop: float = DEFAULT_MAX_ACCURACY_DROP
    max_score_error: float = DEFAULT_MAX_SCORE_ERROR


def validate(blob, feeds, expected, quantize, bounds=None, labels=None,  # noqa: PLR0913 (the file, its feeds and Keras' answers, and what to hold them to)
             label_output="logits", kind=None, signature="serving_default", **fields):
    """Runs ``blob`` on ``feeds`` and compares with Keras' ``expected``.

    Args:
        blob: the ``.tflite`` bytes.
        feeds: list of feed dicts (input name -> one example).
        expected: list of dicts (output name -> Keras' output), same order.
        quantize: the mode, which picks the test.
        bounds: the ``Bounds`` to hold the file to.
        labels: optional gold class per example, for task accuracy.
        label_output: the output whose argmax is the prediction.
        kind: the model's ``ExportKind``, which picks each output's
            measure (default: every output is a vector).
        signature: the file's signature that runs the feeds.
        **fields: ``Bounds`` fields, as a shorthand for ``bounds``.

    Returns:
        The report dict (``passed`` True), or raises ``ValidationError``.
    """
    bounds = dataclasses.replace(bounds or Bounds(), **fields)
    got, seconds = _run(blob, feeds, signature)
    report = {"quantize": quantize, "examples": len(feeds), "outputs": {},
              # a rough latency for the model card (bench measures it properly)
              "median_ms": round(1000 * float(np.median(seconds)), 2) if seconds else None}
    if label_output not in (expected[0] if expected else {}) and expected and \
            "probability" in expected[0]:
        label_output = "probability"
    float_mode = quantize in ("none", "float16")
    limit = bounds.tolerance if bounds.tolerance is not None else DEFAULT_TOLERANCE.get(quantize)
    failures, spans = [], []
    for name in expected[0]:
        if name not in got[0]:
            failures.append(f"output {name} is missing from the TFLite model")
            continue
        measure = measure_of(kind, name)
        if measure == "classes" and np.shape(expected[0][name])[-1] == 1:
            measure = "scores"  # one output: a regression's number, not a class
        pairs = [(np.asarray(g[name], np.float64), np.asarray(e[name], np.float64))
                 for g, e in zip(got, expected)]
        entry = report["outputs"][name] = _measure(pairs, measure, float_mode)
        if measure == "span":
            spans.append([np.argmax(g, -1) for g, _ in pairs])
            spans.append([np.argmax(e, -1) for _, e in pairs])
        failures += _output_failures(name, entry, measure, float_mode, bounds, limit)
    if len(spans) == 4:  # start and end, TFLite and Keras
        failures += _span_failures(spans, report, float_mode, bounds)
    if labels is not None and label_output in expected[0]:
        failures += _accuracy_failures(got, expected, labels, label_output, report,
                                       float_mode, bounds)
    report["passed"] = not failures
    report["failures"] = failures
    if failures:
        raise ValidationError(
            f"the {quantize} TFLite model disagrees with Keras: " + "; ".join(failures), report)
    return report


def _run(blob, feeds, signature):
    """The file's outputs on every feed, and each call's seconds."""
    runner = TFLiteRunner(blob, signature=signature)
    got, seconds = [], []
    for feed in feeds:
        started = time.perf_counter()
        got.append(runner(feed))
        seconds.append(time.perf_counter() - started)
    return got, seconds


def _measure(pairs, measure, float_mode):
    """One output's report entry: differences, cosines, agreements."""
    entry = {"measure": measure,
             "max_abs_diff": max(float(np.max(np.abs(g - e))) for g, e in pairs)}
    entry["finite"] = bool(all(np.all(np.isfinite(g)) for g, _ in pairs))
    if not entry["finite"]:
        return entry
    if measure == "vectors":  # the cosine of class logits says nothing of the classes
        cosines = [_cosine(g, e) for g, e in pairs]
        entry.update(min_cosine=min(cosines), mean_cosine=float(np.mean(cosines)))
    if measure in ("classes", "probabilities", "token_classes", "span"):
        agree = [np.mean(np.argmax(g, -1) == np.argmax(e, -1)) for g, e in pairs]
        entry["top1_agreement"] = float(np.mean(agree))
    if measure in ("classes", "probabilities", "token_classes"):
        # the change of the probability Keras gives its own top class
        as_probabilities = (lambda p: p) if measure == "probabilities" else softmax
        moved = []
        for g, e in pairs:
            top = np.argmax(e, -1)[..., None]
            moved.append(np.abs(np.take_along_axis(as_probabilities(g), top, -1) -
                                np.take_along_axis(as_probabilities(e), top, -1)).ravel())
        moved = np.concatenate(moved)
        entry.update(mean_probability_diff=float(moved.mean()),
                     max_probability_diff=float(moved.max()))
    if measure == "scores":
        g = np.concatenate([g.ravel() for g, _ in pairs])
        e = np.concatenate([e.ravel() for _, e in pairs])
        spread = float(e.std()) or float(np.abs(e).mean()) or 1.0
        entry["score_error"] = float(np.abs(g - e).mean() / spread)
    if measure == "binary":
        entry["top1_agreement"] = float(np.mean([np.mean((g > 0) == (e > 0))
                                                 for g, e in pairs]))
    return entry


def _output_failures(name, entry, measure, float_mode, bounds, limit):  # noqa: PLR0913 (one output's entry and the bounds)
    if not entry["finite"]:
        # NaN compares false with every bound, so it is checked first: this
        # is what an unsafe conversion path produces (trap 2).
        return [f"{name}: the TFLite model outputs NaN or inf"]
    if float_mode:
        if entry["max_abs_diff"] > limit:
            return [f"{name}: max |diff| {entry['max_abs_diff']:.3g} > {limit:g}"]
        return []
    failures = []
    if measure == "vectors" and entry["mean_cosine"] < bounds.min_cosine:
        failures.append(f"{name}: mean cosine {entry['mean_cosine']:.4f} < {bounds.min_cosine}")
    if measure in ("classes", "probabilities", "token_classes", "binary") and \
            entry["top1_agreement"] < bounds.min_agreement:
        failures.append(
            f"{name}: top-1 agreement {entry['top1_agreement']:.3f} < {bounds.min_agreement}")
    if measure == "scores" and entry["score_error"] > bounds.max_score_error:
        failures.append(f"{name}: mean score error {entry['score_error']:.3f} spreads > "
                        f"{bounds.max_score_error}")
    if measure in ("classes", "probabilities") and \
            entry["mean_probability_diff"] > bounds.max_probability_diff:
        failures.append(f"{name}: mean probability change "
                        f"{entry['mean_probability_diff']:.3f} > {bounds.max_probability_diff}")
    return failures


def _span_failures(spans, report, float_mode, bounds):
    same = [np.array_equal(gs, es) and np.array_equal(ge, ee)
            for gs, es, ge, ee in zip(spans[0], spans[1], spans[2], spans[3])]
    report["span_agreement"] = float(np.mean(same))
    if not float_mode and report["span_agreement"] < bounds.min_agreement:
        return [f"answer spans: agreement {report['span_agreement']:.3f} "
                f"< {bounds.min_agreement}"]
    return []


def _accuracy_failures(got, expected, labels, label_output, report, float_mode, bounds):  # noqa: PLR0913 (the step's inputs)
    labels = np.asarray(labels)
    keras_pred = np.array([np.argmax(e[label_output], -1).ravel()[0] for e in expected])
    lite_pred = np.array([np.argmax(g[label_output], -1).ravel()[0] for g in got])
    report["keras_accuracy"] = float(np.mean(keras_pred == labels))
    report["tflite_accuracy"] = float(np.mean(lite_pred == labels))
    drop = report["keras_accuracy"] - report["tflite_accuracy"]
    if not float_mode and drop > bounds.max_accuracy_drop:
        return [f"accuracy drops by {drop:.3f} > {bounds.max_accuracy_drop} "
                f"({report['keras_accuracy']:.3f} -> {report['tflite_accuracy']:.3f})"]
    return []
