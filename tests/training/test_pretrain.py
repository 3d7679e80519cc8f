import dataclasses
import functools
import json
import os
import subprocess
import sys
import time

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from albert_keras.data.reader import pretraining_dataset
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.saving import load_model
from albert_keras.training.mlm_sop import split_features
from albert_keras.training.pretrain import PretrainConfig
from albert_keras.training.pretrain import TrainingError
from albert_keras.training.pretrain import pretrain
from tests.helpers import SMALL


def _last_checkpoint(folder):
    """The newest ``ckpt-*.keras`` of a run folder."""
    import glob

    return sorted(glob.glob(os.path.join(folder, "checkpoints", "ckpt-*.keras")))[-1]


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


def test_fit_steps_default_strategy_and_model_folder(data_dir, tmp_path):
    out = tmp_path / "run"
    metrics = pretrain(data_dir, str(out), PretrainConfig(
        model_overrides=SMALL, batch_size=8, total_steps=6, steps_per_epoch=3,
        warmup_steps=2, eval_steps=2, steps_per_execution=2))
    assert metrics["steps"] == 6
    assert 0 <= metrics["masked_lm_accuracy"] <= 1 and 0 <= metrics["sop_accuracy"] <= 1
    assert metrics["most_frequent_token_accuracy"] > 0
    for name in ("pretrainer.keras", "encoder.keras", "spm.model", "config.json",
                 "metrics.json", "metrics.csv", "train_config.json"):
        assert (out / name).is_file(), name
    assert (out / "checkpoints" / "ckpt-000002.keras").is_file()
    assert (out / "checkpoints" / "best.keras").is_file()
    assert list((out / "logs").iterdir())
    header = (out / "metrics.csv").read_text().splitlines()[0]
    for name in ("masked_lm_accuracy", "masked_lm_loss", "sop_accuracy", "sop_loss"):
        assert name in header
    # the model folder is for using the model: no optimizer state; the
    # checkpoint, which resumes the run, keeps it
    loaded = keras.saving.load_model(str(out / "pretrainer.keras"))
    assert getattr(loaded, "optimizer", None) is None
    resumable = keras.saving.load_model(str(out / "checkpoints" / "ckpt-000002.keras"))
    assert type(resumable.optimizer).__name__ == "LayerwiseLamb"
    assert AlbertConfig.from_json_file(str(out / "config.json")).hidden_size == 32


def test_steps_that_are_not_whole_epochs_stop_on_the_step(data_dir, tmp_path, caplog):
    # 7 steps in epochs of 3: the third epoch ends after one step, where the
    # learning-rate schedule ends, and a rerun finds the run finished.
    out = str(tmp_path / "run")
    config = PretrainConfig(model_overrides=SMALL, batch_size=8, total_steps=7,
                            steps_per_epoch=3, warmup_steps=2, eval_steps=1,
                            steps_per_execution=3)
    with caplog.at_level("INFO", logger="albert_keras"):
        metrics = pretrain(data_dir, out, config)
    assert metrics["steps"] == 7
    assert "steps_per_execution set to 1" in caplog.text
    # what it found, said before training (a Colab TPU runtime's chips on JAX)
    assert "1 CPU device(s) on tensorflow, 1 replica(s): global batch 8, precision " \
        in caplog.text
    assert os.path.isfile(os.path.join(out, "checkpoints", "ckpt-000003.keras"))
    model = load_model(os.path.join(out, "checkpoints", "ckpt-000003.keras"))
    assert int(model.optimizer.iterations.numpy()) == 7
    assert float(model.optimizer.learning_rate) == 0.0
    before = model.get_weights()
    again = pretrain(data_dir, out, config)
    assert again["steps"] == 7
    for a, b in zip(before, load_model(os.path.join(out, "pretrainer.keras")).get_weights()):
        np.testing.assert_array_equal(a, b)


