"""Every task model through the shared checker, plus overfitting a tiny
separable task (loss falls, accuracy reaches 1.0)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import ChoiceScorer
from albert_keras import SentenceEmbedder
from albert_keras import SequenceClassifier
from albert_keras import SpanExtractor
from albert_keras import TokenTagger
from tests.helpers import TINY
from tests.helpers import encoder_inputs
from tests.helpers import run_model_test


def _encoder(dtype=None, **overrides):
    return AlbertEncoder(AlbertConfig(**{**TINY, **overrides}), dtype=dtype)


def test_classifier():
    run_model_test(
        lambda dtype: SequenceClassifier(_encoder(dtype), 3),
        encoder_inputs,
        lambda b, s: {"logits": (b, 3)},
    )


@pytest.mark.parametrize("pooling", ["mean", "both"])
def test_classifier_reading_every_token(pooling):
    run_model_test(
        lambda dtype: SequenceClassifier(_encoder(dtype), 3, pooling=pooling),
        encoder_inputs,
        lambda b, s: {"logits": (b, 3)},
    )
    model = SequenceClassifier(_encoder(), 2, pooling=pooling)
    inputs = encoder_inputs(2, 9)
    # the head reads every token: changing a token other than [CLS] changes
    # the logits, and padded tokens do not
    changed = dict(inputs, token_ids=inputs["token_ids"].copy())
    changed["token_ids"][:, 3] = (changed["token_ids"][:, 3] + 1) % TINY["vocab_size"]
    assert not np.allclose(model(inputs)["logits"], model(changed)["logits"])
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in inputs.items()}
    np.testing.assert_allclose(model(padded)["logits"], model(inputs)["logits"], atol=1e-5)
    if pooling == "mean":
        # by hand: the head's input is the mean of the rows whose mask is 1
        head_input = keras.Model(model.inputs, model.get_layer("mean_pooling").output)
        sequence = keras.ops.convert_to_numpy(model.encoder(inputs)["sequence_output"])
        mask = inputs["padding_mask"].astype(bool)
        expected = np.stack([sequence[i][mask[i]].mean(0) for i in range(len(sequence))])
        np.testing.assert_allclose(head_input(inputs), expected, rtol=1e-5, atol=1e-6)
    # mean: the pooler is not on the path, so new pooler weights change
    # nothing; both: they do
    before = model(inputs)["logits"]
    model.encoder.pooler.set_weights([w + 1.0 for w in model.encoder.pooler.get_weights()])
    assert np.array_equal(model(inputs)["logits"], before) == (pooling == "mean")
    with pytest.raises(ValueError, match="pooling must be one of"):
        SequenceClassifier(_encoder(), 2, pooling="max")


def test_regressor_is_one_dense_unit_on_the_pooled_vector():
    model = SequenceClassifier(_encoder(), 1)
    inputs = encoder_inputs(2, 7)
    got = keras.ops.convert_to_numpy(model(inputs)["logits"])
    assert got.shape == (2, 1)
    pooled = keras.ops.convert_to_numpy(model.encoder(inputs)["pooled_output"])
    head = model.get_layer("classifier")
    kernel, bias = (keras.ops.convert_to_numpy(v) for v in (head.kernel, head.bias))
    np.testing.assert_allclose(got, pooled @ kernel + bias, atol=1e-5)


def test_token_classifier():
    run_model_test(
        lambda dtype: TokenTagger(_encoder(dtype), 5),
        encoder_inputs,
        lambda b, s: {"logits": (b, s, 5)},
    )


def test_question_answerer():
    run_model_test(
        lambda dtype: SpanExtractor(_encoder(dtype)),
        encoder_inputs,
        lambda b, s: {"start_logits": (b, s), "end_logits": (b, s)},
    )


def _choice_inputs(batch, seq, choices=3):
    flat = encoder_inputs(batch * choices, seq)
    return {k: v.reshape(batch, choices, seq) for k, v in flat.items()}


def test_multiple_choice():
    run_model_test(
        lambda dtype: ChoiceScorer(_encoder(dtype)),
        _choice_inputs,
        lambda b, s: {"logits": (b, 3)},
    )


def test_multiple_choice_scores_each_pair_alone():
    model = ChoiceScorer(_encoder())
    x = _choice_inputs(2, 7, choices=4)
    scores = model.predict(x, verbose=0)["logits"]
    row = {k: v[1] for k, v in x.items()}  # one example's 4 pairs as a batch
    pooled = model.encoder.predict(row, verbose=0)["pooled_output"]
    dense = model.get_layer("choice_score")
    expected = pooled @ keras.ops.convert_to_numpy(dense.kernel) + keras.ops.convert_to_numpy(dense.bias)
    np.testing.assert_allclose(scores[1], expected[:, 0], atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, width",
    [
        ({}, 16),
        ({"layers": (0, -1), "pooling": "cls"}, 32),
        ({"layers": (1, 2, 3), "combine": "mean", "normalize": True}, 16),
        ({"pooling": "pooled"}, 16),
    ],
)
def test_embedder(kwargs, width):
    model = run_model_test(
        lambda dtype: SentenceEmbedder(_encoder(dtype), **kwargs),
        encoder_inputs,
        lambda b, s: {"embeddings": (b, width)},
    )
    if kwargs.get("normalize"):
        vectors = model.predict(encoder_inputs(2, 7), verbose=0)["embeddings"]
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)


def test_embedder_mean_ignores_padding():
    model = SentenceEmbedder(_encoder(hidden_dropout_prob=0.0))
    x = encoder_inputs(1, 10)
    x["padding_mask"][0, 6:] = 0
    longer = {k: np.concatenate([v, np.zeros((1, 4), "int32")], axis=1) for k, v in x.items()}
    longer["token_ids"][0, 10:] = 7  # padded positions hold junk ids
    a = model.predict(x, verbose=0)["embeddings"]
    b = model.predict(longer, verbose=0)["embeddings"]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_embedder_rejects_a_layer_out_of_range():
    with pytest.raises(ValueError, match="layer 9 is out of range"):
        SentenceEmbedder(_encoder(), layers=(9,))


# -- overfitting a tiny separable task ------------------------------------------


def _separable(n=16, seq=10, vocab=60):
    """Label = which of two marker tokens the text holds."""
    rng = np.random.default_rng(0)
    labels = np.arange(n) % 2
    ids = rng.integers(10, vocab, (n, seq)).astype("int32")
    ids[:, 0] = 2
    ids[:, 3] = np.where(labels == 1, 5, 6)
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    return x, labels


def _fit(model, x, y, loss, epochs=60, **compile_kwargs):
    keras.utils.set_random_seed(0)
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=loss, **compile_kwargs)
    history = model.fit(x, y, batch_size=16, epochs=epochs, verbose=0)
    return history.history


def _ce():
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@pytest.mark.sampled(keep=2, group="task_overfits")  # CI: 2 of the task-model overfit checks per commit
def test_classifier_overfits():
    x, y = _separable()
    model = SequenceClassifier(_encoder(), 2)
    h = _fit(model, x, {"logits": y}, {"logits": _ce()}, metrics={"logits": ["accuracy"]})
    assert h["loss"][-1] < 0.2 * h["loss"][0]
    assert np.all(np.argmax(model.predict(x, verbose=0)["logits"], -1) == y)


@pytest.mark.sampled(keep=2, group="task_overfits")  # CI: 2 of the task-model overfit checks per commit
def test_token_classifier_overfits():
    x, _ = _separable()
    y = (x["token_ids"] % 3).astype("int32")  # tag = a function of the token
    model = TokenTagger(_encoder(), 3)
    h = _fit(model, x, {"logits": y}, {"logits": _ce()}, epochs=80)
    assert h["loss"][-1] < 0.2 * h["loss"][0]
    assert np.all(np.argmax(model.predict(x, verbose=0)["logits"], -1) == y)


@pytest.mark.sampled(keep=2, group="task_overfits")  # CI: 2 of the task-model overfit checks per commit
def test_question_answerer_overfits():
    x, _ = _separable()
    # The answer span starts at the marker (position 3) and ends two later.
    start = np.full(len(x["token_ids"]), 3)
    end = np.full(len(x["token_ids"]), 5)
    model = SpanExtractor(_encoder())
    h = _fit(model, x, {"start_logits": start, "end_logits": end},
             {"start_logits": _ce(), "end_logits": _ce()})
    assert h["loss"][-1] < 0.2 * h["loss"][0]
    out = model.predict(x, verbose=0)
    assert np.all(np.argmax(out["start_logits"], -1) == start)
    assert np.all(np.argmax(out["end_logits"], -1) == end)


@pytest.mark.sampled(keep=2, group="task_overfits")  # CI: 2 of the task-model overfit checks per commit
def test_multiple_choice_overfits():
    x, labels = _separable(n=32)
    # Two choices per question; the right one is the choice holding token 5.
    pairs = {k: v.reshape(16, 2, -1) for k, v in x.items()}
    y = (labels.reshape(16, 2)[:, 1] == 1).astype("int32")
    model = ChoiceScorer(_encoder())
    h = _fit(model, pairs, {"logits": y}, {"logits": _ce()})
    assert h["loss"][-1] < 0.2 * h["loss"][0]
    assert np.all(np.argmax(model.predict(pairs, verbose=0)["logits"], -1) == y)


def test_discriminator():
    from albert_keras.models.pretrainers.token_discriminator import TokenDiscriminator

    run_model_test(
        lambda dtype: TokenDiscriminator(_encoder(dtype)),
        encoder_inputs,
        lambda b, s: {"rtd_logits": (b, s)},
    )


def _graph_call(model, x, training=False):
    """The functional graph's own call: every row in the last block."""
    return super(type(model).__mro__[1], model).call(x, training=training)


