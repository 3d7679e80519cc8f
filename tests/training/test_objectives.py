"""The MLM-only (RoBERTa) and replaced-token-detection (ELECTRA) objectives,
end to end: pretrain -> model folder -> fine-tuning's encoder."""

import warnings

import keras
import numpy as np
import pytest

from albert_keras.saving import load_model
from albert_keras.sources.model_source import ModelSource
from albert_keras.training.pretrain import PretrainConfig
from albert_keras.training.pretrain import pretrain
from tests.helpers import SMALL


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


def _config(**fields):
    return PretrainConfig(model_overrides=SMALL, batch_size=8, total_steps=4, steps_per_epoch=2,
                          warmup_steps=1, eval_steps=1, steps_per_execution=2,
                          precision="float32", **fields)


def test_mlm_objective_has_no_sentence_task(data_dir, tmp_path):
    out = tmp_path / "mlm"
    metrics = pretrain(data_dir, str(out), _config(objective="mlm"))
    assert metrics["objective"] == "mlm" and "sop_accuracy" not in metrics
    model = load_model(str(out / "pretrainer.keras"))
    # the held-out numbers are the saved model's on the eval split, counted
    # here by Keras' own metric and loss
    from albert_keras.data.reader import pretraining_dataset
    from albert_keras.training.mlm_sop import split_features

    accuracy = keras.metrics.SparseCategoricalAccuracy()
    losses, weights = [], []
    for batch in pretraining_dataset(data_dir, "eval", batch_size=16, shuffle=False,
                                     repeat=False, drop_remainder=False, verify=False):
        x, y = split_features(batch)
        logits = model(x, training=False)["mlm_logits"]
        accuracy.update_state(y["masked_ids"], logits, sample_weight=y["masked_weights"])
        losses.append(keras.ops.convert_to_numpy(keras.losses.sparse_categorical_crossentropy(
            y["masked_ids"], logits, from_logits=True)))
        weights.append(keras.ops.convert_to_numpy(y["masked_weights"]))
    losses, weights = np.concatenate(losses), np.concatenate(weights)
    np.testing.assert_allclose(metrics["masked_lm_accuracy"], float(accuracy.result()), atol=1e-6)
    np.testing.assert_allclose(metrics["masked_lm_loss"],
                               (losses * weights).sum() / weights.sum(), rtol=1e-4)
    assert metrics["masked_tokens"] == int(weights.sum())
    assert model.sop_head is None and "sop_logits" not in model.output
    assert "sop" not in (out / "metrics.csv").read_text().splitlines()[0]


# gdes is the path with the most to get wrong (the folded table); tied and
# none are covered by the model tests and the HF export test.
@pytest.mark.parametrize("sharing", ["gdes"])
def test_rtd_objective_writes_the_discriminator_as_the_encoder(data_dir, tmp_path, sharing):
    out = tmp_path / sharing
    metrics = pretrain(data_dir, str(out), _config(
        objective="rtd", embedding_sharing=sharing, rtd_sop=True, learning_rate=1e-2))
    assert metrics["objective"] == "rtd"
    for key in ("rtd_accuracy", "rtd_auc", "masked_lm_accuracy", "replaced_fraction"):
        assert 0 <= metrics[key] <= 1, key
    # most masked tokens are replaced by an untrained generator's samples
    assert metrics["replaced_fraction"] > 0.05
    header = (out / "metrics.csv").read_text().splitlines()[0]
    for name in ("rtd_accuracy", "rtd_loss", "masked_lm_accuracy", "sop_accuracy"):
        assert name in header
    pretrainer = load_model(str(out / "pretrainer.keras"))
    assert type(pretrainer).__name__ == "ElectraPretrainer"
    assert type(load_model(str(out / "discriminator.keras"))).__name__ == "TokenDiscriminator"
    generator = load_model(str(out / "generator.keras"))
    assert generator.sop_head is None and generator.config.hidden_size == SMALL["hidden_size"] // 4
    assert pretrainer.generator.config.hidden_size == SMALL["hidden_size"] // 4
    encoder = ModelSource(str(out)).encoder()
    assert encoder.config.hidden_size == SMALL["hidden_size"]
    table = keras.ops.convert_to_numpy(encoder.token_embedding.embeddings)
    expected = keras.ops.convert_to_numpy(pretrainer._discriminator_table())
    np.testing.assert_allclose(table, expected, atol=1e-6)
    if sharing == "gdes":  # the folded table is not the stored residual
        residual = keras.ops.convert_to_numpy(pretrainer.encoder.token_embedding.embeddings)
        assert np.abs(table - residual).max() > 1e-3

    # fill-mask reads the generator
    from albert_keras.drivers.inference import fill_mask
    top = fill_mask(str(out), ["the [MASK] of"], top_k=3)
    assert len(top) == 1 and len(top[0][0]) == 3
    assert abs(sum(c["probability"] for c in top[0][0])) <= 1.0

    # continued pretraining from the folder keeps generator and heads
    again = pretrain(data_dir, str(tmp_path / "again"), _config(
        objective="rtd", embedding_sharing=sharing, rtd_sop=True, init=str(out)))
    assert again["steps"] == 4


