"""Task metrics: accuracy, macro-F1, entity-level F1, SQuAD EM/F1, correlations.

Written by hand: the usual packages for these (seqeval, HF ``evaluate``,
scikit-learn) are not dependencies, and ``evaluate`` loads its metrics from
a hub. The SQuAD normalization follows the official v1.1/v2.0 script.
"""

import collections
import re
import string

import numpy as np

# -- classification --------------------------------------------------------------


def accuracy(y_true, y_pred):
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    return float(np.mean(y_true == y_pred)) if len(y_true) else 0.0


def macro_f1(y_true, y_pred, num_classes=None):
    """Unweighted mean of per-class F1 over the classes present in either."""
    y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
    classes = np.union1d(y_true, y_pred) if num_classes is None else np.arange(num_classes)
    scores = []
    for c in classes:
        tp = np.sum((y_pred == c) & (y_true == c))
        fp = np.sum((y_pred == c) & (y_true != c))
        fn = np.sum((y_pred != c) & (y_true == c))
        if tp + fp + fn == 0:
            continue
        scores.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(scores)) if scores else 0.0


def confusion_matrix(y_true, y_pred, num_classes):
    """``[true, predicted]`` counts."""
    matrix = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(matrix, (np.asarray(y_true), np.asarray(y_pred)), 1)
    return matrix


def _ranks(x):
    """Ranks with ties averaged (as Spearman's rho needs)."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x), dtype=np.float64)
    ranks[order] = np.arange(len(x), dtype=np.float64)
    values, inverse = np.unique(x, return_inverse=True)
    sums = np.bincount(inverse, weights=ranks)
    counts = np.bincount(inverse)
    return (sums / counts)[inverse]


def regression_scores(y_true, y_pred):
    """Pearson, Spearman and mean squared error."""
    y_true = np.asarray(y_true, dtype=np.float64)
    y_pred = np.asarray(y_pred, dtype=np.float64)

    def corr(a, b):
        if len(a) < 2 or a.std() == 0 or b.std() == 0:
            return 0.0
        return float(np.corrcoef(a, b)[0, 1])

    return {
        "pearson": corr(y_true, y_pred),
        "spearman": corr(_ranks(y_true), _ranks(y_pred)),
        "mse": float(np.mean((y_true - y_pred) ** 2)) if len(y_true) else 0.0,
    }


# -- entities (BIO tags) -------------------------------------------------------------


def _split_tag(tag):
    if tag == "O" or "-" not in tag:
        return ("O", None) if tag == "O" else ("B", tag)
    prefix, kind = tag.split("-", 1)
    return prefix.upper(), kind


def bio_spans(tags):
    """Entity spans ``(type, first_word, last_word)`` from BIO/IOB tags.

    As conlleval: ``I-X`` after ``O`` or after another type opens a new
    entity, and ``B-X`` always does. ``E-``/``S-`` (BIOES) close one.
    """
    spans = []
    start, kind = None, None
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, tag_kind = _split_tag(tag)
        ends = start is not None and (
            prefix in ("O", "B", "S") or tag_kind != kind
        )
        if ends:
            spans.append((kind, start, i - 1))
            start, kind = None, None
        if prefix in ("B", "S") or (prefix in ("I", "E") and start is None):
            start, kind = i, tag_kind
        if prefix in ("E", "S") and start is not None:
            spans.append((kind, start, i))
            start, kind = None, None
    return spans


def entity_scores(true_sequences, pred_sequences):
    """Micro precision, recall and F1 over exact entity spans, and per type."""
    tp = collections.Counter()
    n_true = collections.Counter()
    n_pred = collections.Counter()
    for true_tags, pred_tags in zip(true_sequences, pred_sequences):
        t = set(bio_spans(true_tags))
        p = set(bio_spans(pred_tags))
        for span in t:
            n_true[span[0]] += 1
        for span in p:
            n_pred[span[0]] += 1
        for span in t & p:
            tp[span[0]] += 1

    def prf(tp_, pred_, true_):
        precision = tp_ / pred_ if pred_ else 0.0
        recall = tp_ / true_ if true_ else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {"precision": precision, "recall": recall, "f1": f1}

    result = prf(sum(tp.values()), sum(n_pred.values()), sum(n_true.values()))
    result["per_type"] = {
        kind: prf(tp[kind], n_pred[kind], n_true[kind])
        for kind in sorted(set(n_true) | set(n_pred))
    }
    return result


# -- SQuAD ------------------------------------------------------------------------


def normalize_answer(text):
    """Lowercase, drop punctuation, articles and extra whitespace (official)."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def squad_exact(prediction, truth):
    return float(normalize_answer(prediction) == normalize_answer(truth))


def squad_f1(prediction, truth):
    pred_tokens = normalize_answer(prediction).split()
    true_tokens = normalize_answer(truth).split()
    if not pred_tokens or not true_tokens:
        # v2: both empty (no answer) is a match, one empty is not.
        return float(pred_tokens == true_tokens)
    common = collections.Counter(pred_tokens) & collections.Counter(true_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(true_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_scores(predictions, references):
    """Exact match and F1 in percent, the max over each question's answers.

    Args:
        predictions: ``{question_id: answer_text}`` ("" for no answer).
        references: ``{question_id: [answer texts]}`` (empty list: the
            question has no answer).
    """
    exact = f1 = 0.0
    for qid, truths in references.items():
        truths = list(truths) or [""]
        prediction = predictions.get(qid, "")
        exact += max(squad_exact(prediction, t) for t in truths)
        f1 += max(squad_f1(prediction, t) for t in truths)
    n = max(len(references), 1)
    return {"exact_match": 100.0 * exact / n, "f1": 100.0 * f1 / n, "total": len(references)}