def test_overfitting_one_batch(data_dir):
    keras.utils.set_random_seed(0)
    batch = next(iter(pretraining_dataset(data_dir, batch_size=8, shuffle=False)))
    x, y = split_features(batch)
    vocab = json.load(open(os.path.join(data_dir, "manifest.json")))["vocab_size"]
    config = AlbertConfig(vocab_size=vocab, **SMALL)
    model = EncoderPretrainer(AlbertEncoder(config), sop_dropout=0.0)
    model.compile(optimizer=make_optimizer("adamw", learning_rate=3e-3, total_steps=2000,
                                           warmup_steps=10, weight_decay=0.0))
    first = model.evaluate(x, y, verbose=0, return_dict=True)
    history = model.fit(x, y, epochs=300, verbose=0, batch_size=8)
    last = {k: v[-1] for k, v in history.history.items()}
    assert last["loss"] < 0.1 * first["loss"]
    assert last["masked_lm_accuracy"] > 0.98 and last["sop_accuracy"] == 1.0


def test_nan_loss_stops_with_a_message(data_dir, tmp_path):
    with pytest.raises(TrainingError, match="NaN at step"):
        pretrain(data_dir, str(tmp_path / "run"), PretrainConfig(
            model_overrides=SMALL, batch_size=8, total_steps=40, steps_per_epoch=20,
            warmup_steps=0, learning_rate=1e30, clip_norm=0.0, precision="float32",
            eval_steps=0, steps_per_execution=1))
    assert not (tmp_path / "run" / "pretrainer.keras").exists()


@pytest.mark.sampled(keep=2, group="pretrain_cli_runs")  # CI: 2 of the pretraining command-line runs per commit
def test_resume_refuses_changed_settings_and_accepts_safe_ones(data_dir, tmp_path):
    cfg = PretrainConfig(model_overrides=SMALL, batch_size=8, total_steps=4, steps_per_epoch=2,
                         warmup_steps=1, eval_steps=0, steps_per_execution=1,
                         precision="float32", learning_rate=8e-3)
    out = str(tmp_path / "run")
    pretrain(data_dir, out, cfg)
    changed = dataclasses.replace(cfg, learning_rate=1e-3, total_steps=6)
    with pytest.raises(TrainingError) as error:
        pretrain(data_dir, out, changed)
    message = str(error.value)
    assert "\n" not in message and message.startswith(f"{out} holds a run started with other")
    # from Python the settings are named as arguments
    assert "learning_rate 0.008 (now 0.001)" in message and "total_steps 4 (now 6)" in message
    assert "max_minutes" in message  # says what may change
    # a safe change resumes (nothing is left to train) and is recorded
    metrics = pretrain(data_dir, out, dataclasses.replace(cfg, max_minutes=30.0))
    assert json.load(open(os.path.join(out, "train_config.json")))["max_minutes"] == 30.0
    length = json.load(open(os.path.join(data_dir, "manifest.json")))["config"]["max_seq_length"]
    assert metrics["steps"] == 4 and metrics["train_tokens"] == 4 * 8 * length


