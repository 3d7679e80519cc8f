"""ELECTRA's generator + discriminator: shapes, saving, the loss by hand, sharing."""

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.models.pretrainers.electra_pretrainer import ElectraPretrainer
from albert_keras.models.pretrainers.electra_pretrainer import generator_config
from albert_keras.optimizers.optimizer import LayerwiseAdamW
from tests.helpers import TINY
from tests.helpers import encoder_inputs
from tests.helpers import run_model_test

CONFIG = AlbertConfig(**{**TINY, "hidden_size": 32, "num_attention_heads": 4,
                         "intermediate_size": 48})


def electra_inputs(batch, seq):
    inputs = encoder_inputs(batch, seq)
    rng = np.random.default_rng(seq + 1)
    positions = np.stack([rng.choice(np.arange(1, seq - seq // 3), 3, replace=False)
                          for _ in range(batch)])
    weights = np.ones((batch, 3), "float32")
    # one unused prediction slot, as the data pads them: position 0, id 0
    weights[0, -1] = 0.0
    positions[0, -1] = 0
    inputs["masked_positions"] = positions.astype("int32")
    inputs["masked_ids"] = (np.take_along_axis(inputs["token_ids"], positions, 1)
                            * weights).astype("int32")
    inputs["masked_weights"] = weights
    inputs["token_ids"] = inputs["token_ids"].copy()
    for b in range(batch):  # [MASK] (3) where weighed
        inputs["token_ids"][b, positions[b][weights[b] > 0]] = 3
    return inputs


def make(sharing="tied", dtype=None, sop=False, seed=0, rtd_mlm_weight=0.0):
    return ElectraPretrainer(
        AlbertEncoder(CONFIG, dtype=dtype),
        AlbertEncoder(generator_config(CONFIG, 0.25), dtype=dtype),
        embedding_sharing=sharing, sentence_order=sop, seed=seed, rtd_mlm_weight=rtd_mlm_weight)


def test_generator_config_scales_width_heads_and_ffn():
    g = generator_config(AlbertConfig(**{**TINY, "hidden_size": 768, "num_attention_heads": 12,
                                         "intermediate_size": 3072}), 1 / 3)
    assert (g.hidden_size, g.num_attention_heads, g.intermediate_size) == (256, 4, 1024)
    assert g.num_hidden_layers == TINY["num_hidden_layers"]
    assert g.embedding_size == TINY["embedding_size"]


@pytest.mark.parametrize("sharing", ["tied", "gdes", "none"])
def test_electra_pretrainer_model(sharing):
    run_model_test(
        lambda dtype: make(sharing, dtype, sop=True),
        electra_inputs,
        lambda b, s: {"mlm_logits": (b, 3, 60), "rtd_logits": (b, s), "rtd_labels": (b, s),
                      "replaced_ids": (b, s), "sop_logits": (b, 2)},
    )


def test_electra_pretrainer_model_with_discriminator_mlm():
    run_model_test(
        lambda dtype: make("gdes", dtype, rtd_mlm_weight=0.5),
        electra_inputs,
        lambda b, s: {"mlm_logits": (b, 3, 60), "rtd_logits": (b, s), "rtd_labels": (b, s),
                      "replaced_ids": (b, s), "discriminator_mlm_logits": (b, 3, 60)},
    )


def test_discriminator_input_and_labels_by_hand():
    model = make()
    x = electra_inputs(2, 12)
    out = keras.tree.map_structure(keras.ops.convert_to_numpy, model(x))
    original = x["token_ids"].copy()
    for b in range(2):
        w = x["masked_weights"][b] > 0
        original[b, x["masked_positions"][b][w]] = x["masked_ids"][b][w]
    for b in range(2):
        expected = original[b].copy()
        for p in range(3):
            if x["masked_weights"][b, p] > 0:
                expected[x["masked_positions"][b, p]] = out["replaced_ids"][b, x[
                    "masked_positions"][b, p]]
        # only weighed masked positions change, and they hold vocabulary ids
        np.testing.assert_array_equal(out["replaced_ids"][b], expected)
    labels = (out["replaced_ids"] != original) & (x["padding_mask"] > 0)
    np.testing.assert_array_equal(out["rtd_labels"], labels.astype("int32"))


def _log_softmax_picked(logits, ids):
    logits = logits.astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return np.take_along_axis(log_probs, ids[..., None], -1)[..., 0]


def _loss_on_a_batch(model):
    """``(x, the model's loss, its outputs as numpy)`` on a fixed batch."""
    x = electra_inputs(3, 10)
    y = {k: x[k] for k in ("masked_ids", "masked_weights")}
    y["sop_label"] = np.zeros((3,), "int32")
    y_pred = model(x)
    loss = float(model.compute_loss(x=x, y=y, y_pred=y_pred))
    return x, loss, keras.tree.map_structure(keras.ops.convert_to_numpy, y_pred)


def _reference_terms(x, out):
    """Numpy's generator CE over weighed masked slots and sigmoid CE over
    real tokens, labels rebuilt from the inputs and ``replaced_ids``."""
    w = x["masked_weights"]
    mlm = -(_log_softmax_picked(out["mlm_logits"], x["masked_ids"]) * w).sum() / (w.sum() + 1e-5)
    original = x["token_ids"].copy()
    for b in range(len(w)):
        keep = w[b] > 0
        original[b, x["masked_positions"][b][keep]] = x["masked_ids"][b][keep]
    labels = (out["replaced_ids"] != original).astype("float64")
    p = 1 / (1 + np.exp(-out["rtd_logits"].astype("float64")))
    ce = -(labels * np.log(p) + (1 - labels) * np.log(1 - p))
    rtd = (ce * x["padding_mask"]).sum() / (x["padding_mask"].sum() + 1e-5)
    return mlm, rtd


def test_rtd_loss_equals_numpy_reference():
    """The objective's loss against a hand computation on the same outputs:
    ``mlm + 50 * rtd``."""
    x, loss, out = _loss_on_a_batch(make(seed=3))
    mlm, rtd = _reference_terms(x, out)
    assert loss == pytest.approx(mlm + 50.0 * rtd, rel=1e-5)
    assert rtd > 0 and mlm > 0


@pytest.mark.parametrize("sharing", ["tied", "gdes"])
def test_discriminator_mlm_loss_equals_numpy_reference(sharing):
    """With ``rtd_mlm_weight`` the discriminator decodes its masked rows with
    its own word table (under gdes the stop-gradient generator table plus
    the residual) and the loss gains ``weight x`` its CE; both by hand."""
    model = make(sharing, seed=5, rtd_mlm_weight=0.5)
    if sharing == "gdes":  # a residual that is not zero, so the sum matters
        model.encoder.token_embedding.embeddings.assign(np.random.default_rng(0).normal(
            0, 0.05, model.encoder.token_embedding.embeddings.shape).astype("float32"))
    x, loss, out = _loss_on_a_batch(model)

    # the discriminator's logits: its last layer at the masked rows, the
    # head's transform, then the folded word table
    enc = model.encoder
    table = keras.ops.convert_to_numpy(model._discriminator_table())
    emb = enc.embeddings(out["replaced_ids"], x["segment_ids"], token_table=table)
    sequence = keras.ops.convert_to_numpy(enc.transformer(emb, x["padding_mask"])[-1])
    rows = np.take_along_axis(sequence, x["masked_positions"][..., None], 1)
    head = model.discriminator_mlm_head
    hidden = keras.ops.convert_to_numpy(head.layer_norm(head.dense(rows)))
    logits = hidden @ table.T + keras.ops.convert_to_numpy(head.output_bias)
    np.testing.assert_allclose(out["discriminator_mlm_logits"], logits, atol=1e-4)

    w = x["masked_weights"]
    mlm, rtd = _reference_terms(x, out)
    recovered = -(_log_softmax_picked(logits, x["masked_ids"]) * w).sum() / (w.sum() + 1e-5)
    assert loss == pytest.approx(mlm + 50.0 * rtd + 0.5 * recovered, rel=1e-5)
    assert recovered > 0


def test_discriminator_mlm_gradient_reaches_the_discriminator_only_under_gdes():
    """Under gdes the discriminator's MLM loss, like its RTD loss, trains the
    residual and never the generator's table."""
    import tensorflow as tf

    model = make("gdes", rtd_mlm_weight=1.0)
    x = electra_inputs(2, 12)
    y = {"masked_ids": x["masked_ids"], "masked_weights": x["masked_weights"]}
    tables = [model.generator.token_embedding.embeddings.value,
              model.encoder.token_embedding.embeddings.value]
    with tf.GradientTape() as tape:
        loss = model.pretraining_losses(x, y, model(x, training=True))[
            "discriminator_masked_lm_loss"]
    gen, disc = tape.gradient(loss, tables)
    assert gen is None or float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(gen)))) == 0.0
    assert float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(disc)))) > 0


