import keras
import numpy as np

from albert_keras.heads.masked_lm_head import MaskedLMHead
from albert_keras.heads.sentence_order_head import SentenceOrderHead
from tests.helpers import run_layer_test

H, E, V = 16, 8, 40


def test_masked_lm_head():
    def make_inputs(batch, seq):
        rng = np.random.default_rng(seq)
        seq_out = rng.normal(size=(batch, seq, H)).astype("float32")
        positions = rng.integers(0, seq, (batch, 3)).astype("int32")
        return seq_out, positions

    run_layer_test(
        MaskedLMHead,
        dict(token_embedding=keras.layers.Embedding(V, E)),
        make_inputs,
        lambda b, s: (b, 3, V),
    )


def test_masked_lm_head_is_tied_and_gathers():
    table = keras.layers.Embedding(V, E)
    table.build((None,))
    head = MaskedLMHead(table)
    rng = np.random.default_rng(0)
    seq_out = rng.normal(size=(2, 6, H)).astype("float32")
    positions = np.array([[0, 5], [3, 3]], "int32")
    logits = keras.ops.convert_to_numpy(head(seq_out, positions))
    # The decoder is the embedding table itself, not a copy.
    assert any(w is table.embeddings for w in head.trainable_weights)
    # Recompute by hand from the same weights.
    x = seq_out[np.arange(2)[:, None], positions]
    h = x @ head.dense.kernel.numpy() + head.dense.bias.numpy()
    h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12)
    expected = h @ table.embeddings.numpy().T
    np.testing.assert_allclose(logits, expected, atol=1e-4)


def test_sentence_order_head():
    run_layer_test(
        SentenceOrderHead,
        dict(dropout=0.1),
        lambda b, s: (np.random.default_rng(s).normal(size=(b, H)).astype("float32"),),
        lambda b, s: (b, 2),
    )


def test_replaced_token_head():
    from albert_keras.heads.replaced_token_head import ReplacedTokenHead

    run_layer_test(
        ReplacedTokenHead,
        dict(hidden_size=H),
        lambda b, s: (np.random.default_rng(s).normal(size=(b, s, H)).astype("float32"),),
        lambda b, s: (b, s),
    )


def test_masked_lm_accuracy_is_keras_sparse_categorical_accuracy():
    from albert_keras.heads.masked_lm_accuracy import MaskedLMAccuracy

    rng = np.random.default_rng(0)
    ours, keras_own = MaskedLMAccuracy(), keras.metrics.SparseCategoricalAccuracy()
    for _ in range(3):  # running means over several batches, padded rows weighted 0
        logits = rng.normal(size=(4, 5, V)).astype("float32")
        labels = rng.integers(0, V, (4, 5)).astype("int32")
        # about a third of the rows are right, so the mean is not 0 or 1
        right = rng.random((4, 5)) < 0.35
        labels = np.where(right, logits.argmax(-1), labels).astype("int32")
        weights = (rng.random((4, 5)) < 0.8).astype("float32")
        ours.update_state(labels, logits, sample_weight=weights)
        keras_own.update_state(labels, logits, sample_weight=weights)
    assert 0.2 < float(ours.result()) < 0.8
    np.testing.assert_allclose(float(ours.result()), float(keras_own.result()), rtol=1e-6)
    # ties: the lowest index wins, as in argmax
    tie = MaskedLMAccuracy()
    tie.update_state(np.array([[2]]), np.zeros((1, 1, V), "float32"))
    assert float(tie.result()) == 0.0
    restored = MaskedLMAccuracy.from_config(ours.get_config())
    assert restored.name == "masked_lm_accuracy"


def test_sentence_order_and_replaced_token_heads_equal_numpy():
    """The SOP head is one dense layer on the pooled vector (dropout off at
    inference); the RTD head dense -> gelu (exact, erf) -> dense(1), by hand."""
    import math

    from albert_keras.heads.replaced_token_head import ReplacedTokenHead

    rng = np.random.default_rng(0)
    pooled = rng.normal(size=(3, H)).astype("float32")
    sop = SentenceOrderHead(dropout=0.1)
    got = keras.ops.convert_to_numpy(sop(pooled))
    kernel, bias = (keras.ops.convert_to_numpy(v) for v in (sop.classifier.kernel,
                                                            sop.classifier.bias))
    np.testing.assert_allclose(got, pooled @ kernel + bias, atol=1e-5)

    states = rng.normal(size=(2, 4, H)).astype("float32")
    rtd = ReplacedTokenHead(H)
    got = keras.ops.convert_to_numpy(rtd(states))
    w1, b1, w2, b2 = (keras.ops.convert_to_numpy(v) for v in (
        rtd.dense.kernel, rtd.dense.bias, rtd.output_dense.kernel, rtd.output_dense.bias))
    h = states @ w1 + b1
    expected = (0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))) @ w2 + b2
    np.testing.assert_allclose(got, expected[..., 0], atol=1e-4)