def _run(args, backend=None, **kwargs):
    env = {**os.environ, "CI": "true", "TF_CPP_MIN_LOG_LEVEL": "3"}
    if backend:
        env["KERAS_BACKEND"] = backend
    return subprocess.Popen([sys.executable, "-m", "albert_keras_cli", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            **kwargs)


def _pretrain_args(data_dir, out, steps, short_data=None, short_steps=0, extra=()):
    short = []
    if short_steps:
        short = ["--short-data", short_data, "--short-seq-length", "16",
                 "--short-seq-fraction", str(short_steps / steps)]
    return ["pretrain", *short, "--data", data_dir,
            "--tokenizer", os.path.join(data_dir, "spm.model"), "--out", out,
            "--model-overrides", json.dumps(SMALL), "--batch-size", "8",
            "--steps", str(steps), "--steps-per-epoch", "2", "--warmup-steps", "2",
            "--eval-steps", "0", "--steps-per-execution", "1", "--deterministic",
            "--precision", "float32", "--seed", "3", *extra]


@pytest.mark.parametrize("short_steps, extra, backend", [
    (0, (), None), (6, (), None),
    # ELECTRA: the generator's sampling state travels in the checkpoint
    (0, ("--objective", "rtd", "--embedding-sharing", "gdes"), None),
    (0, ("--objective", "rtd", "--embedding-sharing", "gdes"), "jax"),
    # torch trains on one device, one step per execution
    (0, (), "torch"),
], ids=["one_phase", "two_phases", "rtd_gdes", "rtd_gdes_jax", "mlm_sop_torch"])
@pytest.mark.sampled(keep=1)  # CI: 1 of these sets per commit
def test_resume_after_kill_matches_an_uninterrupted_run(
    data_dir, short_data_dir, tmp_path, short_steps, extra, backend
):
    # Two phases: the kill lands after step 4, inside the short-sequence
    # phase, so the rerun must skip into the short data and then switch.
    steps = 8
    args = functools.partial(_pretrain_args, data_dir, steps=steps,
                             short_data=short_data_dir, short_steps=short_steps, extra=extra)
    whole = _run(args(str(tmp_path / "whole")), backend)
    output, _ = whole.communicate(timeout=600)
    assert whole.returncode == 0, output

    interrupted = str(tmp_path / "interrupted")
    proc = _run(args(interrupted), backend)
    deadline = time.time() + 300
    ckpt = os.path.join(interrupted, "checkpoints", "ckpt-000002.keras")
    while not os.path.exists(ckpt) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.kill()  # SIGKILL, at whatever point it has reached
    proc.communicate()
    assert os.path.exists(ckpt), "no checkpoint appeared before the kill"
    assert not os.path.exists(os.path.join(interrupted, "pretrainer.keras"))

    again = _run(args(interrupted), backend)
    output, _ = again.communicate(timeout=600)
    assert again.returncode == 0, output
    assert "resuming from" in output

    a = load_model(str(tmp_path / "whole" / "pretrainer.keras"))
    b = load_model(os.path.join(interrupted, "pretrainer.keras"))
    # the step count lives in the checkpoints (the model folder keeps no optimizer)
    a_steps, b_steps = (int(load_model(_last_checkpoint(folder)).optimizer.iterations.numpy())
                        for folder in (str(tmp_path / "whole"), interrupted))
    assert a_steps == b_steps == steps
    for va, vb in zip(a.weights, b.weights):
        np.testing.assert_allclose(va.numpy(), vb.numpy(), atol=1e-6, err_msg=va.path)
    # the resumed run counts the tokens of its first part too
    tokens = [json.load(open(os.path.join(folder, "metrics.json")))["train_tokens"]
              for folder in (str(tmp_path / "whole"), interrupted)]
    assert tokens[0] == tokens[1] > 0


MIRRORED = """
import json, sys
import numpy as np
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from albert_keras.saving import load_model
from albert_keras.training.pretrain import PretrainConfig, pretrain
from albert_keras.training.strategy import make_strategy
assert make_strategy("mirrored").num_replicas_in_sync == 2
weights = []
for strategy in ("auto", "mirrored"):
    out = sys.argv[2] + "-" + strategy
    m = pretrain(sys.argv[1], out, PretrainConfig(
        model_overrides=json.loads(sys.argv[3]), batch_size=8, total_steps=4,
        steps_per_epoch=2, warmup_steps=1, eval_steps=1, steps_per_execution=2,
        precision="float32", learning_rate=1e-2, strategy=strategy))
    weights.append(load_model(out + "/pretrainer.keras").get_weights())
print("STEPS", m["steps"], "SOP", m["sop_accuracy"])
print("MAXDIFF", max(float(np.abs(a - b).max()) for a, b in zip(*weights)))
"""


@pytest.mark.sampled(keep=2, group="tf_distribute")  # CI: 2 of the tf.distribute runs per commit
def test_mirrored_strategy_on_two_logical_cpus_equals_one_device(data_dir, tmp_path):
    # Two replicas of 4 examples must take the steps one device takes on the
    # same 8 (gradient clipping, the MLM normalisation and the batches
    # included). The learning rate is high so that clipping engages.
    env = {**os.environ, "CI": "true", "TF_CPP_MIN_LOG_LEVEL": "3"}
    result = subprocess.run(
        [sys.executable, "-c", MIRRORED, data_dir, str(tmp_path / "run"), json.dumps(SMALL)],
        capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "STEPS 4" in result.stdout
    diff = float(result.stdout.split("MAXDIFF")[1].split()[0])
    assert diff < 1e-5, result.stdout


def test_corrupted_shard_is_named_before_training(data_dir, tmp_path):
    import shutil

    from albert_keras.data.reader import DataError

    copy = tmp_path / "data"
    shutil.copytree(data_dir, copy)
    shard = sorted(p for p in copy.iterdir() if p.name.startswith("train-"))[0]
    shard.write_bytes(shard.read_bytes()[:-7])
    with pytest.raises(DataError, match=f"{shard.name}: corrupted shard"):
        pretrain(str(copy), str(tmp_path / "run"), PretrainConfig(model_overrides=SMALL))


def test_init_continues_from_a_model_folder(data_dir, init_folder, tmp_path):
    out = tmp_path / "continued"
    # Learning rate 0: the saved model must be the init model, heads included.
    pretrain(data_dir, str(out), PretrainConfig(
        init=init_folder, learning_rate=0.0, precision="float32", batch_size=8,
        total_steps=2, steps_per_epoch=2, warmup_steps=1, eval_steps=1,
        steps_per_execution=1))
    source = keras.saving.load_model(os.path.join(init_folder, "pretrainer.keras"))
    result = keras.saving.load_model(str(out / "pretrainer.keras"))
    assert result.encoder.config == source.encoder.config
    assert result.dtype_policy.name == "float32"
    for a, b in zip(source.weights, result.weights):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b), err_msg=a.path)


