import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.presets import count_parameters
from tests.helpers import TINY
from tests.helpers import encoder_inputs
from tests.helpers import run_model_test


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
@pytest.mark.parametrize("hidden_states", [False, True])
def test_encoder(sharing, hidden_states):
    config = AlbertConfig(**TINY, sharing=sharing)

    def expected(b, s):
        out = {"sequence_output": (b, s, 16), "pooled_output": (b, 16)}
        if hidden_states:
            out["hidden_states"] = (b, 9, s, 16)  # 4 layers x 2 blocks + 1
        return out

    model = run_model_test(
        lambda dtype: AlbertEncoder(config, output_hidden_states=hidden_states, dtype=dtype),
        encoder_inputs,
        expected,
    )
    assert model.count_params() == count_parameters(config)


def test_encoder_with_alibi():
    config = AlbertConfig(**TINY, position_bias="alibi", alibi_slope_scale=4.0)
    model = run_model_test(
        lambda dtype: AlbertEncoder(config, dtype=dtype),
        encoder_inputs,
        lambda b, s: {"sequence_output": (b, s, 16), "pooled_output": (b, 16)},
    )
    # ALiBi adds no weights, and the saved config keeps it.
    assert model.count_params() == count_parameters(AlbertConfig(**TINY))
    restored = AlbertEncoder.from_config(model.get_config()).config
    assert (restored.position_bias, restored.alibi_slope_scale) == ("alibi", 4.0)


def test_hidden_states_end_with_sequence_output():
    encoder = AlbertEncoder(AlbertConfig(**TINY), output_hidden_states=True)
    out = encoder(encoder_inputs(2, 9))
    np.testing.assert_array_equal(
        out["hidden_states"][:, -1].numpy(), out["sequence_output"].numpy()
    )


def test_longer_than_max_positions_is_a_clear_error():
    encoder = AlbertEncoder(AlbertConfig(**TINY))
    with pytest.raises(ValueError, match="max_position_embeddings=32"):
        encoder(encoder_inputs(1, 33))


def test_padding_does_not_change_real_tokens():
    encoder = AlbertEncoder(AlbertConfig(**TINY))
    short = encoder_inputs(1, 6)
    short["padding_mask"][:] = 1
    padded = {k: np.pad(v, ((0, 0), (0, 4))) for k, v in short.items()}
    a = encoder(short)["sequence_output"].numpy()
    b = encoder(padded)["sequence_output"].numpy()[:, :6]
    np.testing.assert_allclose(a, b, atol=1e-5)


def _distinct_variables(model):
    return {id(v) for v in model.weights}


def test_all_sharing_does_not_grow_with_depth():
    counts = set()
    for layers in (1, 3, 12):
        config = AlbertConfig(**{**TINY, "num_hidden_layers": layers, "num_hidden_groups": 1,
                                 "inner_group_num": 1})
        encoder = AlbertEncoder(config)
        counts.add((len(_distinct_variables(encoder)), encoder.count_params()))
    assert len(counts) == 1


@pytest.mark.parametrize(
    "sharing, attention_modules, ffn_modules",
    [("all", 1, 1), ("attention", 1, 6), ("ffn", 6, 1), ("none", 6, 6)],
)
def test_sharing_modes_share_exactly_their_half(sharing, attention_modules, ffn_modules):
    config = AlbertConfig(**{**TINY, "num_hidden_layers": 6, "num_hidden_groups": 1,
                             "inner_group_num": 1, "sharing": sharing})
    encoder = AlbertEncoder(config)
    transformer = encoder.transformer
    assert len(transformer.attention_blocks) == attention_modules
    assert len(transformer.ffn_blocks) == ffn_modules
    # Each block has its own variables; the per-layer plan reuses the objects.
    attention_vars = {id(v) for b in transformer.attention_blocks for v in b.weights}
    ffn_vars = {id(v) for b in transformer.ffn_blocks for v in b.weights}
    assert len(attention_vars) == 10 * attention_modules  # q,k,v,o kernels+biases, LN
    assert len(ffn_vars) == 6 * ffn_modules
    used_attention = {transformer.plan[i][0][0] for i in range(6)}
    used_ffn = {transformer.plan[i][0][1] for i in range(6)}
    assert len(used_attention) == attention_modules
    assert len(used_ffn) == ffn_modules


def test_groups_follow_the_original_formula():
    config = AlbertConfig(**{**TINY, "num_hidden_layers": 12, "num_hidden_groups": 3,
                             "inner_group_num": 1})
    plan = AlbertEncoder(config).transformer.plan
    groups = [blocks[0][0] for blocks in plan]
    assert groups == [int(i / 12 * 3) for i in range(12)] == [0] * 4 + [1] * 4 + [2] * 4


def test_config_accepts_dict_and_survives_save(tmp_path):
    encoder = AlbertEncoder(AlbertConfig(**TINY).to_dict())
    path = str(tmp_path / "e.keras")
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.config == encoder.config


def test_cls_only_keeps_the_pooled_output():
    """``cls_only``: the last block computes the [CLS] row alone; the pooled
    output and that row equal the full encoder's (same weights, padding in
    the batch), for every sharing mode's plan (two blocks per group here)."""
    def make(dtype):
        return AlbertEncoder(AlbertConfig(**TINY), cls_only=True, dtype=dtype)

    cls_only = run_model_test(
        make, encoder_inputs,
        lambda b, s: {"sequence_output": (b, 1, 16), "pooled_output": (b, 16)})
    full = AlbertEncoder(AlbertConfig(**TINY))
    full.set_weights(cls_only.get_weights())
    inputs = encoder_inputs(3, 11)
    a, b = full(inputs), cls_only(inputs)
    np.testing.assert_allclose(b["pooled_output"], a["pooled_output"], atol=1e-5)
    np.testing.assert_allclose(b["sequence_output"], a["sequence_output"][:, :1], atol=1e-5)
    with pytest.raises(ValueError, match="cls_only and output_hidden_states"):
        AlbertEncoder(AlbertConfig(**TINY), cls_only=True, output_hidden_states=True)
