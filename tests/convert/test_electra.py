"""ELECTRA checkpoints: HF ElectraModel, ElectraForPreTraining (discriminator)
and ElectraForMaskedLM (generator) in and out, at the ALBERT tolerance."""

import json

import numpy as np
import pytest
import transformers

from albert_keras.convert import load_hf
from albert_keras.convert import save_hf
from albert_keras.models.albert.albert_encoder import AlbertEncoder
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.models.pretrainers.token_discriminator import TokenDiscriminator
from albert_keras.saving import load_model
from albert_keras.saving import save_model
from tests.helpers import all_positions
from tests.helpers import make_hf_model
from tests.helpers import max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs

TOL = 1e-5
SHAPES = {"E != H (ELECTRA-small)": dict(embedding_size=16),
          "E == H": dict(embedding_size=32)}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_discriminator_parity_and_round_trip(tmp_path, shape):
    hf_model = make_hf_model("ElectraForPreTraining", tmp_path / "hf", **SHAPES[shape])
    ours, report = load_hf(str(tmp_path / "hf"))
    assert isinstance(ours, TokenDiscriminator)
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
    assert isinstance(ours, EncoderPretrainer)
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
    from albert_keras.config_dicts import ConfigError
    from albert_keras.presets import get_preset

    encoder = AlbertEncoder(get_preset("albert_tiny", vocab_size=99))
    with pytest.raises(ConfigError, match="ELECTRA shares no weights"):
        save_hf(encoder, str(tmp_path / "x"), model_type="electra")


@pytest.mark.parametrize("sharing", ["none", "tied", "gdes"])
def test_rtd_pretrainer_halves_export_to_hf_electra(tmp_path, sharing):
    """An ELECTRA pair from HF folders, put into our RTD pretrainer, comes
    back out as ElectraForPreTraining and ElectraForMaskedLM that transformers
    loads and that give the original models' logits."""
    from albert_keras.models.pretrainers.electra_pretrainer import ElectraPretrainer

    hf_disc = make_hf_model("ElectraForPreTraining", tmp_path / "d", seed=1)
    hf_gen = make_hf_model("ElectraForMaskedLM", tmp_path / "g", seed=2,
                           hidden_size=16, num_attention_heads=2, intermediate_size=24)
    disc, _ = load_hf(str(tmp_path / "d"))
    gen, _ = load_hf(str(tmp_path / "g"))
    gen_table = gen.encoder.token_embedding.embeddings.numpy()
    disc_table = disc.encoder.token_embedding.embeddings.numpy()
    model = ElectraPretrainer(disc.encoder, gen.encoder, embedding_sharing=sharing)
    model.mlm_head.dense.set_weights(gen.mlm_head.dense.get_weights())
    model.mlm_head.layer_norm.set_weights(gen.mlm_head.layer_norm.get_weights())
    model.mlm_head.output_bias.assign(gen.mlm_head.output_bias)
    model.rtd_head.set_weights(disc.rtd_head.get_weights())
    expected_gen, expected_disc = hf_gen, hf_disc
    if sharing == "tied":  # one table, the discriminator's: the generator reads it
        hf_gen.electra.embeddings.word_embeddings.weight.data[:] = \
            hf_gen.electra.embeddings.word_embeddings.weight.data.new_tensor(disc_table)
    if sharing == "gdes":  # generator owns its table; discriminator = it + residual
        model.encoder.token_embedding.embeddings.assign(disc_table - gen_table)
    inputs = sample_inputs()
    mask = inputs["padding_mask"]
    save_hf(model.standalone_discriminator(), str(tmp_path / "d_back"))
    save_hf(model.standalone_generator(), str(tmp_path / "g_back"), model_type="electra")
    d_back = transformers.ElectraForPreTraining.from_pretrained(str(tmp_path / "d_back")).eval()
    g_back = transformers.ElectraForMaskedLM.from_pretrained(str(tmp_path / "g_back")).eval()
    assert max_diff(run_hf(d_back, inputs).logits, run_hf(expected_disc, inputs).logits,
                    mask) < TOL
    assert max_diff(run_hf(g_back, inputs).logits, run_hf(expected_gen, inputs).logits,
                    mask) < TOL
    # and our generator's own logits at every position are those
    logits = model.generator_logits({**inputs, "masked_positions": all_positions(inputs)})
    assert max_diff(logits, run_hf(g_back, inputs).logits, mask) < TOL


def test_discriminator_trains_step_for_step_like_hf(tmp_path):
    """Same weights, same batches, Adam on both sides: our discriminator and
    HF's ElectraForPreTraining (its own loss) follow one loss curve. Forward
    parity alone would not catch a gradient that goes astray in training.
    The ids repeat many times per batch and nothing clips, so an optimizer
    that squares an embedding gradient slice by slice (Keras' Adam does)
    fails here."""
    import tensorflow as tf
    import torch

    from albert_keras.optimizers.optimizer import LayerwiseAdamW

    hf_model = make_hf_model("ElectraForPreTraining", tmp_path / "hf",
                             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    ours, _ = load_hf(str(tmp_path / "hf"))
    hf_model.train()
    rng = np.random.default_rng(0)
    torch_opt = torch.optim.Adam(hf_model.parameters(), lr=1e-3, eps=1e-8)
    keras_opt = LayerwiseAdamW(learning_rate=1e-3, weight_decay=0.0, epsilon=1e-8)
    variables = [v for v in ours.trainable_variables if "pooler" not in v.path]

    @tf.function
    def keras_step(inputs, labels):
        with tf.GradientTape() as tape:
            logits = ours(inputs, training=True)["rtd_logits"]
            mask = tf.cast(inputs["padding_mask"], "float32")
            loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
            loss = tf.reduce_sum(loss * mask) / tf.reduce_sum(mask)
        grads = tape.gradient(loss, variables)
        keras_opt.apply(grads, variables)  # slices stay slices, as in fit
        return loss

    ours_losses, hf_losses = [], []
    for step in range(30):
        inputs = sample_inputs()
        inputs["token_ids"] = (rng.integers(5, 11, inputs["token_ids"].shape)
                               * inputs["padding_mask"]).astype("int32")
        labels = (rng.random(inputs["token_ids"].shape) < 0.2).astype("float32")
        out = hf_model(input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
                       attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
                       token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
                       labels=torch.tensor(labels))
        torch_opt.zero_grad()
        out.loss.backward()
        torch_opt.step()
        hf_losses.append(out.loss.item())
        ours_losses.append(float(keras_step(inputs, tf.constant(labels))))
    # The curve moves (so the comparison means something) and both follow it.
    assert abs(hf_losses[-1] - hf_losses[0]) > 0.05
    np.testing.assert_allclose(ours_losses, hf_losses, atol=2e-4)
    inputs = sample_inputs()
    hf_model.eval()
    assert max_diff(ours(inputs)["rtd_logits"], run_hf(hf_model, inputs).logits,
                    inputs["padding_mask"]) < 2e-4