def test_sampling_follows_the_generator_distribution():
    """Samples, not argmax: with a flat generator many tokens are drawn and
    some equal the original (labelled original)."""
    model = make(seed=1)
    x = electra_inputs(2, 12)
    drawn = set()
    for _ in range(20):
        out = model(x)
        drawn |= set(keras.ops.convert_to_numpy(out["replaced_ids"])[
            0, x["masked_positions"][0, :2]].tolist())
    assert len(drawn) > 10


@pytest.mark.parametrize("sharing", ["tied", "gdes", "none"])
def test_word_table_sharing(sharing):
    model = make(sharing)
    x = electra_inputs(2, 12)
    y = {"masked_ids": x["masked_ids"], "masked_weights": x["masked_weights"],
         "sop_label": np.zeros((2,), "int32")}
    gen_table = model.generator.token_embedding.embeddings
    disc_table = model.encoder.token_embedding.embeddings
    trainable = {id(v) for v in model.trainable_variables}
    if sharing == "tied":
        assert model.mlm_head.token_embedding is model.encoder.token_embedding
        assert id(gen_table) not in trainable  # never read
    else:
        assert id(gen_table) in trainable and id(disc_table) in trainable

    import tensorflow as tf

    def grads(loss_part):
        with tf.GradientTape() as tape:
            y_pred = model(x, training=True)
            losses = model.pretraining_losses(x, y, y_pred)
            loss = losses[loss_part]
        g = tape.gradient(loss, [gen_table.value, disc_table.value])
        return [0.0 if t is None else float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(t))))
                for t in g]

    gen_from_mlm, disc_from_mlm = grads("masked_lm_loss")
    gen_from_rtd, disc_from_rtd = grads("rtd_loss")
    if sharing == "gdes":
        # DeBERTaV3: the generator's table hears only the MLM loss, the
        # discriminator's residual only the RTD loss
        assert gen_from_mlm > 0 and gen_from_rtd == 0.0
        assert disc_from_rtd > 0 and disc_from_mlm == 0.0
    elif sharing == "tied":
        assert disc_from_mlm > 0 and disc_from_rtd > 0
    else:
        assert gen_from_mlm > 0 and gen_from_rtd == 0.0
        assert disc_from_rtd > 0 and disc_from_mlm == 0.0


