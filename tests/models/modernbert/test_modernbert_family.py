"""ModernBERT as a family: its presets, and its HF task classes read and
written both ways, against transformers on the same random weights."""

import keras
import numpy as np
import pytest
import torch
import transformers

from albert_keras import Backbone
from albert_keras.convert import load_checkpoint
from albert_keras.convert import save_hf
from albert_keras.families import family_of
from albert_keras.models.encoder_settings import EncoderSettings
from albert_keras.models.modernbert.modernbert_encoder import ModernBertEncoder
from albert_keras.saving import load_model
from albert_keras.saving import save_model
from tests.models.modernbert.test_modernbert_parity import BASE
from tests.models.modernbert.test_modernbert_parity import _batch

LABELS = {0: "dull", 1: "bright", 2: "odd"}
FIELDS = {**BASE, "local_attention": 4, "classifier_bias": True, "norm_bias": True}


def _hf(tmp_path, cls_name, name="hf", **fields):
    """A random transformers ``cls_name`` folder (biases and norms moved
    away from 0 and 1) and the model."""
    torch.manual_seed(0)
    config = transformers.ModernBertConfig(**{**FIELDS, **fields}, attn_implementation="eager")
    model = getattr(transformers, cls_name)(config).eval()
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    folder = str(tmp_path / name)
    model.save_pretrained(folder)
    return folder, model


def _inputs(ids, mask):
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}


def _classifier_logits(hf, ids, mask):
    with torch.no_grad():
        return hf(input_ids=torch.tensor(ids, dtype=torch.long),
                  attention_mask=torch.tensor(mask)).logits.numpy()


def test_the_presets_build_modernbert_encoders():
    encoder = Backbone.from_preset("modernbert_tiny")
    assert isinstance(encoder, ModernBertEncoder)
    assert family_of(encoder.config).name == "modernbert"
    assert encoder.config.num_hidden_layers == 4 and encoder.config.vocab_size == 50368
    dropped = EncoderSettings(dropout=0.2).config_of(encoder.config)
    assert (dropped.embedding_dropout, dropped.attention_dropout, dropped.mlp_dropout) == \
        (0.2, 0.2, 0.2)


def test_a_sequence_classifier_reads_and_writes_as_transformers(tmp_path):
    folder, hf = _hf(tmp_path, "ModernBertForSequenceClassification", num_labels=3,
                     id2label=LABELS, label2id={v: k for k, v in LABELS.items()})
    ours, _ = load_checkpoint(folder)
    assert ours.task_spec["labels"] == ["dull", "bright", "odd"]
    ids, mask = _batch()
    want = _classifier_logits(hf, ids, mask)
    got = keras.ops.convert_to_numpy(ours(_inputs(ids, mask))["logits"])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.abs(want).max() > 0.05  # a head that does something
    # out again: transformers reads our folder to the same logits and labels
    save_hf(ours, str(tmp_path / "out"))
    back = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(tmp_path / "out"), attn_implementation="eager").eval()
    assert type(back).__name__ == "ModernBertForSequenceClassification"
    assert back.config.id2label == LABELS
    np.testing.assert_allclose(_classifier_logits(back, ids, mask), want, atol=1e-5)


def test_a_masked_lm_reads_and_writes_as_transformers(tmp_path):
    folder, hf = _hf(tmp_path, "ModernBertForMaskedLM", decoder_bias=True)
    ours, report = load_checkpoint(folder)
    assert hasattr(ours, "mlm_head") and ours.sop_head is None and "mlm" in report["loaded"]
    ids, mask = _batch()
    positions = np.array([[1, 5], [2, 16], [0, 8]], "int32")
    with torch.no_grad():
        logits = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                    attention_mask=torch.tensor(mask)).logits.numpy()
    want = np.take_along_axis(logits, positions[:, :, None], axis=1)
    got = ours({**_inputs(ids, mask), "masked_positions": positions})["mlm_logits"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, atol=1e-4, rtol=1e-5)
    # HF's one head: the masked LM's transform is the encoder's pooler (what a
    # classifier fine-tuned from this model starts from), in a .keras file too
    save_model(ours, str(tmp_path / "mlm.keras"))
    again = load_model(str(tmp_path / "mlm.keras"))
    assert again.mlm_head.transform is again.encoder.pooler
    got = again({**_inputs(ids, mask), "masked_positions": positions})["mlm_logits"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, atol=1e-4, rtol=1e-5)
    save_hf(ours, str(tmp_path / "out"))
    back = transformers.AutoModelForMaskedLM.from_pretrained(
        str(tmp_path / "out"), attn_implementation="eager").eval()
    with torch.no_grad():
        again = back(input_ids=torch.tensor(ids, dtype=torch.long),
                     attention_mask=torch.tensor(mask)).logits.numpy()
    real = mask.astype(bool)
    np.testing.assert_allclose(again[real], logits[real], atol=1e-4, rtol=1e-5)


