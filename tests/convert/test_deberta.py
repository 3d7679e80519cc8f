"""DeBERTa-v2/v3 parity with HF transformers and keras-hub on the same weights."""

import json
import os

import numpy as np
import pytest

from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from albert_keras import SequenceClassifier
from albert_keras.config_dicts import ConfigError
from albert_keras.convert import load_hf
from albert_keras.convert import save_hf
from tests.helpers import DEBERTA_V3
from tests.helpers import albert_config
from tests.helpers import all_positions
from tests.helpers import make_hf_model
from tests.helpers import max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs
from tests.helpers import write_small_vocab

TOL = 1e-5
# Layouts HF can hold: v3 (shared keys), v2 (own position projections,
# absolute positions and segments), one term only, no buckets.
VARIANTS = {
    "v3": {},
    "v2": dict(share_att_key=False, position_biased_input=True, type_vocab_size=2,
               norm_rel_ebd="none"),
    "c2p_only": dict(pos_att_type=["c2p"], share_att_key=False),
    "p2c_unbucketed": dict(pos_att_type=["p2c"], position_buckets=-1,
                           max_relative_positions=6),
}


def _inputs(config):
    inputs = sample_inputs()
    if not config.get("type_vocab_size", DEBERTA_V3["type_vocab_size"]):
        inputs["segment_ids"] = 0 * inputs["segment_ids"]
    return inputs


def _hf_run(model, inputs, segments):
    if not segments:  # HF's DeBERTa-v3 has no token-type table to look up
        inputs = {**inputs, "segment_ids": 0 * inputs["segment_ids"]}
    return run_hf(model, inputs)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_encoder_matches_transformers(tmp_path, variant):
    changes = VARIANTS[variant]
    hf = make_hf_model("DebertaV2Model", str(tmp_path), **changes)
    ours, report = load_hf(str(tmp_path))
    assert isinstance(ours, AlbertEncoder) and report["loaded"] == ["encoder"]
    assert type(ours.config).__name__ == "DebertaConfig"  # the family's own class
    inputs = _inputs(changes)
    theirs = _hf_run(hf, inputs, changes.get("type_vocab_size"))
    out = ours(inputs)
    mask = inputs["padding_mask"]
    assert max_diff(out["sequence_output"], theirs.last_hidden_state, mask) < TOL
    # every layer, not only the last
    states = AlbertEncoder(ours.config, output_hidden_states=True)
    states.set_weights(ours.get_weights())
    hidden = states(inputs)["hidden_states"]
    for i, layer in enumerate(theirs.hidden_states):
        assert max_diff(hidden[:, i], layer, mask) < TOL, i


@pytest.mark.parametrize("legacy", [True, False], ids=["cls_predictions", "lm_predictions"])
def test_masked_lm_matches_transformers_in_both_head_layouts(tmp_path, legacy):
    hf = make_hf_model("DebertaV2ForMaskedLM", str(tmp_path), legacy=legacy)
    ours, report = load_hf(str(tmp_path))
    assert isinstance(ours, EncoderPretrainer) and report["loaded"] == ["encoder", "mlm"]
    inputs = _inputs({})
    theirs = _hf_run(hf, inputs, 0)
    sequence = ours.encoder(inputs)["sequence_output"]
    logits = ours.mlm_head(sequence, all_positions(inputs))
    assert max_diff(logits, theirs.logits, inputs["padding_mask"]) < TOL


def test_sequence_classifier_matches_transformers_and_round_trips(tmp_path):
    import transformers

    hf = make_hf_model("DebertaV2ForSequenceClassification", str(tmp_path / "in"),
                       num_labels=3)
    ours, report = load_hf(str(tmp_path / "in"))
    assert isinstance(ours, SequenceClassifier) and "classifier" in report["loaded"]
    inputs = _inputs({})
    expected = _hf_run(hf, inputs, 0).logits
    assert max_diff(ours(inputs)["logits"], expected) < TOL
    # ours -> HF: transformers loads the folder and computes the same logits
    save_hf(ours, str(tmp_path / "out"))
    config = json.load(open(tmp_path / "out" / "config.json"))
    assert config["architectures"] == ["DebertaV2ForSequenceClassification"]
    back = transformers.DebertaV2ForSequenceClassification.from_pretrained(
        str(tmp_path / "out")).eval()
    assert max_diff(ours(inputs)["logits"], _hf_run(back, inputs, 0).logits) < TOL


@pytest.mark.parametrize("variant", ["v3", "v2"])
def test_masked_lm_written_by_us_loads_in_transformers(tmp_path, variant):
    import transformers

    hf = make_hf_model("DebertaV2ForMaskedLM", str(tmp_path / "in"), **VARIANTS[variant])
    ours, _ = load_hf(str(tmp_path / "in"))
    save_hf(ours, str(tmp_path / "out"))
    back = transformers.DebertaV2ForMaskedLM.from_pretrained(str(tmp_path / "out")).eval()
    inputs = _inputs(VARIANTS[variant])
    segments = VARIANTS[variant].get("type_vocab_size", 0)
    mask = inputs["padding_mask"]
    assert max_diff(_hf_run(back, inputs, segments).logits,
                    _hf_run(hf, inputs, segments).logits, mask) < TOL


