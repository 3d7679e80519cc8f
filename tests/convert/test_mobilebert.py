"""MobileBERT against transformers' own implementation, on random weights:
every layer, the MLM and NSP heads, a sequence classifier, in four layouts,
and our HF folders reloaded by transformers."""

import json

import pytest

from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import load_hf
from albert_keras.convert.hf import save_hf
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from tests.helpers import all_positions
from tests.helpers import make_hf_model
from tests.helpers import relative_max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs

LAYOUTS = {
    # google/mobilebert-uncased in miniature (tests.helpers.MOBILEBERT)
    "published": {},
    "bottleneck_attention": dict(use_bottleneck_attention=True,
                                 key_query_shared_bottleneck=False),
    "no_trigram": dict(trigram_input=False, classifier_activation=True),
    # transformers saves the projection it skips and a zero-wide decoder here
    "no_trigram_embedding_is_hidden": dict(trigram_input=False, embedding_size=32),
    "layer_norm_gelu_one_ffn": dict(normalization_type="layer_norm", hidden_act="gelu",
                                    num_feedforward_networks=1, layer_norm_eps=1e-7),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_pretraining_folder_matches_transformers(layout, tmp_path):
    hf = make_hf_model("MobileBertForPreTraining", tmp_path, **LAYOUTS[layout])
    model, report = load_hf(str(tmp_path))
    assert isinstance(model, EncoderPretrainer) and "mlm" in report["loaded"]
    inputs = sample_inputs()
    theirs = run_hf(hf, inputs)
    ours = model.encoder.encode(inputs)
    mask = inputs["padding_mask"]
    assert len(ours["hidden_states"]) == len(theirs.hidden_states) == 4
    for i, (a, b) in enumerate(zip(ours["hidden_states"], theirs.hidden_states)):
        assert relative_max_diff(a, b, mask) < 1e-5, (layout, i)
    out = model({**inputs, "masked_positions": all_positions(inputs)})
    assert relative_max_diff(out["mlm_logits"], theirs.prediction_logits, mask) < 1e-5
    assert relative_max_diff(out["sop_logits"], theirs.seq_relationship_logits) < 1e-5

    # and back: transformers reads our folder and computes the same logits
    import transformers

    save_hf(model, str(tmp_path / "ours"))
    again, info = transformers.MobileBertForPreTraining.from_pretrained(
        str(tmp_path / "ours"), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    again = again.eval()
    reread = run_hf(again, inputs)
    assert relative_max_diff(reread.prediction_logits, theirs.prediction_logits, mask) < 1e-6
    assert relative_max_diff(reread.seq_relationship_logits, theirs.seq_relationship_logits) < 1e-6


def test_sequence_classifier_and_masked_lm_folders(tmp_path):
    import torch
    import transformers

    hf = make_hf_model("MobileBertForSequenceClassification", tmp_path / "cls", num_labels=3,
                       classifier_activation=True)
    model, _ = load_hf(str(tmp_path / "cls"))
    inputs = sample_inputs()
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                  attention_mask=torch.tensor(inputs["padding_mask"]),
                  token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long)).logits
    assert relative_max_diff(model(inputs)["logits"], want) < 1e-5
    save_hf(model, str(tmp_path / "cls_ours"))
    again = transformers.MobileBertForSequenceClassification.from_pretrained(
        str(tmp_path / "cls_ours")).eval()
    with torch.no_grad():
        reread = again(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"]),
                       token_type_ids=torch.tensor(inputs["segment_ids"],
                                                   dtype=torch.long)).logits
    assert relative_max_diff(reread, want) < 1e-6

    make_hf_model("MobileBertForMaskedLM", tmp_path / "mlm")
    masked, report = load_hf(str(tmp_path / "mlm"))
    assert masked.sop_head is None and "mlm" in report["loaded"]


@pytest.mark.parametrize("cls_name, ours", [
    ("MobileBertForTokenClassification", "TokenTagger"),
    ("MobileBertForQuestionAnswering", "SpanExtractor"),
    ("MobileBertForMultipleChoice", "ChoiceScorer"), ("MobileBertModel", "MobileBertEncoder")])
def test_task_folders_read_as_task_models_on_the_same_encoder(cls_name, ours, tmp_path):
    """(Every head's outputs against transformers: tests/convert/test_hf_task_heads.py.)"""
    hf = make_hf_model(cls_name, tmp_path)
    model, report = load_hf(str(tmp_path))
    assert type(model).__name__ == ours and not report["unused"]
    inputs = sample_inputs()
    base = getattr(hf, "mobilebert", hf)
    theirs = run_hf(base, inputs)
    encoder = getattr(model, "encoder", model)
    assert relative_max_diff(encoder(inputs)["sequence_output"], theirs.last_hidden_state,
                  inputs["padding_mask"]) < 1e-5


def test_unsupported_configs_are_one_line_errors(tmp_path):
    make_hf_model("MobileBertModel", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "normalization_type": "rms"}))
    with pytest.raises(ValueError, match=r"config\.json: normalization_type must be one of"):
        load_hf(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({**config, "rope_theta": 10.0}))
    with pytest.raises(ValueError, match="unsupported MobileBERT config key 'rope_theta'"):
        load_hf(str(tmp_path))


def test_shared_blocks_and_ib_bert_do_not_export_to_hf(tmp_path):
    from albert_keras.families import build_backbone
    from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig

    small = dict(vocab_size=99, hidden_size=32, embedding_size=8, intra_bottleneck_size=16,
                 num_hidden_layers=4, num_attention_heads=4, intermediate_size=24)
    shared = build_backbone(MobileBertConfig(**small, num_hidden_groups=1))
    assert len(shared.blocks) == 1
    with pytest.raises(ConversionError, match="no cross-layer sharing"):
        save_hf(shared, str(tmp_path / "shared"))
    teacher = build_backbone(MobileBertConfig(**small, use_bottleneck_attention=False,
                                              key_query_shared_bottleneck=False))
    with pytest.raises(ConversionError, match="IB-BERT"):
        save_hf(teacher, str(tmp_path / "teacher"))
    assert not (tmp_path / "shared").exists() and not (tmp_path / "teacher").exists()