def test_init_with_another_vocabulary_names_the_model(data_dir, tmp_path):
    other = str(tmp_path / "other.keras")
    AlbertEncoder(AlbertConfig(vocab_size=60, **SMALL)).save(other)
    with pytest.raises(ValueError, match="other.keras: vocabulary of 60 pieces"):
        pretrain(data_dir, str(tmp_path / "run"), PretrainConfig(init=other))


@pytest.mark.sampled(keep=2, group="pretrain_cli_runs")  # CI: 2 of the pretraining command-line runs per commit
def test_two_phases_train_on_short_then_full_sequences(
    data_dir, short_data_dir, tmp_path, monkeypatch
):
    from albert_keras.training import pretrainer as pretrainer_module

    shapes = []  # each phase is trained through Pretrainer.train_phase
    real = pretrainer_module.train_dataset

    def spy(*args):
        ds = real(*args)
        shapes.append(tuple(ds.element_spec[0]["token_ids"].shape))
        return ds

    monkeypatch.setattr(pretrainer_module, "train_dataset", spy)
    metrics = pretrain(data_dir, str(tmp_path / "run"), PretrainConfig(
        model_overrides=SMALL, batch_size=8, total_steps=6, steps_per_epoch=2,
        warmup_steps=1, eval_steps=1, steps_per_execution=2,
        short_seq_data=short_data_dir, short_seq_steps=4))
    assert shapes == [(8, 16), (8, 32)]
    assert metrics["steps"] == 6
    assert metrics["train_tokens"] == 4 * 8 * 16 + 2 * 8 * 32
    # The final evaluation is on the full-length held-out split.
    assert metrics["examples"] == json.load(
        open(os.path.join(data_dir, "manifest.json")))["splits"]["eval"]["examples"]
    csv = (tmp_path / "run" / "metrics.csv").read_text().splitlines()
    assert len(csv) == 1 + 3  # one header, one row per epoch over both phases


