"""How well sentence vectors retrieve and rank: retrieval over a corpus
(recall@k, MRR@10, nDCG@10) and semantic similarity (Spearman), as
sentence-transformers' ``InformationRetrievalEvaluator`` and
``EmbeddingSimilarityEvaluator`` define them, on cosine similarity."""

import numpy as np


def _unit(x):
    x = np.asarray(x, np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def retrieval_scores(queries, corpus, relevant, ks=(1, 10), cutoff=10):
    """Each query's corpus rows ranked by cosine similarity, scored.

    Args:
        queries: ``[Q, D]`` query vectors.
        corpus: ``[N, D]`` corpus vectors.
        relevant: per query, the set of corpus rows that answer it (binary
            relevance; a query with none is left out, as the evaluator does).
        ks: the ``recall@k`` cut-offs.
        cutoff: the cut-off of MRR and nDCG (10).

    Returns:
        ``{"recall@1", "recall@10", "mrr@10", "ndcg@10", "queries"}``: means
        over the queries. ``recall@k``: the share of a query's relevant rows
        in its top ``k``; MRR: one over the rank of the first relevant row
        in the top ``cutoff`` (0 if none); nDCG: the discounted gain
        ``sum 1 / log2(rank + 1)`` over the relevant rows in the top
        ``cutoff``, divided by the best possible.

    Example:
    >>> scores = retrieval_scores([[1, 0]], [[0, 1], [1, 0.1]], [{1}])
    >>> scores["recall@1"], scores["mrr@10"]
    (1.0, 1.0)
    """
    kept = [i for i, rows in enumerate(relevant) if rows]
    if not kept:
        raise ValueError("retrieval: no query has a relevant corpus row")
    similarity = _unit(queries)[kept] @ _unit(corpus).T
    deepest = min(max(max(ks), cutoff), similarity.shape[1])
    # the top rows of each query, best first (stable on ties: the lower row)
    top = np.argsort(-similarity, axis=1, kind="stable")[:, :deepest]
    found = {f"recall@{k}": [] for k in ks}
    found.update({f"mrr@{cutoff}": [], f"ndcg@{cutoff}": []})
    discounts = 1.0 / np.log2(np.arange(2, deepest + 2))
    for row, query in zip(top, kept):
        hits = np.array([r in relevant[query] for r in row])
        for k in ks:
            found[f"recall@{k}"].append(hits[:k].sum() / len(relevant[query]))
        first = np.flatnonzero(hits[:cutoff])
        found[f"mrr@{cutoff}"].append(1.0 / (first[0] + 1) if first.size else 0.0)
        ideal = discounts[:min(len(relevant[query]), cutoff)].sum()
        found[f"ndcg@{cutoff}"].append((hits[:cutoff] * discounts[:cutoff]).sum() / ideal)
    return {**{name: float(np.mean(values)) for name, values in found.items()},
            "queries": len(kept)}


def _ranks(values):
    """Ranks from 1, ties given their average rank (Spearman's rule)."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for value in np.unique(values):
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def sts_spearman(first, second, gold):
    """Spearman's correlation between the cosine similarity of each pair's
    vectors and its gold score (what STS benchmarks report).

    Written here (Pearson's correlation of average ranks) because SciPy,
    which has it, is not one of the package's dependencies.

    Example:
    >>> sts_spearman([[1, 0], [1, 0], [0, 1]], [[1, 0], [1, 1], [1, 0]], [5, 3, 0])
    1.0
    """
    similarity = np.sum(_unit(first) * _unit(second), axis=-1)
    gold = np.asarray(gold, np.float64)
    if len(gold) < 2 or len(gold) != len(similarity):
        raise ValueError(f"sts: {len(similarity)} pairs and {len(gold)} scores; need the same "
                         "number, at least 2")
    a, b = _ranks(similarity), _ranks(gold)
    a, b = a - a.mean(), b - b.mean()
    denominator = np.sqrt((a * a).sum() * (b * b).sum())
    return float((a * b).sum() / denominator) if denominator else 0.0
