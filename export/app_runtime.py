"""What app runtimes (MediaPipe Tasks, the TFLite Task Library) can run, and
MediaPipe's own verdict on an export before it is written.

MediaPipe's BERT path tokenizes in C++: it lower-cases the text (ASCII rules),
runs the tokenizer packed in the metadata, adds ``[CLS]`` and ``[SEP]``, cuts
at the model's sequence length and pads with id 0 (read in MediaPipe 1.2.2's
``bert_preprocessor_calculator.cc``). Whether that gives the ids our model was
trained with depends on the tokenizer, so the export runs MediaPipe itself on
the validation texts and compares its answers with Keras reading our own ids.
"""

import numpy as np

from albert_keras.export.converter import ExportError
from albert_keras.export.export_config import arg
from albert_keras.export.runtime import TFLiteRunner
from albert_keras.native_output import stderr_silenced

# The output names app runtimes see, and what each holds.
OUTPUT_DESCRIPTIONS = {
    "probability": "The probability of each class (softmax of the classifier's logits).",
    "embeddings": "The text's embedding.",
    "start_logits": "Per token: the score of the answer starting there.",
    "end_logits": "Per token: the score of the answer ending there.",
}
# MediaPipe Tasks' text tasks by the name a kind gives (``ExportKind.app_task``):
# the class and its call. Other app tasks (the Task Library's
# BertQuestionAnswerer) have none in MediaPipe.
MEDIAPIPE_TASKS = {"text_classifier": ("TextClassifier", "classify"),
                   "text_embedder": ("TextEmbedder", "embed")}


def check_app_model(kind, output_names, pair, tokenizer):
    """The output names of an app-runtime export of a ``kind`` model (an
    ``ExportKind``); one line for what these runtimes cannot run."""
    if kind.app_task is None:
        raise ExportError(f"{arg('metadata')}: MediaPipe Tasks and the Task Library run text "
                          f"classifiers, embedders and QA models; this model is "
                          f"{kind.article()} {kind} model")
    if pair and not kind.app_pairs:
        raise ExportError(f"{arg('metadata')}: MediaPipe's text tasks take one text; this model was "
                          "trained on text pairs")
    if tokenizer.app_tokenizer is None:
        raise ExportError(f"{arg('metadata')}: no app runtime reads a {tokenizer.kind} tokenizer")
    if kind.probabilities:
        return ("probability",)  # MediaPipe uses the scores as given: softmax in the graph
    return tuple(output_names)


def run_in_mediapipe(blob, job, config, checks):
    """MediaPipe's answers on the validation texts against LiteRT's on our ids.

    Both run the same ``blob``, so what differs is the tokenization (and the
    runtime): quantization error is the validation's business, not this one's.
    Returns a report (``{"ran": False, "why": ...}`` when it cannot run);
    raises ``ExportError`` when MediaPipe disagrees beyond the bound.
    """
    if job.kind.app_task not in MEDIAPIPE_TASKS:
        return {"ran": False, "why": f"MediaPipe Tasks has no task for {job.kind.article()} "
                                     f"{job.kind} model; the Task Library's "
                                     f"{job.kind.app_task} reads this metadata"}
    if not checks.texts:
        return {"ran": False, "why": f"no validation texts (pass {arg('validation_data')})"}
    try:
        from mediapipe.tasks.python.core.base_options import BaseOptions
    except ImportError:
        return {"ran": False, "why": "mediapipe is not installed"}
    runner = TFLiteRunner(blob)
    expected = [runner(feed) for feed in checks.feeds]
    options = BaseOptions(model_asset_buffer=bytes(blob))
    # MediaPipe's runtime announces its XNNPACK delegate on stderr
    with stderr_silenced():
        report, passed, what = _run(job, config, checks, expected, options)
    report.update(ran=True, texts=len(checks.texts), passed=bool(passed))
    if not passed:
        raise ExportError(
            f"MediaPipe, tokenizing {len(checks.texts)} validation texts itself, disagrees with "
            f"LiteRT on the model's own ids: {what} < {arg('mediapipe_min_agreement')} "
            f"{config.mediapipe_min_agreement} ({job.tokenizer.app_difference}); pass "
            f"a lower {arg('mediapipe_min_agreement')} to ship it anyway")
    return report


def _run(job, config, checks, expected, options):
    from mediapipe.tasks.python.text import text_classifier
    from mediapipe.tasks.python.text import text_embedder

    if job.kind.app_task == "text_classifier":
        task = text_classifier.TextClassifier.create_from_options(
            text_classifier.TextClassifierOptions(base_options=options))
        report = _compare_classes(task, checks.texts, expected, job.spec.labels)
        passed = report["top1_agreement"] >= config.mediapipe_min_agreement
        what = f"top-label agreement {report['top1_agreement']:.3f}"
    else:
        task = text_embedder.TextEmbedder.create_from_options(
            text_embedder.TextEmbedderOptions(base_options=options))
        report = _compare_vectors(task, checks.texts, expected)
        passed = report["min_cosine"] >= config.mediapipe_min_agreement
        what = f"least embedding cosine {report['min_cosine']:.4f}"
    task.close()
    return report, passed, what


def _compare_classes(task, texts, expected, labels):
    agree, diffs = [], []
    for text, want in zip(texts, expected):
        categories = task.classify(text).classifications[0].categories
        scores = np.zeros(len(labels), np.float64)
        for category in categories:
            scores[category.index] = category.score
        probabilities = want["probability"][0]
        agree.append(int(np.argmax(scores)) == int(np.argmax(probabilities)))
        diffs.append(float(np.max(np.abs(scores - probabilities))))
    return {"top1_agreement": float(np.mean(agree)), "max_score_diff": float(np.max(diffs)),
            "mean_score_diff": float(np.mean(diffs))}


def _compare_vectors(task, texts, expected):
    cosines = []
    for text, want in zip(texts, expected):
        got = np.asarray(task.embed(text).embeddings[0].embedding, np.float64)
        ref = want["embeddings"][0].astype(np.float64)
        cosines.append(float(got @ ref / max(np.linalg.norm(got) * np.linalg.norm(ref), 1e-12)))
    return {"min_cosine": float(np.min(cosines)), "mean_cosine": float(np.mean(cosines))}