def test_two_phases_need_one_tokenizer_and_shorter_sequences(
    data_dir, short_data_dir, tmp_path
):
    import shutil

    copy = tmp_path / "data_16"
    shutil.copytree(short_data_dir, copy)
    with open(copy / "spm.model", "ab") as f:
        # a valid model with other bytes: an unknown field 200 ("another")
        # that SentencePiece skips, so only the comparison of files can tell
        f.write(b"\xc2\x0c\x07another")
    config = dict(model_overrides=SMALL, total_steps=4, steps_per_epoch=2, warmup_steps=1,
                  short_seq_steps=2)
    with pytest.raises(ValueError, match="data_16/spm.model: not the tokenizer of"):
        pretrain(data_dir, str(tmp_path / "run"),
                 PretrainConfig(short_seq_data=str(copy), **config))
    with pytest.raises(ValueError, match="sequences of 32 are not shorter than the 16"):
        pretrain(short_data_dir, str(tmp_path / "run"),
                 PretrainConfig(short_seq_data=data_dir, **config))
    with pytest.raises(ValueError, match="multiple of steps_per_epoch"):
        PretrainConfig(short_seq_data=data_dir, short_seq_steps=3, steps_per_epoch=2).validate()


def test_the_callers_dtype_policy_comes_back_after_a_run(data_dir, tmp_path):
    keras.mixed_precision.set_global_policy("float32")
    metrics = pretrain(data_dir, str(tmp_path / "run"), PretrainConfig(
        model_overrides=SMALL, batch_size=8, total_steps=2, steps_per_epoch=2,
        warmup_steps=1, eval_steps=1, steps_per_execution=1, precision="mixed_bfloat16"))
    assert metrics["precision"] == "mixed_bfloat16"
    assert keras.mixed_precision.global_policy().name == "float32"


@pytest.mark.sampled(keep=2, group="pretrain_cli_runs")  # CI: 2 of the pretraining command-line runs per commit
def test_cli_recipe_main_job_on_a_data_folder(data_dir, tmp_path, capsys):
    from albert_keras.cli import main

    args = _pretrain_args(data_dir, str(tmp_path / "albert"), steps=2)
    assert main(args) == 0
    assert "ALBERT's settings for what is not given" in capsys.readouterr().out
    args = _pretrain_args(data_dir, str(tmp_path / "small_corpus"), steps=2,
                          extra=("--recipe", "small_corpus"))
    assert main(args) == 0
    assert "ALBERT's settings" not in capsys.readouterr().out
    recorded = {}
    for name in ("albert", "small_corpus"):
        recorded[name] = json.loads((tmp_path / name / "train_config.json").read_text())
    # the objective, masking, attention and rate the small-corpus recipe's recipe picks;
    # the flags given (depth, steps, warmup) stay as given
    assert (recorded["albert"]["objective"], recorded["albert"]["mask_rate"],
            recorded["albert"]["learning_rate"]) == ("mlm_sop", None, 8e-3)
    assert (recorded["small_corpus"]["objective"], recorded["small_corpus"]["mask_rate"],
            recorded["small_corpus"]["learning_rate"]) == ("mlm", 0.4, 1.6e-2)
    assert recorded["small_corpus"]["model_overrides"] == {
        **SMALL, "position_bias": "alibi", "alibi_slope_scale": 4.0}
    assert recorded["small_corpus"]["total_steps"] == recorded["albert"]["total_steps"] == 2


@pytest.mark.sampled(keep=2, group="pretrain_cli_runs")  # CI: 2 of the pretraining command-line runs per commit
def test_cli_pretrain_makes_the_short_sequence_data_itself(corpus_file, tmp_path, capsys):
    from albert_keras.cli import main

    out = tmp_path / "run"
    assert main(["pretrain", "--input", corpus_file, "--out", str(out), "--vocab-size", "100",
                 "--max-seq-length", "32", "--max-predictions", "6", "--short-seq-length", "16",
                 "--dupe-factor", "1", "--eval-fraction", "0.1", "--steps", "4",
                 "--steps-per-epoch", "2", "--warmup-steps", "1", "--batch-size", "8",
                 "--eval-steps", "1", "--model-overrides", json.dumps(SMALL)]) == 0
    # The default fraction (0.875 of 4 steps) rounds down to one whole epoch.
    assert "phase 1/2: steps 0-2, sequences of 16" in capsys.readouterr().out
    short = json.loads((out / "data_16" / "manifest.json").read_text())["config"]
    assert (short["max_seq_length"], short["max_predictions"]) == (16, 3)
    assert (out / "data_16" / "spm.model").read_bytes() == (out / "data" / "spm.model").read_bytes()
    assert json.loads((out / "metrics.json").read_text())["train_tokens"] == 2 * 8 * (16 + 32)