def test_gdes_standalone_encoder_folds_in_the_table():
    model = make("gdes")
    model.encoder.token_embedding.embeddings.assign(
        np.full(model.encoder.token_embedding.embeddings.shape, 0.5, "float32"))
    standalone = model.standalone_encoder()
    assert isinstance(standalone, AlbertEncoder) and standalone is not model.encoder
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(standalone.token_embedding.embeddings),
        keras.ops.convert_to_numpy(model.generator.token_embedding.embeddings) + 0.5,
        rtol=1e-6)
    x = electra_inputs(2, 12)
    # the discriminator's own forward pass, with the folded table
    emb = model.encoder.embeddings(x["token_ids"], x["segment_ids"],
                                   token_table=model._discriminator_table())
    ours = model.encoder.transformer(emb, x["padding_mask"])[-1]
    theirs = standalone({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours),
                               keras.ops.convert_to_numpy(theirs["sequence_output"]),
                               atol=1e-5)


def test_mismatched_generator_is_refused():
    other = AlbertConfig(**{**TINY, "embedding_size": 12})
    with pytest.raises(ValueError, match="embedding width"):
        ElectraPretrainer(AlbertEncoder(CONFIG), AlbertEncoder(other))


def _toy_batches(rng, n, seq=16):
    """Originals use ids 5..29 only; 3 positions per row are masked."""
    ids = rng.integers(5, 30, (n, seq))
    ids[:, 0] = 2
    positions = np.stack([rng.choice(np.arange(1, seq), 3, replace=False) for _ in range(n)])
    x = {"token_ids": ids.astype("int32"), "segment_ids": np.zeros_like(ids, "int32"),
         "padding_mask": np.ones_like(ids, "int32"), "masked_positions": positions.astype("int32"),
         "masked_ids": np.take_along_axis(ids, positions, 1).astype("int32"),
         "masked_weights": np.ones((n, 3), "float32")}
    x["token_ids"] = ids.copy().astype("int32")
    np.put_along_axis(x["token_ids"], positions, 3, 1)
    return x, {"masked_ids": x["masked_ids"], "masked_weights": x["masked_weights"]}


@pytest.mark.parametrize("sharing", ["tied", "gdes"])
def test_discriminator_learns_through_fit(sharing):
    """The whole path (sampling, labels, tables, head, loss, fit) learns: with
    a near-uniform generator (temperature 1000) more than half the
    replacements are ids the originals never use, and the discriminator
    must learn to flag them within a few dozen steps. A label misaligned
    with its token, or a gradient that does not reach the discriminator,
    keeps the AUC at 0.5."""
    keras.utils.set_random_seed(0)
    config = AlbertConfig(**{**TINY, "embedding_size": 32, "hidden_size": 64,
                             "num_hidden_layers": 2, "num_hidden_groups": 1,
                             "inner_group_num": 1, "num_attention_heads": 4,
                             "intermediate_size": 128})
    model = ElectraPretrainer(AlbertEncoder(config),
                                    AlbertEncoder(generator_config(config, 0.25)),
                                    embedding_sharing=sharing, temperature=1000.0)
    model.compile(optimizer=LayerwiseAdamW(learning_rate=1e-3, weight_decay=0.0))
    rng = np.random.default_rng(0)
    x, y = _toy_batches(rng, 1536)
    held_out, _ = _toy_batches(rng, 256)
    before = model.predict(held_out, verbose=0)
    model.fit(x, y, batch_size=64, epochs=2, verbose=0)
    after = model.predict(held_out, verbose=0)
    auc = []
    for out in (before, after):
        metric = keras.metrics.AUC(from_logits=True, num_thresholds=1000)
        metric.update_state(out["rtd_labels"].ravel(), out["rtd_logits"].ravel())
        auc.append(float(metric.result()))
    assert after["rtd_labels"].mean() > 0.15  # the generator really replaces
    assert auc[0] < 0.6 and auc[1] > 0.8, auc
