import keras
import numpy as np
import pytest

from albert_keras.layers.activations import get_activation
from albert_keras.layers.attention_block import AttentionBlock
from albert_keras.layers.feed_forward_block import FeedForwardBlock
from albert_keras.models.albert.factorized_embedding import FactorizedEmbedding
from albert_keras.models.albert.shared_encoder import SharedEncoder
from tests.helpers import run_layer_test

H = 16


def _ids(batch, seq, vocab=50):
    return np.random.default_rng(seq).integers(0, vocab, (batch, seq)).astype("int32")


def _hidden(batch, seq):
    return np.random.default_rng(seq).normal(size=(batch, seq, H)).astype("float32")


def _mask(batch, seq):
    mask = np.ones((batch, seq), "int32")
    mask[0, seq // 2 :] = 0
    return mask


@pytest.mark.parametrize("embedding_size", [8, H])
def test_factorized_embedding(embedding_size):
    layer = run_layer_test(
        FactorizedEmbedding,
        dict(vocab_size=50, embedding_size=embedding_size, hidden_size=H,
             max_position_embeddings=32),
        lambda b, s: (_ids(b, s), _ids(b, s, 2)),
        lambda b, s: (b, s, H),
    )
    # The E -> H projection exists only when E != H (original code).
    assert (layer.projection is None) == (embedding_size == H)


def test_factorized_embedding_refuses_long_sequences():
    layer = FactorizedEmbedding(50, 8, H, max_position_embeddings=10)
    with pytest.raises(ValueError, match="max_position_embeddings=10"):
        layer(_ids(1, 11), _ids(1, 11, 2))


def test_factorized_embedding_refuses_long_sequences_in_a_graph():
    import tensorflow as tf

    layer = FactorizedEmbedding(50, 8, H, max_position_embeddings=10)
    fn = tf.function(
        layer, input_signature=[tf.TensorSpec([None, None], tf.int32)] * 2
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="max_position_embeddings"):
        fn(_ids(1, 11), _ids(1, 11, 2))


@pytest.mark.parametrize("position_bias,scale", [("none", 1.0), ("alibi", 1.0), ("alibi", 4.0)])
def test_attention_block(position_bias, scale):
    run_layer_test(
        AttentionBlock,
        dict(hidden_size=H, num_heads=4, mask_value=-120.0, position_bias=position_bias,
             alibi_slope_scale=scale),
        lambda b, s: (_hidden(b, s), _mask(b, s)),
        lambda b, s: (b, s, H),
    )


def test_attention_block_ignores_padded_keys():
    block = AttentionBlock(H, 4)
    x = _hidden(1, 6)
    mask = np.array([[1, 1, 1, 1, 0, 0]], "int32")
    base = keras.ops.convert_to_numpy(block(x, mask))
    changed = x.copy()
    changed[:, 4:] += 5.0  # only padded positions change
    out = keras.ops.convert_to_numpy(block(changed, mask))
    np.testing.assert_allclose(out[:, :4], base[:, :4], atol=1e-6)


@pytest.mark.parametrize("position_bias", ["none", "alibi"])
def test_attention_block_query_positions_equal_gathered_rows(position_bias):
    block = AttentionBlock(H, 4, position_bias=position_bias)
    x, mask = _hidden(2, 10), _mask(2, 10)
    positions = np.array([[0, 3, 3, 9], [0, 1, 7, 2]], "int32")
    full = keras.ops.convert_to_numpy(block(x, mask))
    rows = keras.ops.convert_to_numpy(block(x, mask, query_positions=positions))
    assert rows.shape == (2, 4, H)
    np.testing.assert_allclose(rows, np.take_along_axis(full, positions[:, :, None], 1),
                               atol=1e-6)


def test_feed_forward_block():
    run_layer_test(
        FeedForwardBlock,
        dict(hidden_size=H, intermediate_size=24),
        lambda b, s: (_hidden(b, s),),
        lambda b, s: (b, s, H),
    )


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_shared_encoder(sharing):
    run_layer_test(
        SharedEncoder,
        dict(num_layers=4, num_groups=2, inner_group_num=2, sharing=sharing,
             hidden_size=H, num_heads=2, intermediate_size=24),
        lambda b, s: (_hidden(b, s), _mask(b, s)),
        lambda b, s: [(b, s, H)] * 9,  # 4 layers x 2 inner blocks + input
    )


def test_activations_by_name():
    x = np.linspace(-3, 3, 7).astype("float32")
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(get_activation("gelu_new")(x)), tanh_form, atol=1e-6
    )
    from math import erf

    exact = np.array([0.5 * v * (1 + erf(v / np.sqrt(2))) for v in x])
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(get_activation("gelu")(x)), exact, atol=1e-6
    )
    with pytest.raises(ValueError, match="unknown activation"):
        get_activation("swish2")


