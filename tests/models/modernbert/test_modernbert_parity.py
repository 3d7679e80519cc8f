"""ModernBERT's encoder against transformers' ``ModernBertModel`` on the same
random weights, in several layouts: a sliding window shorter than the batch,
every 2nd and 3rd layer global, biases on and off, padded rows."""

import keras
import numpy as np
import pytest
import torch
import transformers

from albert_keras.models.modernbert.checkpoints import config_from_hf
from albert_keras.models.modernbert.checkpoints import load_hf_encoder
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig
from albert_keras.models.modernbert.modernbert_encoder import ModernBertEncoder

BASE = dict(vocab_size=120, hidden_size=32, intermediate_size=48, num_hidden_layers=4,
            num_attention_heads=4, max_position_embeddings=64, pad_token_id=0)
LAYOUTS = {
    # a window of 4 (2 each way) over rows of 24, global every 3rd layer
    "window_shorter_than_the_rows": dict(local_attention=4),
    "global_every_2nd": dict(local_attention=6, global_attn_every_n_layers=2),
    "biases_on": dict(local_attention=8, attention_bias=True, mlp_bias=True, norm_bias=True,
                      classifier_bias=True),
    "other_rotary_bases_and_activation": dict(
        local_attention=4, hidden_activation="gelu_pytorch_tanh", classifier_activation="silu",
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 300.0}}),
}


def _hf_folder(tmp_path, fields, head=False):
    """A random HF ModernBERT folder (with the prediction head: a masked LM)."""
    torch.manual_seed(0)
    config = transformers.ModernBertConfig(**fields, attn_implementation="eager")
    kind = transformers.ModernBertForMaskedLM if head else transformers.ModernBertModel
    model = kind(config).eval()
    with torch.no_grad():  # biases and norms away from their initial 0 and 1
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    folder = str(tmp_path / "hf")
    model.save_pretrained(folder)
    return folder, model


def _batch(rows=3, length=24, seed=1):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 120, (rows, length)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 17:] = 0  # padded rows
    mask[2, 9:] = 0
    ids[mask == 0] = 0
    return ids, mask


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_the_encoder_gives_transformers_hidden_states(tmp_path, layout):
    folder, hf = _hf_folder(tmp_path, {**BASE, **LAYOUTS[layout]})
    ours = load_hf_encoder(folder, output_hidden_states=True)
    assert ours.config.layer_types == hf.config.layer_types
    ids, mask = _batch()
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                  attention_mask=torch.tensor(mask), output_hidden_states=True)
    got = ours({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask})
    real = mask.astype(bool)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got["sequence_output"])[real],
                               want.last_hidden_state.numpy()[real], atol=1e-5)
    states = keras.ops.convert_to_numpy(got["hidden_states"])
    assert states.shape[1] == len(want.hidden_states)
    for k, state in enumerate(want.hidden_states):
        np.testing.assert_allclose(states[:, k][real], state.numpy()[real], atol=1e-5,
                                   err_msg=f"hidden state {k}")


def test_the_prediction_head_is_transformers(tmp_path):
    """The pooled output is HF's prediction head on the first row."""
    folder, hf = _hf_folder(tmp_path, {**BASE, "local_attention": 4,
                                       "classifier_bias": True}, head=True)
    ours = load_hf_encoder(folder)
    ids, mask = _batch()
    with torch.no_grad():
        rows = hf.model(input_ids=torch.tensor(ids, dtype=torch.long),
                        attention_mask=torch.tensor(mask)).last_hidden_state
        want = hf.head(rows[:, 0]).numpy()
    got = ours({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask})
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got["pooled_output"]), want,
                               atol=1e-5)


def test_the_default_layout_and_presets_read_as_transformers_does():
    hf = transformers.ModernBertConfig(num_hidden_layers=7)
    ours = config_from_hf(hf.to_dict())
    assert ours.layer_types == hf.layer_types
    assert (ours.global_rope_theta, ours.local_rope_theta) == (160000.0, 10000.0)
    assert ours.window(1) == hf.sliding_window == 64 and ours.window(0) is None


@pytest.mark.parametrize("changes, words", [
    (dict(hidden_size=30), "must divide by num_attention_heads"),
    (dict(layer_types=["full_attention"]), "layer_types lists 1 layers"),
    (dict(layer_types=["full_attention", "local"] * 2), "'local' is not one of"),
    (dict(classifier_pooling="max"), "classifier_pooling must be one of"),
])
def test_a_config_out_of_range_is_one_line(changes, words):
    with pytest.raises(ValueError, match=words):
        ModernBertConfig(**{**BASE, **changes})


def test_the_encoder_saves_and_loads_exactly(tmp_path):
    encoder = ModernBertEncoder(ModernBertConfig(**BASE, local_attention=4))
    ids, mask = _batch()
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}
    path = str(tmp_path / "m.keras")
    encoder.save(path)
    back = keras.saving.load_model(path)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(back(inputs)["sequence_output"]),
                                  keras.ops.convert_to_numpy(encoder(inputs)["sequence_output"]))
