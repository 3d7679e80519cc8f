"""Layer-wise learning-rate decay: the scales by depth, and the steps
against torch's AdamW with one parameter group per rate."""

import keras
import numpy as np
import pytest

from albert_keras import AlbertEncoder
from albert_keras.optimizers.layer_decay import layer_rate_scales
from albert_keras.optimizers.optimizer import LayerwiseAdamW
from albert_keras.optimizers.optimizer import LayerwiseLamb
from albert_keras.optimizers.optimizer import make_optimizer
from tests.helpers import TINY
from tests.helpers import albert_config


def _encoder(**changes):
    encoder = AlbertEncoder(albert_config(**{**TINY, "inner_group_num": 1, **changes}))
    return encoder


def _scale_of(scales, prefix):
    found = {v for k, v in scales.items() if k.startswith(prefix)}
    assert len(found) == 1, (prefix, found)
    return found.pop()


def test_unshared_layers_step_slower_the_deeper_they_are():
    encoder = _encoder(sharing="none")  # BERT: 4 layers, one module each
    scales = layer_rate_scales(encoder, 0.5)
    # embeddings 0.5^5; layer i at 0.5^(4 - i): the top layer 0.5, its head 1
    assert _scale_of(scales, "embeddings/") == pytest.approx(1 / 32)
    for layer, expected in enumerate([1 / 16, 1 / 8, 1 / 4, 1 / 2]):
        assert _scale_of(scales, f"transformer/attention_{layer}/") == pytest.approx(expected)
        assert _scale_of(scales, f"transformer/ffn_{layer}/") == pytest.approx(expected)
    assert not any(k.startswith("pooler/") for k in scales)  # the pooler: full rate
    assert len(scales) == len(encoder.trainable_variables) - 2
    assert layer_rate_scales(encoder, 1.0) == {}
    with pytest.raises(ValueError, match=r"layer_decay must be in \(0, 1\], got 0"):
        layer_rate_scales(encoder, 0)


def test_a_shared_module_takes_the_rate_of_its_deepest_layer():
    # 4 layers in 2 groups: group 0 runs layers 0-1, group 1 layers 2-3
    scales = layer_rate_scales(_encoder(sharing="all", num_hidden_groups=2), 0.5)
    assert _scale_of(scales, "transformer/attention_0/") == pytest.approx(1 / 8)  # layer 1
    assert _scale_of(scales, "transformer/attention_1/") == pytest.approx(1 / 2)  # layer 3
    # ALBERT: one group runs every layer, so only the embeddings are slower
    scales = layer_rate_scales(_encoder(sharing="all", num_hidden_groups=1), 0.5)
    assert _scale_of(scales, "transformer/") == pytest.approx(1 / 2)
    assert _scale_of(scales, "embeddings/") == pytest.approx(1 / 32)
    # attention shared, FFNs per layer
    scales = layer_rate_scales(_encoder(sharing="attention", num_hidden_groups=1), 0.5)
    assert _scale_of(scales, "transformer/attention_0/") == pytest.approx(1 / 2)
    assert _scale_of(scales, "transformer/ffn_0/") == pytest.approx(1 / 16)


def test_scaled_adamw_steps_equal_torch_adamw_parameter_groups():
    import torch  # a test dependency (the parity tests' reference)

    rng = np.random.default_rng(0)
    start = {"low/kernel": rng.normal(size=(4, 3)).astype("float32"),
             "low/bias": rng.normal(size=(3,)).astype("float32"),
             "head/kernel": rng.normal(size=(3, 2)).astype("float32")}
    grads = [{k: (1e-2 * rng.normal(size=v.shape)).astype("float32") for k, v in start.items()}
             for _ in range(10)]
    lr, wd, scale = 1e-2, 0.1, 0.25

    ours = {}
    for k, v in start.items():
        with keras.name_scope(k.split("/")[0]):
            ours[k] = keras.Variable(v, name=k.split("/")[1])
    assert ours["low/kernel"].path == "low/kernel"
    opt = make_optimizer("adamw", learning_rate=lr, total_steps=10**9, warmup_steps=0,
                         weight_decay=wd, clip_norm=None,
                         lr_scales={"low/kernel": scale, "low/bias": scale})
    for g in grads:
        opt.apply_gradients([(keras.ops.convert_to_tensor(g[k]), ours[k]) for k in start])

    theirs = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in start.items()}
    torch_opt = torch.optim.AdamW(
        [{"params": [theirs["low/kernel"]], "lr": lr * scale, "weight_decay": wd},
         {"params": [theirs["low/bias"]], "lr": lr * scale, "weight_decay": 0.0},
         {"params": [theirs["head/kernel"]], "lr": lr, "weight_decay": wd}],
        lr=lr, betas=(0.9, 0.999), eps=1e-6)
    for g in grads:
        for k, p in theirs.items():
            p.grad = torch.tensor(g[k])
        torch_opt.step()
    moved = {}
    for k in start:
        moved[k] = np.abs(theirs[k].detach().numpy() - start[k]).max()
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours[k]),
                                   theirs[k].detach().numpy(), rtol=0, atol=moved[k] * 1e-3)
    assert moved["low/kernel"] < 0.5 * moved["head/kernel"]  # the scale did something

    clone = LayerwiseAdamW.from_config(opt.get_config())
    assert clone.lr_scales == {"low/kernel": scale, "low/bias": scale}


