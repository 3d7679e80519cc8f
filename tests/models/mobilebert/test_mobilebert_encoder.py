"""MobileBertEncoder: its parameter counts (against transformers and the
paper), cross-layer sharing, precision and saving."""

import keras
import numpy as np
import pytest

from albert_keras.families import build_backbone
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.presets import count_parameters
from albert_keras.presets import get_preset
from albert_keras.saving import save_model
from tests.helpers import MOBILEBERT
from tests.helpers import sample_inputs

SMALL = {k: v for k, v in MOBILEBERT.items()}


@pytest.mark.parametrize("overrides", [
    {}, dict(trigram_input=False), dict(use_bottleneck_attention=True),
    dict(normalization_type="layer_norm", num_feedforward_networks=1, hidden_act="gelu"),
    dict(key_query_shared_bottleneck=False, use_bottleneck_attention=False),
    dict(use_bottleneck=False, hidden_size=16), dict(num_hidden_groups=1),
    dict(classifier_activation=True)])
def test_the_formula_counts_a_built_encoder(overrides):
    config = MobileBertConfig(**{**SMALL, **overrides})
    assert build_backbone(config).count_params() == count_parameters(config)


def test_the_published_shape_has_transformers_count_and_the_papers():
    import transformers

    hf = transformers.MobileBertModel(transformers.MobileBertConfig(classifier_activation=False))
    hf_count = sum(p.numel() for p in hf.parameters())
    assert count_parameters(get_preset("mobilebert")) == hf_count  # 24.58M
    # Sun et al. 2020, Table 1 and 3: MobileBERT 25.3M, TINY 15.1M, IB-BERT 293M
    assert abs(count_parameters(get_preset("mobilebert")) / 25.3e6 - 1) < 0.03
    assert abs(count_parameters(get_preset("mobilebert_tiny")) / 15.1e6 - 1) < 0.03
    assert abs(count_parameters(get_preset("ib_bert")) / 293e6 - 1) < 0.01
    # ALBERT's all-shared blocks: the 24 layers hold one block's weights
    shared = count_parameters(get_preset("mobilebert_shared"))
    assert shared < 0.22 * count_parameters(get_preset("mobilebert"))


def test_shared_blocks_run_one_set_of_weights():
    config = MobileBertConfig(**{**SMALL, "num_hidden_layers": 4, "num_hidden_groups": 2})
    encoder = build_backbone(config)
    assert len(encoder.blocks) == 2 and encoder.num_hidden_states == 5
    depth = encoder.variables_by_depth()
    first = encoder.blocks[0].trainable_variables[0].path
    assert depth[first] == 2 and max(depth.values()) == 4  # at the deepest layer running it
    out = encoder.encode(sample_inputs(), return_attention=True)
    assert len(out["hidden_states"]) == 5 and len(out["attention"]) == 4
    np.testing.assert_allclose(np.asarray(out["attention"][0]).sum(-1), 1.0, atol=1e-5)


def test_bfloat16_and_a_keras_file_round_trip(tmp_path):
    inputs = sample_inputs()
    encoder = build_backbone(MobileBertConfig(**SMALL))
    want = np.asarray(encoder(inputs)["sequence_output"])
    path = str(tmp_path / "encoder.keras")
    save_model(encoder, path)
    again = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(again(inputs)["sequence_output"]), want, atol=1e-6)
    mixed = build_backbone(MobileBertConfig(**SMALL), dtype="mixed_bfloat16")
    mixed.set_weights(encoder.get_weights())
    got = np.asarray(mixed(inputs)["sequence_output"], np.float32)
    mask = inputs["padding_mask"].astype(bool)
    # bf16 keeps 8 bits of mantissa: within a few percent of the float32 output
    assert np.abs(got - want)[mask].max() < 0.05 * np.abs(want).max()
    first = build_backbone(MobileBertConfig(**SMALL), cls_only=True)
    first.set_weights(encoder.get_weights())
    np.testing.assert_allclose(np.asarray(first(inputs)["sequence_output"])[:, 0], want[:, 0],
                               atol=1e-6)


def test_a_quantization_aware_encoder_fake_quantizes_every_dense_layer(tmp_path):
    from albert_keras.layers.quantized_dense import QuantizedDense

    config = MobileBertConfig(**{**SMALL, "hidden_act": "relu6", "classifier_activation": True})
    plain = build_backbone(config)
    encoder = build_backbone(config, quantize_aware=True)
    dense = [layer for layer in plain._flatten_layers() if isinstance(layer, keras.layers.Dense)]
    quantized = [layer for layer in encoder._flatten_layers()
                 if isinstance(layer, QuantizedDense)]
    # embedding projection, 3 blocks of 13 dense layers (2 bottlenecks, q, k, v,
    # attention output, 2 FFNs of 2, output FFN's 2, output bottleneck: 13), pooler
    assert len(quantized) == len(dense) == 1 + 3 * 13 + 1
    inputs = sample_inputs()
    encoder(inputs, training=True)  # the activation ranges from one batch
    want = np.asarray(encoder(inputs)["sequence_output"])
    path = str(tmp_path / "qat.keras")
    save_model(encoder, path)
    again = keras.saving.load_model(path)
    assert again.quantize_aware
    np.testing.assert_allclose(np.asarray(again(inputs)["sequence_output"]), want, atol=1e-6)