def test_an_encoder_writes_as_modernbert_model(tmp_path):
    encoder = Backbone.from_preset("modernbert_tiny")
    save_hf(encoder, str(tmp_path / "out"))
    back = transformers.AutoModel.from_pretrained(str(tmp_path / "out"),
                                                  attn_implementation="eager").eval()
    assert type(back).__name__ == "ModernBertModel"
    ids, mask = _batch()
    with torch.no_grad():
        want = back(input_ids=torch.tensor(ids, dtype=torch.long),
                    attention_mask=torch.tensor(mask)).last_hidden_state.numpy()
    got = keras.ops.convert_to_numpy(encoder(_inputs(ids, mask))["sequence_output"])
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)


def _task_outputs(model, ids, mask):
    """transformers' task outputs as ours name them."""
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids, dtype=torch.long),
                    attention_mask=torch.tensor(mask))
    if hasattr(out, "start_logits"):
        return {"start_logits": out.start_logits.numpy(), "end_logits": out.end_logits.numpy()}
    return {"logits": out.logits.numpy()}


@pytest.mark.parametrize("cls_name", ["ModernBertForTokenClassification",
                                      "ModernBertForQuestionAnswering"])
def test_token_and_span_heads_read_every_rows_prediction_head(tmp_path, cls_name):
    """transformers puts the prediction head on every row before these
    classifiers; ours do too (``token_rows``), both ways."""
    folder, hf = _hf(tmp_path, cls_name, num_labels=3 if "Token" in cls_name else 2)
    ours, _ = load_checkpoint(folder)
    ids, mask = _batch()
    want = _task_outputs(hf, ids, mask)
    got = ours(_inputs(ids, mask))
    real = mask.astype(bool)
    for name, value in want.items():
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got[name])[real], value[real],
                                   atol=1e-5, err_msg=name)
    save_hf(ours, str(tmp_path / "out"))
    back = getattr(transformers, cls_name).from_pretrained(
        str(tmp_path / "out"), attn_implementation="eager").eval()
    for name, value in _task_outputs(back, ids, mask).items():
        np.testing.assert_allclose(value[real], want[name][real], atol=1e-5, err_msg=name)


def test_a_choice_head_reads_the_pooled_first_row(tmp_path):
    folder, hf = _hf(tmp_path, "ModernBertForMultipleChoice")
    ours, _ = load_checkpoint(folder)
    ids, mask = _batch()  # 3 rows: one question with 3 choices
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(ids[None], dtype=torch.long),
                  attention_mask=torch.tensor(mask[None])).logits.numpy()
    got = ours(_inputs(ids[None], mask[None]))["logits"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, atol=1e-5)


def test_mean_pooling_reads_and_writes_as_transformers(tmp_path):
    """``classifier_pooling: mean``: the head on the mean of the real rows,
    padded rows left out, in the graph and in SiFT's perturbed pass; the
    export computes every row (not ``[CLS]`` alone)."""
    folder, hf = _hf(tmp_path, "ModernBertForSequenceClassification", classifier_pooling="mean",
                     num_labels=3, id2label=LABELS, label2id={v: k for k, v in LABELS.items()})
    ours, _ = load_checkpoint(folder)
    ids, mask = _batch()
    want = _classifier_logits(hf, ids, mask)
    first_row = _classifier_logits(_hf(tmp_path, "ModernBertForSequenceClassification",
                                       name="cls", num_labels=3)[1], ids, mask)
    assert np.abs(want - first_row).max() > 0.05  # the pooling changes the answer
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(_inputs(ids, mask))["logits"]),
                               want, atol=1e-5)
    with ours.encoder.perturbing(lambda e: e):
        perturbed = ours(_inputs(ids, mask))["logits"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(perturbed), want, atol=1e-5)
    assert not ours.reads_only_cls and not ours.encoder.pools_first_row
    save_hf(ours, str(tmp_path / "out"))
    back = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(tmp_path / "out"), attn_implementation="eager").eval()
    assert back.config.classifier_pooling == "mean"
    np.testing.assert_allclose(_classifier_logits(back, ids, mask), want, atol=1e-5)


def test_a_choice_head_pools_by_the_mean_as_transformers(tmp_path):
    folder, hf = _hf(tmp_path, "ModernBertForMultipleChoice", classifier_pooling="mean")
    ours, _ = load_checkpoint(folder)
    ids, mask = _batch()
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(ids[None], dtype=torch.long),
                  attention_mask=torch.tensor(mask[None])).logits.numpy()
    got = ours(_inputs(ids[None], mask[None]))["logits"]
    np.testing.assert_allclose(keras.ops.convert_to_numpy(got), want, atol=1e-5)
    assert not ours.reads_only_cls