def test_lamb_scales_a_variables_rate_as_a_slower_optimizer_would():
    """LAMB with ``lr_scales`` (MobileBERT's slower lower layers) moves a
    scaled variable as LAMB at the scaled rate does, and the others as at
    the full rate; the factors survive a config round trip."""
    rng = np.random.default_rng(1)
    start = {"low": rng.normal(size=(4, 3)), "high": rng.normal(size=(3, 2))}
    grads = [{k: 1e-2 * rng.normal(size=v.shape) for k, v in start.items()} for _ in range(6)]

    def run(learning_rate, lr_scales):
        variables = {}
        for k, v in start.items():
            with keras.name_scope(k):
                variables[k] = keras.Variable(v.astype("float32"), name="kernel")
        opt = make_optimizer("lamb", learning_rate=learning_rate, total_steps=10**9,
                             warmup_steps=0, weight_decay=0.01, clip_norm=None,
                             lr_scales=lr_scales)
        for g in grads:
            opt.apply_gradients([(keras.ops.convert_to_tensor(g[k].astype("float32")),
                                  variables[k]) for k in start])
        return {k: keras.ops.convert_to_numpy(v) for k, v in variables.items()}, opt

    scaled, opt = run(1e-2, {"low/kernel": 0.1})
    slow, _ = run(1e-3, None)
    full, _ = run(1e-2, None)
    np.testing.assert_allclose(scaled["low"], slow["low"], rtol=0, atol=1e-7)
    np.testing.assert_allclose(scaled["high"], full["high"], rtol=0, atol=1e-7)
    assert np.abs(slow["low"] - start["low"]).max() < 0.5 * np.abs(
        full["low"] - start["low"]).max()  # the scale did something
    assert LayerwiseLamb.from_config(opt.get_config()).lr_scales == {"low/kernel": 0.1}


@pytest.mark.parametrize("changes", [
    {"sharing": "none"},
    {"sharing": "all", "num_hidden_groups": 2},
    # DeBERTa's relative table, read by every layer, and its LayerNorm
    {"sharing": "none", "relative_attention": True, "position_buckets": 8,
     "max_relative_positions": 16, "norm_rel_ebd": "layer_norm",
     "position_biased_input": False},
])
def test_every_variable_but_the_pooler_gets_its_layers_rate(changes):
    """Each trainable variable of the encoder has a scale, and it is the
    one its path says (depth read from the names, not from the code under
    test): nothing falls back to the head's full rate unnoticed."""
    encoder = _encoder(**changes)
    scales = layer_rate_scales(encoder, 0.5)
    layers = TINY["num_hidden_layers"]
    groups = changes.get("num_hidden_groups", layers)
    for v in encoder.trainable_variables:
        top = v.path.split("/")[0]
        if top == "pooler":
            assert v.path not in scales
            continue
        assert v.path in scales, v.path
        if top == "embeddings":
            expected = 0.5 ** (layers + 1)
        elif "/attention_" in v.path or "/ffn_" in v.path:
            module = int(v.path.split("/")[1].split("_")[-1])
            # module k of a group runs layers k * per .. (k + 1) * per - 1
            deepest = (module + 1) * (layers // groups) - 1
            expected = 0.5 ** (layers - deepest)
        else:  # the transformer's own: the relative table, read by the top layer too
            assert "rel" in v.path, v.path
            expected = 0.5
        assert scales[v.path] == pytest.approx(expected), v.path
    if changes.get("relative_attention"):
        assert any(p.startswith("transformer/rel") for p in scales)