@pytest.mark.parametrize("make", [
    lambda: SequenceClassifier(_encoder(), 3),
    lambda: SentenceEmbedder(_encoder(), pooling="pooled"),
])
def test_a_model_reading_only_cls_computes_that_row_alone_with_the_same_numbers(make, monkeypatch):
    keras.utils.set_random_seed(0)
    model = make()
    cuts = []
    entry = type(model.encoder)._entry_call
    monkeypatch.setattr(type(model.encoder), "_entry_call",
                        lambda self, *a: cuts.append(a[-1]) or entry(self, *a))
    x = encoder_inputs(3, 9)
    name = next(iter(model.output))
    with tf.GradientTape() as tape:
        got = model(x, training=False)[name]
        loss = keras.ops.sum(got * got)
    grads = tape.gradient(loss, model.trainable_variables)
    with tf.GradientTape() as tape:
        full = _graph_call(model, x)[name]
        loss_full = keras.ops.sum(full * full)
    grads_full = tape.gradient(loss_full, model.trainable_variables)
    assert cuts == [True]  # the encoder took the first-row path once, the graph never
    np.testing.assert_allclose(np.asarray(got), np.asarray(full), atol=1e-5)
    for g, f, v in zip(grads, grads_full, model.trainable_variables):
        np.testing.assert_allclose(tf.convert_to_tensor(g).numpy(), tf.convert_to_tensor(f).numpy(),
                                   atol=1e-5, err_msg=v.path)


def test_a_model_reading_every_row_computes_every_row(monkeypatch):
    model = SequenceClassifier(_encoder(), 3, pooling="mean")
    monkeypatch.setattr(type(model.encoder), "_entry_call",
                        lambda *a: pytest.fail("a mean over the rows was computed on one"))
    model(encoder_inputs(2, 7))