def test_rtd_with_a_discriminator_mlm_loss_end_to_end(data_dir, tmp_path):
    out = tmp_path / "rtd_mlm"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = pretrain(data_dir, str(out), _config(objective="rtd", rtd_mlm_weight=0.5))
    # the discriminator and the generator read no pooler: Keras' warning is noise
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert 0 <= metrics["discriminator_masked_lm_accuracy"] <= 1
    header = (out / "metrics.csv").read_text().splitlines()[0]
    for name in ("discriminator_masked_lm_loss", "discriminator_masked_lm_accuracy"):
        assert name in header
    pretrainer = load_model(str(out / "pretrainer.keras"))
    assert pretrainer.rtd_mlm_weight == 0.5
    assert pretrainer.discriminator_mlm_head is not None
    assert ModelSource(str(out)).encoder().config.hidden_size == SMALL["hidden_size"]


def test_span_masked_data_trains_with_dynamic_masking(corpus_file, spm_path, tmp_path):
    """``--masking span`` is recorded in the manifest and the dynamic masks
    of training follow it (SpanBERT + RoBERTa's MLM-only objective)."""
    import json

    from albert_keras.data.create import create_pretraining_data
    from albert_keras.data.data_config import DataConfig
    from albert_keras.data.reader import pretraining_dataset

    data = tmp_path / "span"
    create_pretraining_data([corpus_file], spm_path, str(data), DataConfig(
        max_seq_length=32, max_predictions=8, dupe_factor=1, eval_fraction=0.1,
        masking="span"))
    assert json.load(open(data / "manifest.json"))["config"]["masking"] == "span"
    batch = next(iter(pretraining_dataset(str(data), batch_size=16, dynamic_masking=True)))
    assert float(batch["masked_weights"].numpy().sum()) > 0
    metrics = pretrain(str(data), str(tmp_path / "run"), _config(objective="mlm"))
    assert metrics["steps"] == 4


MIRRORED_RTD = """
import sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from albert_keras.training.pretrain import PretrainConfig, pretrain
m = pretrain(sys.argv[1], sys.argv[2], PretrainConfig(
    objective="rtd", model_overrides={"hidden_size": 32, "num_attention_heads": 4,
    "intermediate_size": 64, "num_hidden_layers": 2, "embedding_size": 16,
    "max_position_embeddings": 64}, batch_size=8, total_steps=4, steps_per_epoch=2,
    warmup_steps=1, eval_steps=1, precision="float32", strategy="mirrored"))
print("STEPS", m["steps"], "REPLACED", m["replaced_fraction"])
"""


