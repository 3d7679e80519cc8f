"""ELECTRA checkpoints: HF ElectraModel, ElectraForPreTraining (discriminator)
and ElectraForMaskedLM (generator) in and out, at the ALBERT tolerance."""

import json

import numpy as np
import pytest
import transformers

from albert_keras.convert import load_hf, save_hf
from albert_keras.models.albert_discriminator import AlbertDiscriminator
from albert_keras.models.albert_encoder import AlbertEncoder
from albert_keras.models.albert_pretrainer import AlbertPretrainer
from albert_keras.saving import load_model, save_model
from tests.helpers import all_positions, make_hf_model, max_diff, run_hf, sample_inputs

TOL = 1e-5
SHAPES = {"E != H (ELECTRA-small)": dict(embedding_size=16),
          "E == H": dict(embedding_size=32)}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_discriminator_parity_and_round_trip(tmp_path, shape):
    hf_model = make_hf_model("ElectraForPreTraining", tmp_path / "hf", **SHAPES[shape])
    ours, report = load_hf(str(tmp_path / "hf"))
    assert isinstance(ours, AlbertDiscriminator)
    assert report["loaded"] == ["encoder", "rtd"] and report["skipped"] == ["pooler"]
    assert (ours.encoder.embeddings.projection is not None) == (shape != "E == H")
    inputs = sample_inputs()
    mask = inputs["padding_mask"]
    hf = run_hf(hf_model, inputs)
    assert max_diff(ours.encoder(inputs)["sequence_output"], hf.hidden_states[-1], mask) < TOL
    assert max_diff(ours(inputs)["rtd_logits"], hf.logits, mask) < TOL
    # .keras and back to HF: transformers loads it and gives the same logits.
    save_model(ours, str(tmp_path / "d.keras"))
    again = load_model(str(tmp_path / "d.keras"))
    save_hf(again, str(tmp_path / "back"))
    config = json.load(open(tmp_path / "back" / "config.json"))
    assert config["architectures"] == ["ElectraForPreTraining"]
    reloaded = transformers.ElectraForPreTraining.from_pretrained(str(tmp_path / "back")).eval()
    assert max_diff(ours(inputs)["rtd_logits"], run_hf(reloaded, inputs).logits, mask) < TOL


def test_generator_parity_and_round_trip(tmp_path):
    hf_model = make_hf_model("ElectraForMaskedLM", tmp_path / "hf")
    ours, report = load_hf(str(tmp_path / "hf"))
    assert isinstance(ours, AlbertPretrainer)
    assert report["loaded"] == ["encoder", "mlm"] and report["skipped"] == ["pooler", "sop"]
    inputs = sample_inputs()
    mask = inputs["padding_mask"]
    logits = ours({**inputs, "masked_positions": all_positions(inputs)})["mlm_logits"]
    assert max_diff(logits, run_hf(hf_model, inputs).logits, mask) < TOL
    save_hf(ours, str(tmp_path / "back"), model_type="electra")
    reloaded = transformers.ElectraForMaskedLM.from_pretrained(str(tmp_path / "back")).eval()
    assert max_diff(logits, run_hf(reloaded, inputs).logits, mask) < TOL


def test_electra_model_parity_and_export(tmp_path):
    hf_model = make_hf_model("ElectraModel", tmp_path / "hf")
    ours, report = load_hf(str(tmp_path / "hf"))
    assert isinstance(ours, AlbertEncoder) and report["skipped"] == ["pooler"]
    inputs = sample_inputs()
    hf = run_hf(hf_model, inputs)
    assert max_diff(ours(inputs)["sequence_output"], hf.last_hidden_state,
                    inputs["padding_mask"]) < TOL
    save_hf(ours, str(tmp_path / "back"), model_type="electra")
    reloaded = transformers.ElectraModel.from_pretrained(str(tmp_path / "back")).eval()
    np.testing.assert_allclose(run_hf(reloaded, inputs).last_hidden_state.numpy(),
                               hf.last_hidden_state.numpy(), atol=TOL)


def test_shared_layers_do_not_export_as_electra(tmp_path):
    from albert_keras.config import ConfigError
    from albert_keras.presets import get_preset

    encoder = AlbertEncoder(get_preset("albert_tiny", vocab_size=99))
    with pytest.raises(ConfigError, match="ELECTRA shares no weights"):
        save_hf(encoder, str(tmp_path / "x"), model_type="electra")
