"""Parity with HF transformers (PyTorch) on the same weights."""

import json
import os

import numpy as np
import pytest
import torch
import transformers

from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from albert_keras.convert import ConversionError
from albert_keras.convert import load_hf
from albert_keras.convert import save_hf
from albert_keras.presets import get_preset
from tests.helpers import all_positions
from tests.helpers import make_hf_model
from tests.helpers import max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs

TOL = 1e-5


def _compare_pretraining(ours, hf_model, inputs, report=None):
    hf = run_hf(hf_model, inputs)
    enc = ours.encoder(inputs)
    mask = inputs["padding_mask"]
    diffs = {
        "sequence": max_diff(enc["sequence_output"], hf.hidden_states[-1], mask),
        "pooled": max_diff(enc["pooled_output"], _pooled(hf_model, hf)),
    }
    out = ours({**inputs, "masked_positions": all_positions(inputs)})
    logits_name = "prediction_logits"
    diffs["mlm"] = max_diff(out["mlm_logits"], getattr(hf, logits_name), mask)
    sop = hf.sop_logits if hasattr(hf, "sop_logits") else hf.seq_relationship_logits
    diffs["sop"] = max_diff(out["sop_logits"], sop)
    if report is not None:
        report.update(diffs)
    return diffs


def _pooled(hf_model, hf_out):
    """The pooled output of a pretraining model, from HF's own pooler."""
    base = getattr(hf_model, hf_model.base_model_prefix)
    first = hf_out.hidden_states[-1][:, 0]
    with torch.no_grad():
        if hasattr(base.pooler, "dense"):  # BertPooler
            return base.pooler.dense(first).tanh()
        return base.pooler_activation(base.pooler(first))  # AlbertModel


def test_albert_for_pretraining_parity(tmp_path, capsys):
    hf_model = make_hf_model("AlbertForPreTraining", tmp_path)
    ours, report = load_hf(str(tmp_path))
    assert isinstance(ours, EncoderPretrainer)
    assert report == {"loaded": ["encoder", "mlm", "pooler", "sop"], "skipped": [], "unused": []}
    config = ours.config
    assert config.embedding_size != config.hidden_size
    assert (config.num_hidden_groups, config.inner_group_num) == (2, 2)
    diffs = _compare_pretraining(ours, hf_model, sample_inputs())
    with capsys.disabled():
        print(f"\nALBERT parity max|diff|: {diffs}")
    assert max(diffs.values()) <= TOL, diffs


def test_albert_hidden_states_match(tmp_path):
    hf_model = make_hf_model("AlbertModel", tmp_path)
    ours, report = load_hf(str(tmp_path))
    assert isinstance(ours, AlbertEncoder) and report["loaded"] == ["encoder", "pooler"]
    inputs = sample_inputs()
    hf = run_hf(hf_model, inputs)
    enc = AlbertEncoder(ours.config, output_hidden_states=True)
    enc.set_weights(ours.get_weights())
    out = enc(inputs)
    mask = inputs["padding_mask"]
    for i, state in enumerate(hf.hidden_states):
        assert max_diff(out["hidden_states"][:, i], state, mask) <= TOL, i
    assert max_diff(out["pooled_output"], hf.pooler_output) <= TOL


def test_albert_for_masked_lm_has_no_pooler_or_sop(tmp_path):
    hf_model = make_hf_model("AlbertForMaskedLM", tmp_path)
    ours, report = load_hf(str(tmp_path))
    assert report["loaded"] == ["encoder", "mlm"]
    assert report["skipped"] == ["pooler", "sop"]
    inputs = sample_inputs()
    with torch.no_grad():
        hf = hf_model(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"]),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
        )
    out = ours({**inputs, "masked_positions": all_positions(inputs)})
    assert max_diff(out["mlm_logits"], hf.logits, inputs["padding_mask"]) <= TOL


@pytest.mark.parametrize("cls_name", ["BertModel", "BertForPreTraining"])
def test_bert_parity(cls_name, tmp_path, capsys):
    hf_model = make_hf_model(cls_name, tmp_path)
    ours, _ = load_hf(str(tmp_path))
    config = ours.config
    assert config.sharing == "none" and config.embedding_size == config.hidden_size
    assert config.hidden_act == "gelu"
    inputs = sample_inputs()
    hf = run_hf(hf_model, inputs)
    mask = inputs["padding_mask"]
    if cls_name == "BertModel":
        out = ours(inputs)
        diffs = {
            "sequence": max_diff(out["sequence_output"], hf.last_hidden_state, mask),
            "pooled": max_diff(out["pooled_output"], hf.pooler_output),
        }
    else:
        diffs = _compare_pretraining(ours, hf_model, inputs)
    with capsys.disabled():
        print(f"\n{cls_name} parity max|diff|: {diffs}")
    assert max(diffs.values()) <= TOL, diffs


