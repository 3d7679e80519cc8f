"""In-batch negatives: the loss is sentence-transformers'
MultipleNegativesRankingLoss on the same embeddings, and ``TextEmbedder.fit``
on pairs makes each anchor find its positive."""

import keras
import numpy as np
import pytest
import torch

from albert_keras.models.task_models.in_batch_negatives import InBatchNegatives
from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
from tests.helpers import albert_config
from tests.helpers import encoder_inputs


def _embedder():
    from albert_keras import AlbertEncoder

    keras.utils.set_random_seed(0)
    encoder = AlbertEncoder(albert_config(
        vocab_size=60, embedding_size=16, hidden_size=32, num_hidden_layers=2,
        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64),
        output_hidden_states=True)
    return SentenceEmbedder(encoder, pooling="mean")


@pytest.mark.parametrize("negatives, symmetric", [(False, False), (True, False),
                                                  (False, True)])
def test_the_loss_is_sentence_transformers_on_the_same_embeddings(negatives, symmetric):
    from sentence_transformers.sentence_transformer.losses.multiple_negatives_ranking import (
        MultipleNegativesRankingLoss,
    )

    embedder = _embedder()
    columns = {"anchor": encoder_inputs(6, 9), "positive": encoder_inputs(6, 7)}
    if negatives:
        columns["negative"] = encoder_inputs(6, 8)
    for seed, part in enumerate(columns.values()):  # distinct texts in each column
        part["token_ids"] = (part["token_ids"] + 7 * seed) % 55 + 5
    model = InBatchNegatives(embedder, scale=20.0, symmetric=symmetric)
    labels = np.tile(np.arange(6), 2 if symmetric else 1)
    ours = float(keras.losses.SparseCategoricalCrossentropy(from_logits=True)(
        labels, model(columns)))
    vectors = [torch.tensor(np.asarray(embedder(part)["embeddings"])) for part in
               columns.values()]
    reference = MultipleNegativesRankingLoss(
        None, scale=20.0, directions=("query_to_doc", "doc_to_query") if symmetric
        else ("query_to_doc",), partition_mode="per_direction" if symmetric else "joint")
    theirs = float(reference.compute_loss_from_embeddings(vectors, torch.arange(6)))
    assert ours == pytest.approx(theirs, rel=1e-5, abs=1e-5)


def test_the_scorer_round_trips_its_config():
    model = InBatchNegatives(_embedder(), scale=10.0, symmetric=True)
    again = InBatchNegatives.from_config(model.get_config())
    assert (again.scale, again.symmetric) == (10.0, True)
    with pytest.raises(ValueError, match="scale must be positive"):
        InBatchNegatives(_embedder(), scale=0)


def test_fit_on_pairs_makes_each_anchor_find_its_positive(init_folder):
    """Halves of the same sentence: before training an anchor's nearest of
    the 64 positives is its own about once (chance); after ten epochs of a
    tiny model (hidden size 32), for a quarter of them or more, the loss
    down by more than half (a loss with the wrong targets pushes them
    apart; measured 0.016 -> 0.42, loss 2.81 -> 0.58)."""
    from albert_keras import TextEmbedder
    from albert_keras.tasks.retrieval_metrics import retrieval_scores
    from tests.helpers import make_sentences

    sentences = make_sentences(64, seed=11, low=10, high=16)
    anchors = [" ".join(s.split()[:len(s.split()) // 2]) for s in sentences]
    positives = [" ".join(s.split()[len(s.split()) // 2:]) for s in sentences]
    model = TextEmbedder.from_preset(init_folder, normalize=True, sequence_length=32)

    def recall():
        return retrieval_scores(model.predict(anchors), model.predict(positives),
                                [{i} for i in range(len(anchors))])["recall@1"]

    before = recall()
    history = model.fit(anchors, positives, epochs=10, batch_size=16, learning_rate=5e-3,
                        verbose=0)
    after = recall()
    assert history.history["loss"][-1] < 0.4 * history.history["loss"][0], history.history
    assert before <= 0.05 and after >= 0.25, (before, after)


@pytest.mark.parametrize("columns, message", [
    ({"anchors": ["a b", "c d"], "positives": ["e f"]}, "the columns differ in length"),
    ({"anchors": ["a b", " "], "positives": ["e f", "g h"]}, r"anchors\[1\]: empty text"),
    ({"anchors": ["a b", "c d"], "positives": ["e f", "g h"]},
     "anchors: 2 training pairs, fewer than one batch of 8; lower batch_size"),
])
def test_bad_pairs_are_refused_in_one_line(init_folder, columns, message):
    from albert_keras import TextEmbedder

    model = TextEmbedder.from_preset(init_folder, sequence_length=16)
    with pytest.raises(ValueError, match=message):
        model.fit(columns["anchors"], columns["positives"], batch_size=8)


def test_vectors_cut_short_are_the_first_features_renormalized():
    """``dimensions``: the pooled vector's first D features, normalized
    after the cut; a cut wider than the vector is refused."""
    full = _embedder()
    cut = SentenceEmbedder(full.encoder, pooling="mean", normalize=True, dimensions=12)
    x = encoder_inputs(3, 9)
    whole = np.asarray(full(x)["embeddings"])[:, :12]
    np.testing.assert_allclose(np.asarray(cut(x)["embeddings"]),
                               whole / np.linalg.norm(whole, axis=1, keepdims=True), atol=1e-6)
    again = SentenceEmbedder.from_config(cut.get_config())
    assert again.dimensions == 12 and again.width == 12
    with pytest.raises(ValueError, match="dimensions 33 is not within this embedder's 32"):
        SentenceEmbedder(full.encoder, dimensions=33)
