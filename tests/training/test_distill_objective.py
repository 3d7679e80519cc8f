"""``pretrain --objective distill``: MobileBERT's progressive knowledge transfer
run by the pretraining driver, stage by stage, resumable at any epoch."""

import csv
import json
import os
import shutil

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from albert_keras.cli import main
from albert_keras.sources.folder_writing import write_pretraining_folder
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.training.callbacks import latest_checkpoint
from albert_keras.training.distill_objective import copy_embeddings
from albert_keras.training.pretrain import pretrain
from albert_keras.training.pretrain_config import PretrainConfig
from tests.helpers import SMALL

STUDENT = {"embedding_size": 16, "hidden_size": 16, "num_hidden_layers": 2,
           "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, spm_path):
    """A 4-layer, 32-wide pretraining folder on the data's tokenizer."""
    keras.utils.set_random_seed(3)
    tokenizer = SentencePiece(spm_path)
    config = AlbertConfig(**{**SMALL, "num_hidden_layers": 4},
                          vocab_size=tokenizer.vocabulary_size)
    folder = str(tmp_path_factory.mktemp("teacher"))
    write_pretraining_folder(folder, EncoderPretrainer(AlbertEncoder(config)), tokenizer)
    return folder


def _config(teacher, **changes):
    return PretrainConfig(**{
        "objective": "distill", "teacher": teacher, "model_overrides": STUDENT,
        "batch_size": 8, "total_steps": 10, "layer_stage_steps": 4, "steps_per_epoch": 2,
        "steps_per_execution": 2, "warmup_steps": 2, "learning_rate": 1e-3,
        "optimizer": "adamw", "eval_steps": 1, "precision": "float32",
        "deterministic": True, **changes})


def _checkpoint(folder):
    path, epoch = latest_checkpoint(os.path.join(folder, "checkpoints"))
    return epoch, keras.saving.load_model(path)


def _layer_weights(model, depth):
    """The student's variables that student layer ``depth`` (0: the embeddings) runs."""
    encoder = model.student.encoder
    paths = {p for p, d in encoder.variables_by_depth().items() if d == depth}
    return {v.path: keras.ops.convert_to_numpy(v) for v in encoder.weights if v.path in paths}


def _assert_same(a, b, same=True):
    for path in a:
        equal = np.array_equal(a[path], b[path])
        assert equal == same, f"{path}: {'changed' if same else 'unchanged'}"


@pytest.mark.sampled(keep=2, group="pretrain_cli_runs")  # CI: 2 of the pretraining command-line runs per commit
def test_stages_train_their_layers_and_a_stopped_run_resumes_to_the_same_student(
        data_dir, teacher, tmp_path):
    """Stopped after epoch 1 (inside layer stage 1) and after epoch 2 (its
    end), then run to the end: the student equals one uninterrupted run's.
    Inside layer stage 1 the student's second layer does not move; the
    final folder holds the student alone, its held-out masked LM beside the
    teacher's."""
    whole = pretrain(data_dir, tmp_path / "whole", _config(teacher))
    assert whole["steps"] == 10 and whole["stage"] == 2, whole
    assert 0 <= whole["teacher_masked_lm_accuracy"] <= 1

    out = tmp_path / "stopped"
    pretrain(data_dir, out, _config(teacher, max_minutes=1e-9))  # stops after epoch 1
    epoch, first = _checkpoint(out)
    assert (epoch, first.stage) == (1, 0)
    pretrain(data_dir, out, _config(teacher, max_minutes=1e-9))  # after epoch 2: stage 1 ends
    epoch, second = _checkpoint(out)
    assert (epoch, second.stage) == (2, 0)
    _assert_same(_layer_weights(first, 2), _layer_weights(second, 2))  # layer 2 waits
    _assert_same(_layer_weights(first, 1), _layer_weights(second, 1), same=False)
    resumed = pretrain(data_dir, out, _config(teacher))
    assert resumed["steps"] == 10 and resumed["steps_this_call"] == 6

    for name in ("encoder.keras", "pretrainer.keras"):
        a, b = (keras.saving.load_model(str(f / name)) for f in (tmp_path / "whole", out))
        assert a.config.hidden_size == STUDENT["hidden_size"] if name == "encoder.keras" \
            else isinstance(a, EncoderPretrainer)
        for va, vb in zip(a.weights, b.weights):
            np.testing.assert_allclose(keras.ops.convert_to_numpy(va),
                                       keras.ops.convert_to_numpy(vb), atol=1e-6,
                                       err_msg=f"{name}: {va.path}")
    with open(out / "metrics.csv", newline="") as f:
        assert len(list(csv.DictReader(f))) == 5  # one row per epoch, over three calls


def test_the_layer_stage_moves_the_student_toward_the_teacher(data_dir, teacher, tmp_path):
    """After the run, the student's first layer is closer to its teacher
    layer (the feature-map term) than the untrained student's is: a bound a
    stage that trained nothing, or the wrong layer, would miss."""
    import tensorflow as tf

    from albert_keras.models.distillers.progressive_distiller import ProgressiveDistiller
    from albert_keras.models.distillers.progressive_distiller import feature_map_loss
    from albert_keras.training.datasets import train_pipeline
    from albert_keras.training.objectives import get_objective

    cfg = _config(teacher, total_steps=22, layer_stage_steps=10, learning_rate=3e-3)
    pretrain(data_dir, tmp_path / "run", cfg)
    _, trained = _checkpoint(tmp_path / "run")
    fresh = EncoderPretrainer(AlbertEncoder(trained.student.encoder.config), sentence_order=False)
    untrained = ProgressiveDistiller(trained.teacher, fresh, layer_map=trained.layer_map)
    with open(os.path.join(data_dir, "manifest.json"), encoding="utf-8") as f:
        objective = get_objective("distill", json.load(f), cfg)
    x = next(iter(train_pipeline(tf.distribute.InputContext(), data_dir, cfg, objective)))

    def distance(model):
        out = model.with_stage(0)(x)
        return float(feature_map_loss(out["student_feature"], out["teacher_feature"],
                                      x["padding_mask"]))

    assert distance(trained) < 0.7 * distance(untrained)


def test_the_command_line_runs_it_and_refuses_what_does_not_apply(data_dir, teacher,
                                                                   tmp_path, capsys):
    args = ["pretrain", "--data", data_dir, "--objective", "distill", "--teacher", teacher,
            "--model-overrides", json.dumps(STUDENT), "--batch-size", "8",
            "--steps-per-epoch", "2", "--layer-stage-steps", "2", "--precision", "float32",
            "--eval-steps", "1"]
    assert main([*args, "--steps", "6", "--out", str(tmp_path / "cli")]) == 0
    printed = capsys.readouterr().out
    assert "the teacher's" in printed and "6 steps" in printed, printed
    assert not os.path.exists(tmp_path / "cli" / "checkpoints" / "best.keras")

    for extra, message in [
        (["--steps", "4"], "--steps 4: the 2 layer stages take"),
        (["--steps", "6", "--layer-stage-steps", "3"], "a multiple of --steps-per-epoch"),
        (["--steps", "6", "--distill-layer-map", "4"], "names 1 teacher layers for the 2"),
        (["--steps", "6", "--distill-layer-map", "2,5"], "the teacher has 4 layers"),
    ]:
        out = tmp_path / "bad"
        assert main([*args, *extra, "--out", str(out)]) != 0
        assert message in capsys.readouterr().err
        assert not os.path.exists(out)  # nothing half-written
    assert main(["pretrain", "--data", data_dir, "--teacher", teacher, "--steps", "2",
                 "--out", str(tmp_path / "bad")]) != 0
    assert "--teacher: only --objective distill reads it" in capsys.readouterr().err


def test_a_teacher_without_a_masked_lm_head_is_refused(data_dir, teacher, tmp_path, capsys):
    encoder_only = tmp_path / "encoder_only"
    shutil.copytree(teacher, encoder_only)
    os.remove(encoder_only / "pretrainer.keras")
    assert main(["pretrain", "--data", data_dir, "--objective", "distill", "--teacher",
                 str(encoder_only), "--layer-stage-steps", "2", "--steps-per-epoch", "2",
                 "--steps", "6", "--out", str(tmp_path / "run")]) != 0
    assert "has no masked-LM head" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "run")