JAX_CHILD = r"""
import json, sys
import keras
from albert_keras.training.pretrain import PretrainConfig, pretrain
metrics = pretrain(sys.argv[1], sys.argv[2], PretrainConfig(
    model_overrides=json.loads(sys.argv[4]), batch_size=8, total_steps=4, steps_per_epoch=2,
    warmup_steps=1, eval_steps=1, steps_per_execution=2, strategy=sys.argv[3],
    precision="float32", objective=sys.argv[5]))
# the weights the strategy's layout splits, on an encoder made under it
from albert_keras import AlbertConfig, AlbertEncoder
from albert_keras.training.strategy import KerasDistribution
with KerasDistribution.for_name(sys.argv[3]).scope():
    made = AlbertEncoder(AlbertConfig(vocab_size=100, **json.loads(sys.argv[4])))
sharded = sorted(v.path for v in made.weights if not v.value.sharding.is_fully_replicated)
print("RESULT " + json.dumps({"backend": keras.backend.backend(), "steps": metrics["steps"],
                              "devices": len(keras.distribution.list_devices()),
                              "sharded": sharded}))
"""


@pytest.mark.parametrize("objective", ["mlm_sop", "rtd"])
@pytest.mark.sampled(keep=2, group="jax_torch_runs")  # CI: 2 of the JAX/torch runs per commit
def test_pretrain_on_jax_single_data_and_model_parallel_agree(data_dir, tmp_path, objective):
    """JAX training through keras.distribution, on two (forced) CPU devices:
    data- and model-parallel runs end with the one-device run's weights.
    For ``rtd`` that includes the generator's samples: the sharded program
    draws the same replacements as one device."""
    env = {**os.environ, "KERAS_BACKEND": "jax", "CUDA_VISIBLE_DEVICES": "",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    weights = {}
    for strategy in ("cpu", "data_parallel", "model_parallel"):
        out = tmp_path / strategy
        done = subprocess.run([sys.executable, "-c", JAX_CHILD, data_dir, str(out), strategy,
                               json.dumps(SMALL), objective], env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
        result = json.loads(line[7:])
        sharded = result.pop("sharded")
        assert result == {"backend": "jax", "steps": 4, "devices": 2}
        # model parallel splits the attention and FFN kernels (one shared
        # module of each: 6 kernels); the others split nothing
        assert len(sharded) == (6 if strategy == "model_parallel" else 0), sharded
        encoder = keras.saving.load_model(str(out / "encoder.keras"))  # here: TensorFlow
        weights[strategy] = {v.path: keras.ops.convert_to_numpy(v) for v in encoder.weights}
    for strategy in ("data_parallel", "model_parallel"):
        for path, value in weights["cpu"].items():
            np.testing.assert_allclose(weights[strategy][path], value, atol=2e-5, rtol=0,
                                       err_msg=f"{strategy}: {path}")


TORCH_CHILD = r"""
import json, sys
import keras
from albert_keras.training.pretrain import PretrainConfig, pretrain
from albert_keras.training.strategy import StrategyError
from albert_keras.training.strategy import make_strategy
try:
    make_strategy("data_parallel")
except StrategyError as e:
    print("REFUSED " + str(e))
metrics = pretrain(sys.argv[1], sys.argv[2], PretrainConfig(
    model_overrides=json.loads(sys.argv[3]), batch_size=8, total_steps=4, steps_per_epoch=2,
    warmup_steps=1, eval_steps=1, steps_per_execution=2, precision="float32",
    objective=sys.argv[4], embedding_sharing=sys.argv[5]))
print("RESULT " + json.dumps({"backend": keras.backend.backend(), **metrics}))
"""


@pytest.mark.parametrize("objective, sharing", [("mlm_sop", "tied"), ("rtd", "gdes")])
@pytest.mark.sampled(keep=2, group="jax_torch_runs")  # CI: 2 of the JAX/torch runs per commit
def test_pretrain_on_torch_trains_on_one_device(data_dir, tmp_path, objective, sharing):
    """On torch, which keras.distribution does not cover, pretraining runs on
    one device (one step per call, which Keras' torch trainer requires) and
    the sharded strategies are refused in one line."""
    env = {**os.environ, "KERAS_BACKEND": "torch", "CUDA_VISIBLE_DEVICES": ""}
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-c", TORCH_CHILD, data_dir, str(out),
                           json.dumps(SMALL), objective, sharing], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    refused = next(x for x in lines if x.startswith("REFUSED "))
    assert "needs the JAX backend" in refused and "on torch use auto or cpu" in refused
    metrics = json.loads(next(x for x in lines if x.startswith("RESULT "))[7:])
    assert (metrics["backend"], metrics["steps"], metrics["objective"]) == (
        "torch", 4, objective)
    assert np.isfinite(metrics["masked_lm_loss"])
    # what torch wrote loads and runs here, on TensorFlow
    encoder = keras.saving.load_model(str(out / "encoder.keras"))
    ids = np.array([[2, 10, 11, 12, 3, 0]], "int32")
    outputs = encoder({"token_ids": ids, "segment_ids": np.zeros_like(ids),
                       "padding_mask": ids != 0})
    assert np.isfinite(keras.ops.convert_to_numpy(outputs["sequence_output"])).all()


def test_strategy_names_are_checked_against_the_backend():
    from albert_keras.training.strategy import StrategyError
    from albert_keras.training.strategy import make_strategy

    with pytest.raises(StrategyError, match="needs the JAX backend"):
        make_strategy("data_parallel")


def test_mask_rate_masks_more_in_training_and_keeps_the_held_out_masks(data_dir):
    import tensorflow as tf

    from albert_keras.data.reader import read_manifest
    from albert_keras.training.datasets import eval_dataset
    from albert_keras.training.datasets import train_dataset
    from albert_keras.training.objectives import get_objective

    manifest = read_manifest(data_dir)
    strategy = tf.distribute.get_strategy()
    slots = {}
    for rate in (None, 0.45):
        config = PretrainConfig(mask_rate=rate, batch_size=4, eval_steps=1)
        objective = get_objective("mlm", manifest, config)
        train, _ = next(iter(train_dataset(strategy, data_dir, config, objective, 0)))
        held_out, _ = next(iter(eval_dataset(strategy, data_dir, manifest, config, objective)))
        slots[rate] = (train["masked_positions"].shape[1],
                       held_out["masked_positions"].numpy())
    # 5 slots at 15% (the data's) become 15 at 45%; the held-out batch is the
    # stored one either way.
    assert (slots[None][0], slots[0.45][0]) == (5, 15)
    np.testing.assert_array_equal(slots[None][1], slots[0.45][1])
    with pytest.raises(ValueError, match="mask_rate needs dynamic_masking"):
        PretrainConfig(mask_rate=0.3, dynamic_masking=False).validate()
    with pytest.raises(ValueError, match="mask_rate must be in"):
        PretrainConfig(mask_rate=1.0).validate()


def test_fit_reads_untuned_pipelines_and_exactly_eval_steps_batches(data_dir):
    # Untuned: dropping an autotuned iterator (Keras does, before each
    # validation and when fit returns) waited for tf.data's tuning thread,
    # for up to 18 s, in three of six validations of a main-job run.
    import tensorflow as tf

    from albert_keras.data.reader import read_manifest
    from albert_keras.training.datasets import eval_pipeline
    from albert_keras.training.datasets import train_pipeline
    from albert_keras.training.objectives import get_objective

    config = PretrainConfig(batch_size=4, eval_steps=3)
    objective = get_objective("mlm", read_manifest(data_dir), config)
    context = tf.distribute.InputContext()
    held_out = eval_pipeline(context, data_dir, config, objective)
    train = train_pipeline(context, data_dir, config, objective)
    assert held_out.options().autotune.enabled is False
    assert train.options().autotune.enabled is False
    assert sum(1 for _ in held_out) == 3
    features, labels = next(iter(train))
    assert features["token_ids"].shape[0] == 4 and "masked_ids" in labels