def test_a_mean_pooling_encoder_refuses_cls_only():
    from albert_keras.families import preset_config

    config = preset_config("modernbert_tiny", classifier_pooling="mean")
    with pytest.raises(ValueError, match="classifier_pooling 'mean' reads every row"):
        ModernBertEncoder(config, cls_only=True)


# Ettin's encoders by the sizes their names give (jhu-clsp/ettin-encoder-*)
ETTIN_SIZES = {"17m": 17e6, "32m": 32e6, "68m": 68e6, "150m": 150e6, "400m": 400e6, "1b": 1e9}


@pytest.mark.parametrize("size", sorted(ETTIN_SIZES))
def test_the_ettin_presets_have_their_published_sizes(size):
    from albert_keras.presets import get_preset

    config = get_preset(f"ettin_encoder_{size}")
    assert family_of(config).name == "modernbert"
    assert config.global_rope_theta == config.local_rope_theta == 160000.0
    assert config.layer_types[:4] == ["full_attention", "sliding_attention",
                                      "sliding_attention", "full_attention"]
    # the names round the count (with the masked LM's head) to two figures
    count = config.count_parameters()
    assert abs(count / ETTIN_SIZES[size] - 1) < 0.05, count


# Fields of two published Ettin config.json files, as quoted where they were
# copied whole: jhu-clsp/ettin-encoder-32m's inside knowledgator's
# gliner-pii-edge-v1.0 gliner_config.json (its vocab_size there is 50,370:
# GLiNER adds two tokens to the 50,368 rows), -1b's in a GGUF converter's
# table (its rotary base given once, for both layer kinds). No hub is
# reachable here; a test of the files themselves needs them on disk.
PUBLISHED_ETTIN = {
    "32m": dict(hidden_size=384, intermediate_size=576, num_hidden_layers=10,
                num_attention_heads=6, vocab_size=50368, max_position_embeddings=7999,
                global_attn_every_n_layers=3, global_rope_theta=160000.0, local_attention=128,
                local_rope_theta=160000.0, pad_token_id=50283),
    "1b": dict(hidden_size=1792, intermediate_size=3840, num_hidden_layers=28,
               num_attention_heads=28, max_position_embeddings=7999, hidden_activation="gelu",
               norm_eps=1e-5, norm_bias=False, attention_bias=False, mlp_bias=False,
               local_attention=128, global_attn_every_n_layers=3, global_rope_theta=160000.0,
               local_rope_theta=160000.0),
}


@pytest.mark.parametrize("size", sorted(PUBLISHED_ETTIN))
def test_the_ettin_presets_are_their_published_configs(size):
    from albert_keras.models.modernbert.checkpoints import config_from_hf
    from albert_keras.presets import get_preset

    published = config_from_hf(PUBLISHED_ETTIN[size]).to_dict()
    ours = get_preset(f"ettin_encoder_{size}").to_dict()
    assert {k: ours[k] for k in published} == published


@pytest.mark.parametrize("fields", [{}, dict(norm_bias=True, attention_bias=True,
                                             mlp_bias=True, classifier_bias=True)])
def test_the_parameter_formula_counts_the_built_encoder(fields):
    """``albert-keras presets``' count is the built model's (149.0M for
    ModernBERT-base without its head, as published)."""
    from albert_keras.models.modernbert.modernbert_config import ModernBertConfig

    config = ModernBertConfig(**{**BASE, **fields})
    assert config.count_parameters() == ModernBertEncoder(config).count_params()
    assert round(ModernBertConfig().count_parameters(with_pooler=False) / 1e6, 1) == 149.0


def test_a_mixed_precision_encoder_builds_saves_and_loads(tmp_path):
    """What pretraining writes (``mixed_bfloat16``) reads back; its outputs
    stay within bfloat16's rounding of float32's on the same weights."""
    from albert_keras.families import build_backbone
    from albert_keras.families import preset_config

    config = preset_config("modernbert_tiny", vocab_size=120)
    mixed = build_backbone(config, dtype=keras.dtype_policies.get("mixed_bfloat16"))
    save_model(mixed, str(tmp_path / "encoder.keras"))
    again = load_model(str(tmp_path / "encoder.keras"))
    exact = build_backbone(config, dtype="float32")
    exact.set_weights(mixed.get_weights())
    ids, mask = _batch()
    real = mask.astype(bool)
    low = keras.ops.convert_to_numpy(
        keras.ops.cast(again(_inputs(ids, mask))["sequence_output"], "float32"))
    high = keras.ops.convert_to_numpy(exact(_inputs(ids, mask))["sequence_output"])
    assert np.abs(low - high)[real].max() < 0.1 < np.abs(high).max()