@pytest.mark.parametrize("cls_name", ["AlbertForPreTraining", "BertForPreTraining"])
def test_round_trip_ours_to_hf_to_transformers(cls_name, tmp_path):
    make_hf_model(cls_name, tmp_path / "src", seed=3)
    ours, _ = load_hf(str(tmp_path / "src"))
    save_hf(ours, str(tmp_path / "out"))
    reloaded = getattr(transformers, cls_name).from_pretrained(str(tmp_path / "out")).eval()
    diffs = _compare_pretraining(ours, reloaded, sample_inputs())
    assert max(diffs.values()) <= TOL, diffs
    # And back into ours: identical weights.
    again, _ = load_hf(str(tmp_path / "out"))
    for a, b in zip(again.weights, ours.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_our_none_sharing_with_projection_exports_as_albert(tmp_path):
    config = get_preset("albert_tiny", sharing="none", vocab_size=99,
                        num_hidden_layers=2, max_position_embeddings=64)
    ours = EncoderPretrainer(AlbertEncoder(config))
    save_hf(ours, str(tmp_path / "out"))
    hf_config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert hf_config["model_type"] == "albert" and hf_config["num_hidden_groups"] == 2
    reloaded = transformers.AlbertForPreTraining.from_pretrained(str(tmp_path / "out")).eval()
    assert max(_compare_pretraining(ours, reloaded, sample_inputs()).values()) <= TOL


def test_pytorch_bin_is_read_with_weights_only(tmp_path):
    hf_model = make_hf_model("AlbertForPreTraining", tmp_path)
    os.remove(tmp_path / "model.safetensors")
    torch.save(hf_model.state_dict(), tmp_path / "pytorch_model.bin")
    ours, _ = load_hf(str(tmp_path))
    assert max(_compare_pretraining(ours, hf_model, sample_inputs()).values()) <= TOL


def _rewrite(folder, edit):
    from safetensors.numpy import load_file
    from safetensors.numpy import save_file

    path = os.path.join(folder, "model.safetensors")
    tensors = load_file(path)
    edit(tensors)
    save_file(tensors, path, {"format": "pt"})


def test_missing_tensor_is_named(tmp_path):
    make_hf_model("AlbertForPreTraining", tmp_path)
    name = "albert.encoder.albert_layer_groups.1.albert_layers.1.ffn.weight"
    _rewrite(tmp_path, lambda t: t.pop(name))
    with pytest.raises(ConversionError, match="missing tensor encoder.albert_layer_groups.1"):
        load_hf(str(tmp_path))


def test_shape_mismatch_names_tensor_and_both_shapes(tmp_path):
    make_hf_model("AlbertForPreTraining", tmp_path)
    name = "albert.encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight"
    _rewrite(tmp_path, lambda t: t.__setitem__(name, np.zeros((32, 31), np.float32)))
    with pytest.raises(ConversionError, match=r"query.weight has shape \(32, 31\).*\(32, 32\)"):
        load_hf(str(tmp_path))


def test_unexpected_tensor_is_an_error(tmp_path):
    make_hf_model("AlbertForPreTraining", tmp_path)
    _rewrite(tmp_path, lambda t: t.__setitem__("classifier.weight", np.zeros((3, 32), np.float32)))
    with pytest.raises(ConversionError, match="unexpected tensor classifier.weight"):
        load_hf(str(tmp_path))
    _, report = load_hf(str(tmp_path), strict=False)
    assert report["unused"] == ["classifier.weight"]


def test_partial_head_is_an_error(tmp_path):
    make_hf_model("AlbertForPreTraining", tmp_path)
    _rewrite(tmp_path, lambda t: t.pop("sop_classifier.classifier.bias"))
    with pytest.raises(ConversionError, match="sop_classifier.classifier.bias"):
        load_hf(str(tmp_path))


def test_failed_assignment_leaves_the_model_untouched(tmp_path):
    from albert_keras.convert.assign import assign_tensors
    from albert_keras.convert.hf import read_hf_tensors
    from albert_keras.models.albert.weight_names import hf_albert_names

    make_hf_model("AlbertForPreTraining", tmp_path)
    good, _ = load_hf(str(tmp_path))
    target = EncoderPretrainer(AlbertEncoder(good.config))
    before = [w.numpy().copy() for w in target.weights]
    tensors = {k.removeprefix("albert."): v for k, v in read_hf_tensors(str(tmp_path)).items()}
    tensors["pooler.bias"] = np.zeros(5, np.float32)  # the last group, wrong shape
    with pytest.raises(ConversionError, match="pooler.bias"):
        assign_tensors(target, tensors, hf_albert_names(good.config), "src",
                       ignored={"predictions.decoder.weight", "predictions.decoder.bias"})
    for w, b in zip(target.weights, before):
        np.testing.assert_array_equal(w.numpy(), b)


def test_attention_only_sharing_cannot_go_to_hf(tmp_path):
    config = get_preset("albert_tiny", sharing="attention")
    with pytest.raises(ValueError, match="sharing='attention'"):
        save_hf(AlbertEncoder(config), str(tmp_path / "x"))
    assert not os.path.exists(tmp_path / "x")


@pytest.mark.parametrize("keep", [20, 0.5], ids=["header", "half"])
def test_a_truncated_safetensors_file_is_named_as_incomplete(tmp_path, keep):
    folder = str(tmp_path / "hf")
    make_hf_model("AlbertForPreTraining", folder)
    path = os.path.join(folder, "model.safetensors")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: keep if isinstance(keep, int) else int(len(data) * keep)])
    with pytest.raises(ConversionError) as error:
        load_hf(folder)
    assert str(error.value).startswith(f"{path}: not a complete safetensors file")
    assert "\n" not in str(error.value)
