"""The settings of ``--task embed`` beyond the shared ones.

Free of Keras (the command line builds its flags from them); ``TaskFields``
takes them in (``TASK_FIELD_GROUPS``), and a run of another task refuses them
when set.
"""

import dataclasses

from albert_keras.options import option


@dataclasses.dataclass
class EmbedFields:
    """What an embedder trains on and how its pairs are scored.

    Args:
        anchor_column, positive_column: the pairs file's two texts (a query
            and the text that answers it; sentence-transformers' names).
        negative_column: a third text per row, a hard negative (None: the
            batch's other positives are the only negatives).
        scale: the inverse temperature of the in-batch-negatives loss
            (sentence-transformers' 20).
        symmetric: also each positive to its anchor (the two directions'
            losses averaged).
        matryoshka_dims: shorter widths trained as embeddings of their own
            (the loss on each vector's first ``d`` features, summed with the
            full vector's: sentence-transformers' ``MatryoshkaLoss``), so
            that ``embed --dimensions d`` and ``export --dimensions d``
            give vectors that still retrieve well.

    Example:
    >>> EmbedFields().anchor_column, EmbedFields().scale
    ('anchor', 20.0)
    """

    anchor_column: str = option("anchor", "embed: the query's column (CSV/TSV/JSONL)")
    positive_column: str = option("positive", "embed: the column of the text that answers "
                                              "the query")
    negative_column: str = option(None, "embed: a hard negative's column (default: none, "
                                         "the batch's other texts only)")
    scale: float = option(20.0, "embed: the similarities' scale in the in-batch-negatives "
                                "loss (inverse temperature)", valid="(0, inf)")
    symmetric: bool = option(False, "embed: also train each positive to find its anchor")
    matryoshka_dims: list[int] = option(None, "embed: also train each vector's first D "
                                              "features as an embedding of its own, for each "
                                              "D (e.g. 64 128 256), so it can be cut to D",
                                        nargs="+", valid="[1, inf)")
