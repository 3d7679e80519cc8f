"""Metrics on hand-checked cases."""

import numpy as np
import pytest

from albert_keras.tasks import metrics


def test_macro_f1_by_hand():
    # class 0: tp 2 fp 1 fn 0 -> 4/5; class 1: tp 1 fp 0 fn 1 -> 2/3; class 2: tp 0 fp 0 fn 0 -> skipped
    y_true = [0, 0, 1, 1]
    y_pred = [0, 0, 0, 1]
    assert metrics.macro_f1(y_true, y_pred) == pytest.approx((0.8 + 2 / 3) / 2)
    assert metrics.accuracy(y_true, y_pred) == 0.75
    assert metrics.confusion_matrix(y_true, y_pred, 2).tolist() == [[2, 0], [1, 1]]


def test_bio_spans_follow_conlleval():
    tags = ["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC", "I-ORG", "O"]
    # I- after O opens an entity; B- always opens one; a type change opens one.
    assert metrics.bio_spans(tags) == [("PER", 0, 1), ("LOC", 3, 4), ("LOC", 5, 5), ("ORG", 6, 6)]
    assert metrics.bio_spans(["S-X", "B-Y", "E-Y", "O"]) == [("X", 0, 0), ("Y", 1, 2)]


def test_entity_f1_by_hand():
    true = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "O"], ["B-ORG", "B-LOC"]]
    # true: PER(0-1), LOC(3), ORG(0); pred: PER(0-1), ORG(0), LOC(1)
    # tp 2, precision 2/3, recall 2/3.
    scores = metrics.entity_scores(true, pred)
    assert scores["precision"] == pytest.approx(2 / 3)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 / 3)
    assert scores["per_type"]["PER"]["f1"] == 1.0
    assert scores["per_type"]["LOC"]["f1"] == 0.0


def test_a_partial_entity_is_wrong():
    scores = metrics.entity_scores([["B-PER", "I-PER"]], [["B-PER", "O"]])
    assert scores["f1"] == 0.0


def test_squad_metrics_known_cases():
    # The official normalization: case, punctuation, articles, whitespace.
    assert metrics.normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert metrics.squad_exact("the Eiffel Tower", "Eiffel Tower.") == 1.0
    # F1 on tokens: pred {denver, broncos}, truth {broncos}: p 1/2 r 1 -> 2/3.
    assert metrics.squad_f1("Denver Broncos", "Broncos") == pytest.approx(2 / 3)
    assert metrics.squad_f1("", "") == 1.0  # v2: no answer, correctly
    assert metrics.squad_f1("Broncos", "") == 0.0
    scores = metrics.squad_scores(
        {"q1": "Denver Broncos", "q2": "", "q3": "wrong"},
        {"q1": ["Broncos", "Denver Broncos"], "q2": [], "q3": ["right"]},
    )
    assert scores["exact_match"] == pytest.approx(200 / 3)
    assert scores["f1"] == pytest.approx(200 / 3)


def test_regression_scores():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    scores = metrics.regression_scores(y, y ** 3)  # monotone, not linear
    assert scores["spearman"] == pytest.approx(1.0)
    assert scores["pearson"] < 1.0
    assert metrics.regression_scores(y, y)["mse"] == 0.0
    # Ties get their average rank.
    assert metrics._ranks(np.array([3.0, 1.0, 3.0])).tolist() == [1.5, 0.0, 1.5]