def test_keras_hub_debertav3_backbone_matches_on_the_same_weights():
    import keras_hub

    config = albert_config(**dict(
        vocab_size=99, embedding_size=32, hidden_size=32, num_hidden_layers=2,
        num_hidden_groups=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, type_vocab_size=0, layer_norm_eps=1e-7,
        hidden_act="gelu", sharing="none", relative_attention=True, position_buckets=8,
        share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False))
    theirs = keras_hub.models.DebertaV3Backbone(
        vocabulary_size=99, num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=37,
        max_sequence_length=64, bucket_size=8, dropout=0.0)
    ours = AlbertEncoder(config)
    rng = np.random.default_rng(0)
    for w in theirs.weights:
        w.assign(rng.normal(0, 0.2, w.shape).astype("float32"))
    _copy_keras_hub_weights(theirs, ours)
    inputs = _inputs({})
    expected = theirs({"token_ids": inputs["token_ids"], "padding_mask": inputs["padding_mask"]})
    got = ours(inputs)["sequence_output"]
    assert max_diff(got, expected, inputs["padding_mask"]) < TOL


def _copy_keras_hub_weights(theirs, ours):
    """keras-hub's DebertaV3Backbone variables into ours, by their meaning."""
    w = {v.path: v.numpy() for v in theirs.weights}
    emb, transformer = ours.embeddings, ours.transformer
    emb.token_embedding.embeddings.assign(w["token_embedding/embeddings"])
    emb.layer_norm.gamma.assign(w["embeddings_layer_norm/gamma"])
    emb.layer_norm.beta.assign(w["embeddings_layer_norm/beta"])
    table = transformer.rel_embeddings
    table.embeddings.assign(w["rel_embedding/rel_embedding"])
    table.norm.gamma.assign(w["rel_embedding/rel_embeddings_layer_norm/gamma"])
    table.norm.beta.assign(w["rel_embedding/rel_embeddings_layer_norm/beta"])
    for i, (attn, ffn) in enumerate(zip(transformer.attention_blocks, transformer.ffn_blocks)):
        p = f"disentangled_attention_encoder_layer_{i}/"
        for ours_name, hub in (("query", "query"), ("key", "key"), ("value", "value")):
            kernel = w[f"{p}self_attention_layer/{hub}/kernel"]
            getattr(attn, ours_name).kernel.assign(kernel.reshape(kernel.shape[0], -1))
            getattr(attn, ours_name).bias.assign(
                w[f"{p}self_attention_layer/{hub}/bias"].reshape(-1))
        attn.output_dense.kernel.assign(w[f"{p}self_attention_layer/attention_output/kernel"])
        attn.output_dense.bias.assign(w[f"{p}self_attention_layer/attention_output/bias"])
        attn.layer_norm.gamma.assign(w[f"{p}self_attention_layer_norm/gamma"])
        attn.layer_norm.beta.assign(w[f"{p}self_attention_layer_norm/beta"])
        ffn.intermediate.kernel.assign(w[f"{p}feedforward_intermediate_dense/kernel"])
        ffn.intermediate.bias.assign(w[f"{p}feedforward_intermediate_dense/bias"])
        ffn.output_dense.kernel.assign(w[f"{p}feedforward_output_dense/kernel"])
        ffn.output_dense.bias.assign(w[f"{p}feedforward_output_dense/bias"])
        ffn.layer_norm.gamma.assign(w[f"{p}feedforward_layer_norm/gamma"])
        ffn.layer_norm.beta.assign(w[f"{p}feedforward_layer_norm/beta"])


@pytest.mark.parametrize("field, value, words", [
    ("conv_kernel_size", 3, "conv_kernel_size=3"),
    ("embedding_size", 16, "embedding_size=16"),
    ("pooler_hidden_size", 16, "pooler_hidden_size=16"),
    ("norm_rel_ebd", "batch_norm", "norm_rel_ebd='batch_norm'"),
    ("pos_att_type", ["c2p", "p2p"], "unknown term 'p2p'"),
    ("some_new_field", 1, "unknown config key 'some_new_field'"),
])
def test_unsupported_fields_are_one_line_errors_naming_them(tmp_path, field, value, words):
    config = {"model_type": "deberta-v2", **DEBERTA_V3, field: value}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ConfigError) as info:  # found before any tensor is read
        load_hf(str(tmp_path))
    message = str(info.value)
    assert words in message and "\n" not in message and str(path) in message


def test_an_albert_shared_deberta_shares_its_blocks_and_refuses_hf_export(tmp_path):
    config = albert_config(vocab_size=99, embedding_size=16, hidden_size=32,
                          num_hidden_layers=4, num_attention_heads=4, intermediate_size=37,
                          max_position_embeddings=64, relative_attention=True,
                          position_buckets=8, share_att_key=True, norm_rel_ebd="layer_norm",
                          position_biased_input=False, type_vocab_size=0)
    model = EncoderPretrainer(AlbertEncoder(config))
    # one attention module for four layers, as ALBERT shares
    assert len(model.encoder.transformer.attention_blocks) == 1
    with pytest.raises(ConfigError, match="keep it as .keras"):
        save_hf(model, str(tmp_path / "hf"))
    assert not os.path.exists(tmp_path / "hf")


def test_convert_command_reads_and_writes_deberta_folders(tmp_path):
    import transformers

    from albert_keras.cli import main

    hf = make_hf_model("DebertaV2ForMaskedLM", str(tmp_path / "in"))
    write_small_vocab(tmp_path / "in")  # a .keras carries its tokenizer
    assert main(["convert", str(tmp_path / "in"), "--out", str(tmp_path / "m.keras")]) == 0
    assert main(["convert", str(tmp_path / "m.keras"), "--to", "hf",
                 "--out", str(tmp_path / "out")]) == 0
    back = transformers.DebertaV2ForMaskedLM.from_pretrained(str(tmp_path / "out")).eval()
    inputs = _inputs({})
    assert max_diff(_hf_run(back, inputs, 0).logits, _hf_run(hf, inputs, 0).logits,
                    inputs["padding_mask"]) < TOL
