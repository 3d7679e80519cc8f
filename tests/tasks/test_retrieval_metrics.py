"""Retrieval and STS scores: against values worked out by hand, and
Spearman against SciPy's."""

import numpy as np
import pytest

from albert_keras.tasks.retrieval_metrics import retrieval_scores
from albert_keras.tasks.retrieval_metrics import sts_spearman


def test_retrieval_scores_by_hand():
    # corpus rows on the unit circle; query 0 ranks rows 0, 1, 2, 3 in that
    # order, query 1 ranks 3, 2, 1, 0
    corpus = [[np.cos(a), np.sin(a)] for a in (0.0, 0.3, 0.6, 0.9)]
    queries = [[1.0, 0.0], [np.cos(1.2), np.sin(1.2)], [0.0, 1.0]]
    relevant = [{1, 2}, {3}, set()]  # the last has none: left out
    found = retrieval_scores(queries, corpus, relevant, ks=(1, 3), cutoff=3)
    assert found["queries"] == 2
    # query 0: top-1 is row 0 (not relevant), rows 1 and 2 at ranks 2 and 3
    assert found["recall@1"] == pytest.approx((0 + 1) / 2)
    assert found["recall@3"] == pytest.approx((1 + 1) / 2)
    assert found["mrr@3"] == pytest.approx((1 / 2 + 1) / 2)
    ndcg0 = (1 / np.log2(3) + 1 / np.log2(4)) / (1 + 1 / np.log2(3))
    assert found["ndcg@3"] == pytest.approx((ndcg0 + 1) / 2)
    with pytest.raises(ValueError, match="no query has a relevant corpus row"):
        retrieval_scores(queries, corpus, [set(), set(), set()])


def test_spearman_is_scipys_ties_included():
    from scipy.stats import spearmanr

    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(40, 8)), rng.normal(size=(40, 8))
    gold = rng.integers(0, 5, 40)  # many ties, as STS scores have
    cosine = np.sum(first * second, -1) / (np.linalg.norm(first, axis=-1)
                                           * np.linalg.norm(second, axis=-1))
    assert sts_spearman(first, second, gold) == pytest.approx(spearmanr(cosine, gold)[0])
    with pytest.raises(ValueError, match="3 pairs and 2 scores"):
        sts_spearman(first[:3], second[:3], gold[:2])
