"""InBatchNegatives: an embedder trained on pairs, every other pair's
positive a negative (sentence-transformers' MultipleNegativesRankingLoss)."""

import keras
from keras import ops

# the logit that stands for "no candidate here" in the padded rows of the
# symmetric form (its softmax weight underflows to 0 in float32)
_ABSENT = -1e9


def _unit(x):
    return x / ops.maximum(ops.norm(x, axis=-1, keepdims=True), 1e-12)


@keras.saving.register_keras_serializable(package="albert_keras")
class InBatchNegatives(keras.Model):
    """Scores each anchor against every positive (and hard negative) of its
    batch: logits whose target for row ``i`` is column ``i``.

    The logits are ``scale`` x cosine similarity, so sparse categorical
    cross-entropy with labels ``0..B-1`` is sentence-transformers'
    ``MultipleNegativesRankingLoss`` (scale 20, cosine): anchor ``i`` must
    pick its positive among all ``B`` positives and ``B`` hard negatives.
    ``symmetric`` adds the rows that make each positive pick its anchor among
    the anchors (that loss's ``directions=("query_to_doc", "doc_to_query")``,
    ``partition_mode="per_direction"``): the two cross-entropies averaged,
    as the batch's ``2B`` rows with labels ``0..B-1`` twice.

    ``dims`` (Matryoshka representation learning, sentence-transformers'
    ``MatryoshkaLoss``): the same logits again from each vector's first
    ``d`` features (re-normalized), for each ``d``, stacked under the full
    ones; the labels repeat once per ``d`` and the training loss weighs the
    rows by ``1 + len(dims)``, so it is the sum of the full and each cut
    vector's loss, as that loss sums them.

    Args:
        embedder: a ``SentenceEmbedder`` (its output ``embeddings``).
        scale: the inverse temperature (sentence-transformers' 20).
        symmetric: also each positive to its anchor.
        dims: the shorter widths trained as embeddings of their own
            (ascending, each below the embedder's width); () for none.

    Example:
    >>> model = InBatchNegatives(embedder)  # doctest: +SKIP
    >>> model({"anchor": a, "positive": p})  # [B, B] logits  # doctest: +SKIP
    """

    def __init__(self, embedder, scale=20.0, symmetric=False, dims=(), **kwargs):
        super().__init__(**kwargs)
        if isinstance(embedder, dict):
            embedder = keras.saving.deserialize_keras_object(embedder)
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        self.embedder, self.scale, self.symmetric = embedder, float(scale), bool(symmetric)
        self.dims = tuple(int(d) for d in dims or ())

    @property
    def copies(self):
        """How many times a batch's labels repeat in the logits' rows."""
        return (2 if self.symmetric else 1) * (1 + len(self.dims))

    def call(self, inputs, training=False):
        """``inputs``: ``anchor``, ``positive`` and optionally ``negative``,
        each encoder inputs of one batch of texts."""
        names = [n for n in ("anchor", "positive", "negative") if n in inputs]
        vectors = [self.embedder(inputs[n], training=training)["embeddings"] for n in names]
        logits = [self._scores([v if d is None else v[:, :d] for v in vectors])
                  for d in (None, *self.dims)]
        return logits[0] if len(logits) == 1 else ops.concatenate(logits, axis=0)

    def _scores(self, vectors):
        """The logits of one width: ``vectors`` are the anchors', then each
        candidate column's."""
        anchors, *columns = [_unit(v) for v in vectors]
        candidates = ops.concatenate(columns, axis=0)
        logits = self.scale * ops.matmul(anchors, ops.transpose(candidates))
        if not self.symmetric:
            return logits
        backward = self.scale * ops.matmul(columns[0], ops.transpose(anchors))
        width = ops.shape(logits)[1] - ops.shape(backward)[1]
        backward = ops.pad(backward, [[0, 0], [0, width]], constant_values=_ABSENT)
        return ops.concatenate([logits, backward], axis=0)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "embedder": keras.saving.serialize_keras_object(self.embedder),
                "scale": self.scale, "symmetric": self.symmetric, "dims": list(self.dims)}
