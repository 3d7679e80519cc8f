"""ALiBi: the slopes and the penalty against HF transformers' BLOOM (an
implementation we did not write), and what the attention does with it."""

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras.config_dicts import ConfigError
from albert_keras.layers.attention_block import AttentionBlock
from albert_keras.layers.position_bias import alibi_bias
from albert_keras.layers.position_bias import alibi_slopes
from albert_keras.models.albert.hf_config import to_hf_dict
from albert_keras.models.albert.tf1_config import to_original_dict


def _bloom_alibi(num_heads, seq):
    """BLOOM's ``[N, 1, S]`` tensor: ``slope_h * j`` for key ``j``."""
    import torch
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    mask = torch.ones((1, seq), dtype=torch.long)
    return build_alibi_tensor(mask, num_heads, torch.float32).numpy()


@pytest.mark.parametrize("num_heads", [1, 2, 3, 4, 6, 8, 12, 16, 20])
def test_slopes_are_bloom_slopes(num_heads):
    bloom = _bloom_alibi(num_heads, 4)
    np.testing.assert_allclose(alibi_slopes(num_heads), bloom[:, 0, 1], rtol=1e-6)


@pytest.mark.parametrize("num_heads", [4, 12])
def test_causal_rows_give_bloom_attention(num_heads):
    """On the keys a causal model sees (j <= i), ``-slope * (i - j)`` and
    BLOOM's ``slope * j`` differ by a constant per row, so the softmax of the
    two is the same (the paper's bias, without our global position 0)."""
    seq = 9
    ours = keras.ops.convert_to_numpy(alibi_bias(num_heads, seq, global_first=False))[0]
    bloom = np.broadcast_to(_bloom_alibi(num_heads, seq), (num_heads, seq, seq))

    def causal_softmax(scores):
        scores = np.where(np.tril(np.ones((seq, seq), bool)), scores, -np.inf)
        e = np.exp(scores - scores.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    np.testing.assert_allclose(causal_softmax(ours), causal_softmax(bloom), atol=1e-6)


def test_bias_is_symmetric_and_follows_query_positions():
    full = keras.ops.convert_to_numpy(alibi_bias(4, 7))[0]
    np.testing.assert_array_equal(full, np.transpose(full, (0, 2, 1)))
    assert np.all(np.diagonal(full, axis1=1, axis2=2) == 0)
    positions = np.array([[0, 6, 3], [2, 2, 5]], "int32")
    rows = keras.ops.convert_to_numpy(alibi_bias(4, 7, positions))
    assert rows.shape == (2, 4, 3, 7)
    for b in range(2):
        np.testing.assert_array_equal(rows[b], full[:, positions[b]])


def test_position_zero_is_global_and_the_rest_is_the_paper():
    paper = keras.ops.convert_to_numpy(alibi_bias(4, 7, global_first=False))[0]
    ours = keras.ops.convert_to_numpy(alibi_bias(4, 7))[0]
    assert np.all(ours[:, 0, :] == 0) and np.all(ours[:, :, 0] == 0)
    np.testing.assert_array_equal(ours[:, 1:, 1:], paper[:, 1:, 1:])
    assert paper[0, 0, 6] == pytest.approx(-6 * 0.25)


@pytest.mark.parametrize("scale", [1.0, 4.0])
def test_zero_scores_attend_by_distance_alone(scale):
    """With the query kernel at zero every q.k score is 0, so each head's
    attention is the softmax of its penalty over the real keys."""
    hidden, heads, seq = 16, 4, 8
    block = AttentionBlock(hidden, heads, position_bias="alibi", alibi_slope_scale=scale)
    x = np.random.default_rng(0).normal(size=(1, seq, hidden)).astype("float32")
    mask = np.ones((1, seq), "int32")
    mask[0, 6:] = 0
    block(x, mask)
    block.query.kernel.assign(np.zeros_like(block.query.kernel.numpy()))
    block.query.bias.assign(np.zeros_like(block.query.bias.numpy()))
    _, probs = block(x, mask, return_attention=True)
    probs = keras.ops.convert_to_numpy(probs)[0]
    slopes = scale * _bloom_alibi(heads, 2)[:, 0, 1]
    distance = np.abs(np.arange(seq)[:, None] - np.arange(seq)[None, :])
    distance[0, :] = distance[:, 0] = 0  # position 0 ([CLS]) is global
    scores = np.where(mask[0][None, None, :] > 0, -slopes[:, None, None] * distance, -np.inf)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(probs, expected, atol=1e-6)
    # The steepest head (slope 1/4, or 1) prefers neighbours; none looks at padding.
    assert probs[0, 3, 2] > probs[0, 3, 1] and np.all(probs[:, :, 6:] == 0)


def test_alibi_changes_the_output_not_the_weights():
    x = np.random.default_rng(1).normal(size=(2, 6, 16)).astype("float32")
    mask = np.ones((2, 6), "int32")
    plain, alibi = AttentionBlock(16, 4), AttentionBlock(16, 4, position_bias="alibi")
    plain(x, mask), alibi(x, mask)
    assert [w.path.split("/", 1)[1] for w in plain.weights] == [
        w.path.split("/", 1)[1] for w in alibi.weights]
    alibi.set_weights(plain.get_weights())
    diff = np.abs(keras.ops.convert_to_numpy(alibi(x, mask) - plain(x, mask)))
    # the [CLS] row attends as without ALiBi; every other row is penalised
    assert diff[:, 0].max() < 1e-6 and diff[:, 1:].max() > 1e-4


def test_unknown_position_bias_is_refused():
    with pytest.raises(ConfigError, match="position_bias"):
        AlbertConfig(position_bias="rope")
    with pytest.raises(ValueError, match="position_bias"):
        AttentionBlock(16, 4, position_bias="rope")
    for scale in (0, -1.0, float("nan"), True):
        with pytest.raises(ConfigError, match="alibi_slope_scale"):
            AlbertConfig(position_bias="alibi", alibi_slope_scale=scale)
    # a scale that would change nothing is an error, not a silent no-op
    with pytest.raises(ConfigError, match="needs position_bias='alibi'"):
        AlbertConfig(alibi_slope_scale=4.0)
    # A config written before the fields existed reads as ALBERT's.
    assert AlbertConfig.from_dict({"vocab_size": 50}).position_bias == "none"


def test_formats_without_alibi_refuse_it():
    config = AlbertConfig(vocab_size=50, hidden_size=32, num_attention_heads=4,
                          intermediate_size=64, position_bias="alibi")
    for model_type in (None, "albert", "electra"):
        with pytest.raises(ConfigError, match="position_bias='alibi'.*keep the model as .keras"):
            to_hf_dict(config, model_type)
    with pytest.raises(ConfigError, match="position_bias='alibi'"):
        to_original_dict(config)