def test_the_students_embeddings_start_from_the_teachers_when_they_match():
    def encoder(seed, **shape):
        keras.utils.set_random_seed(seed)
        return AlbertEncoder(AlbertConfig(**{**SMALL, "vocab_size": 50, **shape}))

    teacher, student = encoder(0), encoder(1, num_hidden_layers=1)
    assert copy_embeddings(teacher, student)
    for a, b in zip(teacher.embeddings.weights, student.embeddings.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(a),
                                      keras.ops.convert_to_numpy(b))
    narrow = encoder(2, embedding_size=8)
    before = [keras.ops.convert_to_numpy(w) for w in narrow.embeddings.weights]
    assert not copy_embeddings(teacher, narrow)
    for a, b in zip(before, narrow.embeddings.weights):
        np.testing.assert_array_equal(a, keras.ops.convert_to_numpy(b))


def test_a_mobilebert_pretraining_folder_is_written(tmp_path, spm_path):
    """The folder ``pretrain`` writes for a MobileBERT student (its config.json
    is the family's own; writing it once failed for every family but ALBERT's)."""
    from albert_keras import MobileBertConfig
    from albert_keras import MobileBertEncoder

    tokenizer = SentencePiece(spm_path)
    config = MobileBertConfig(vocab_size=tokenizer.vocabulary_size, hidden_size=16,
                              embedding_size=8, intra_bottleneck_size=8, num_hidden_layers=1,
                              num_attention_heads=2, intermediate_size=16)
    write_pretraining_folder(str(tmp_path), EncoderPretrainer(MobileBertEncoder(config)),
                             tokenizer)
    with open(tmp_path / "config.json", encoding="utf-8") as f:
        assert json.load(f) == json.loads(json.dumps(config.to_dict()))
    encoder = keras.saving.load_model(str(tmp_path / "encoder.keras"))
    assert encoder.config.intra_bottleneck_size == 8