@pytest.mark.parametrize("sharing,position_bias",
                         [("all", "none"), ("none", "none"), ("all", "alibi")])
def test_shared_encoder_query_positions_cut_only_the_last_block(sharing, position_bias):
    encoder = SharedEncoder(3, 1, 2, sharing, H, 2, 24, position_bias=position_bias)
    x, mask = _hidden(2, 9), _mask(2, 9)
    positions = np.array([[0, 2, 8], [0, 5, 1]], "int32")
    full = [keras.ops.convert_to_numpy(t) for t in encoder(x, mask)]
    cut = [keras.ops.convert_to_numpy(t)
           for t in encoder(x, mask, query_positions=positions)]
    for a, b in zip(full[:-1], cut[:-1]):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(
        cut[-1], np.take_along_axis(full[-1], positions[:, :, None], 1), atol=1e-5)


@pytest.mark.parametrize("rows", [None, 3, 4])
def test_attention_block_fused_path_equals_explicit(rows):
    """The JAX/torch path (``ops.dot_product_attention`` with a boolean mask,
    one extra row for an odd query count) gives the TensorFlow path's numbers."""
    block = AttentionBlock(H, 4)
    x, mask = _hidden(2, 9), _mask(2, 9)
    block(x, mask)
    queries = x if rows is None else x[:, :rows]
    q = block._projected_heads(block.query, queries, False, queries.shape[:2])
    k, v = (block._projected_heads(dense, x, False, x.shape[:2])
            for dense in (block.key, block.value))
    fused = keras.ops.convert_to_numpy(block._fused_attention(q, k, v, mask))
    explicit = keras.ops.convert_to_numpy(block._explicit_attention(q, k, v, mask, False)[0])
    assert fused.shape == explicit.shape == (2, queries.shape[1], 4, H // 4)
    np.testing.assert_allclose(fused, explicit, atol=1e-6)


def test_attention_block_mask_value_sets_padded_bias():
    """A bounded mask value (as the int8 export uses) still zeroes padded keys."""
    x, mask = _hidden(1, 6), np.array([[1, 1, 1, 0, 0, 0]], "int32")
    ref = AttentionBlock(H, 4)
    bounded = AttentionBlock(H, 4, mask_value=-120.0)
    ref(x, mask), bounded(x, mask)
    bounded.set_weights(ref.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(bounded(x, mask)),
                               keras.ops.convert_to_numpy(ref(x, mask)), atol=1e-6)
    assert bounded.get_config()["mask_value"] == -120.0


def _gelu_tanh(h):
    return 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) * (h + 0.044715 * h**3)))


def _layer_norm(h, gamma, beta, eps):
    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + eps) * gamma + beta


def test_feed_forward_block_equals_numpy():
    """dense -> gelu (tanh form) -> dense, residual, LayerNorm, by hand on
    the same weights."""
    block = FeedForwardBlock(H, 24, layer_norm_eps=1e-12)
    x = _hidden(2, 5)
    got = keras.ops.convert_to_numpy(block(x))
    w1, b1 = (keras.ops.convert_to_numpy(v) for v in (block.intermediate.kernel,
                                                      block.intermediate.bias))
    w2, b2 = (keras.ops.convert_to_numpy(v) for v in (block.output_dense.kernel,
                                                      block.output_dense.bias))
    gamma, beta = (keras.ops.convert_to_numpy(v) for v in (block.layer_norm.gamma,
                                                           block.layer_norm.beta))
    expected = _layer_norm(_gelu_tanh(x @ w1 + b1) @ w2 + b2 + x, gamma, beta, 1e-12)
    np.testing.assert_allclose(got, expected, atol=1e-4)