@pytest.mark.sampled(keep=2, group="tf_distribute")  # CI: 2 of the tf.distribute runs per commit
def test_rtd_under_mirrored_strategy_on_two_logical_cpus(data_dir, tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "CI": "true", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run([sys.executable, "-c", MIRRORED_RTD, data_dir,
                             str(tmp_path / "run")],
                            capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr[-3000:]
    assert "STEPS 4" in result.stdout
    assert float(result.stdout.split("REPLACED")[1].split()[0]) > 0.01


def _continued(source, **fields):
    """What ``pretrain --init`` builds from ``source``: a new rtd model on the
    source's folded discriminator, then ``continue_from``."""
    from albert_keras import AlbertEncoder
    from albert_keras.training.rtd import Rtd

    folded = source.standalone_encoder()
    encoder = AlbertEncoder(folded.config)
    encoder.set_weights(folded.get_weights())
    objective = Rtd(PretrainConfig(objective="rtd", **fields))
    model = objective.build_model(encoder, keras.optimizers.SGD(), 1)
    objective.continue_from(source, model)
    return model


def _same(a, b):
    return all(np.array_equal(keras.ops.convert_to_numpy(x), keras.ops.convert_to_numpy(y))
               for x, y in zip(a.weights, b.weights, strict=True))


def _distinct(source):
    """``source`` with every weight drawn anew, so that none equals a fresh
    model's and a copy can be told from a weight left as built."""
    rng = np.random.default_rng(0)
    for v in source.weights:
        v.assign(rng.normal(0, 0.1, v.shape).astype(v.dtype))
    return source


def test_continued_rtd_keeps_the_generator_when_the_heads_change():
    """``--init`` an rtd folder with ``--rtd-mlm-weight``: a new head, and
    the generator, the discriminator and the shared heads carried over."""
    from tests.models.pretrainers.test_electra_pretrainer import make

    source = _distinct(make("gdes", seed=1))
    model = _continued(source, embedding_sharing="gdes", rtd_mlm_weight=1.0)
    assert model.discriminator_mlm_head is not None
    for part in ("generator", "encoder", "rtd_head"):
        assert _same(getattr(model, part), getattr(source, part)), part
    assert _same(model.mlm_head.dense, source.mlm_head.dense)


@pytest.mark.parametrize("sharing", ["gdes", "none"])
def test_continued_rtd_under_another_sharing_keeps_the_discriminators_table(sharing):
    """A tied run continued as gdes or none: the discriminator starts from
    the tied table (not from the source's unused generator table added to
    it), and the generator decodes with that table too under gdes."""
    from tests.models.pretrainers.test_electra_pretrainer import make

    source = _distinct(make("tied", seed=1))
    model = _continued(source, embedding_sharing=sharing)
    tied = keras.ops.convert_to_numpy(source.encoder.token_embedding.embeddings)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model._discriminator_table()), tied,
                               atol=1e-6)
    if sharing == "gdes":
        np.testing.assert_allclose(keras.ops.convert_to_numpy(model._generator_table()), tied,
                                   atol=1e-6)
    assert _same(model.rtd_head, source.rtd_head)
    assert _same(model.mlm_head.dense, source.mlm_head.dense)


def test_continued_gdes_rtd_with_another_generator_size_keeps_the_folded_table():
    """A new generator size under gdes: the generator starts afresh on the
    discriminator's folded table, and the source's residual (which belongs
    with its old generator's table) is not added on top."""
    from tests.models.pretrainers.test_electra_pretrainer import make

    source = _distinct(make("gdes", seed=1))
    folded = keras.ops.convert_to_numpy(source._discriminator_table())
    model = _continued(source, embedding_sharing="gdes", generator_size=0.5)
    assert model.generator.config.hidden_size != source.generator.config.hidden_size
    np.testing.assert_allclose(keras.ops.convert_to_numpy(model._discriminator_table()), folded,
                               atol=1e-6)
    assert _same(model.rtd_head, source.rtd_head)


def test_rtd_summary_says_when_the_discriminator_learned_nothing():
    """A run whose discriminator answers "original" for every token (held-out
    AUC 0.5, as --recipe deberta_v3 ended on the built-in corpus) says so."""
    from albert_keras.training.rtd import Rtd

    metrics = {"rtd_accuracy": 0.8688, "replaced_fraction": 0.1312, "rtd_auc": 0.5,
               "masked_lm_accuracy": 0.2186, "most_frequent_token_accuracy": 0.0638}
    dead = Rtd(PretrainConfig(objective="rtd")).summary(metrics)
    assert "The discriminator has not learned (rtd_auc 0.50" in dead
    alive = Rtd(PretrainConfig(objective="rtd")).summary({**metrics, "rtd_auc": 0.83})
    assert "has not learned" not in alive and "rtd_auc 0.8300" in alive
