"""Distillation end to end on tiny files: every task, unlabelled rows (a
file and the embedded corpus), the student's folder, and the errors."""

import csv
import json
import os
import shutil

import pytest

from albert_keras.cli import main
from albert_keras.drivers import inference
from albert_keras.drivers.distill import distill
from albert_keras.drivers.distill_config import DistillConfig
from albert_keras.drivers.finetune import finetune
from albert_keras.tasks.finetune_config import FinetuneConfig
from tests.helpers import assert_layer_decay_slows

QUICK = dict(epochs=1, batch_size=8, sequence_length=32, learning_rate=1e-3)
STUDENT = dict(embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
               intermediate_size=32, max_position_embeddings=64)
QUICK_STUDENT = dict(student_overrides=STUDENT, epochs=3, batch_size=8, learning_rate=3e-3)

FILES = {"classify": "cls", "tag": "tag", "qa": "qa", "choice": "choice"}


@pytest.fixture(scope="module")
def teachers(init_folder, task_files, tmp_path_factory):
    """One fine-tuned teacher per task (and a regression one)."""
    folder = tmp_path_factory.mktemp("teachers")
    out = {}
    for task, prefix in FILES.items():
        out[task] = str(folder / task)
        finetune(init_folder, task_files[f"{prefix}_train"], None, out[task],
                 FinetuneConfig(task=task, **QUICK))
        _sharpen(out[task])
    rows = [r for r in csv.DictReader(open(task_files["cls_train"], encoding="utf-8"))]
    path = folder / "reg.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows([r["text"], 1.0 if r["label"] == "fox" else -1.0] for r in rows)
    out["regression"] = str(folder / "regression")
    out["regression_file"] = str(path)
    finetune(init_folder, str(path), None, out["regression"],
             FinetuneConfig(task="classify", regression=True, **QUICK))
    _sharpen(out["regression"], 5.0)
    return out


def _sharpen(folder, factor=30.0):
    """Scales the teacher's output layer so that its outputs are confident
    and vary with the input: a tiny model fine-tuned for seconds is near
    uniform, and matching a uniform teacher would test nothing."""
    from albert_keras.saving import load_model
    from albert_keras.saving import save_model

    path = os.path.join(folder, "model.keras")
    model = load_model(path)
    kernel = [w for w in model.weights if len(w.shape) == 2][-1]
    kernel.assign(kernel * factor)
    save_model(model, path, overwrite=True)


def _soft_losses(folder):
    with open(os.path.join(folder, "metrics.csv"), encoding="utf-8") as f:
        return [float(r["soft_loss"]) for r in csv.DictReader(f)]


def test_classify_student_is_an_ordinary_task_folder(teachers, task_files, tmp_path):
    out = str(tmp_path / "student")
    cfg = DistillConfig(alpha=0.5, temperature=2.0, **{**QUICK_STUDENT, "epochs": 6})
    metrics = distill(teachers["classify"], task_files["cls_train"], task_files["cls_eval"],
                      out, cfg, unlabeled=task_files["cls_eval"])
    assert sorted(os.listdir(out)) == [
        "metrics.csv", "metrics.json", "model.keras", "spm.model", "task.json",
        "tokenizer_kind.json", "train_config.json"]
    # the unlabelled file's labels are not used; its rows are
    assert metrics["labelled_rows"] == 48 and metrics["unlabelled_rows"] == 16
    assert "teacher_accuracy" in metrics
    # the student is the smaller architecture asked for
    config = json.load(open(os.path.join(out, "train_config.json")))
    assert config["student_overrides"] == STUDENT and config["unlabeled"].endswith("cls_eval.csv")
    # it learns the teacher's outputs
    losses = _soft_losses(out)
    assert len(losses) == 6 and losses[-1] < 0.7 * losses[0]
    # evaluate and predict read it as any fine-tuned folder
    again = inference.evaluate(out, task_files["cls_eval"])
    assert again["accuracy"] == pytest.approx(metrics["accuracy"])
    assert len(inference.predict(out, task_files["cls_eval"])) == 16


@pytest.mark.parametrize("task", ["tag", "qa", "choice", "regression"])
@pytest.mark.sampled(keep=2)  # CI: 2 of these sets per commit
def test_every_task_distils(task, teachers, task_files, tmp_path):
    prefix = FILES.get(task, "cls")
    train = teachers["regression_file"] if task == "regression" else task_files[f"{prefix}_train"]
    out = str(tmp_path / "student")
    cfg = DistillConfig(alpha=1.0, temperature=1.0, **{**QUICK_STUDENT, "epochs": 5})
    metrics = distill(teachers[task], train, None, out, cfg,
                      unlabeled=None if task == "regression" else task_files[f"{prefix}_eval"],
                      validation_path=train)
    losses = _soft_losses(out)
    assert all(loss == loss for loss in losses) and losses[-1] < losses[0]
    # the epoch is chosen on the validation file, every task
    assert metrics["selected_on"] == "validation" and len(metrics["validation_history"]) == 5
    assert metrics["unlabelled_rows"] >= (0 if task == "regression" else 1)
    spec = json.load(open(os.path.join(out, "task.json")))
    assert spec == json.load(open(os.path.join(teachers[task], "task.json")))
    if task != "regression":
        scores = inference.evaluate(out, task_files[f"{prefix}_eval"])
        assert scores  # the student folder scores like a fine-tuned one


def test_a_held_out_share_chooses_the_students_epoch(teachers, task_files, tmp_path):
    cfg = DistillConfig(validation_split=0.25, **{**QUICK_STUDENT, "epochs": 2})
    metrics = distill(teachers["classify"], task_files["cls_train"], task_files["cls_eval"],
                      str(tmp_path / "student"), cfg)
    # the 12 held-out rows are neither taught nor trained on
    assert metrics["labelled_rows"] == 36
    assert metrics["selected_on"] == "validation" and len(metrics["validation_history"]) == 2


def test_corpus_rows_for_classify_and_tag(teachers, task_files, tmp_path):
    cfg = DistillConfig(max_unlabeled=40, **{**QUICK_STUDENT, "epochs": 1})
    metrics = distill(teachers["classify"], task_files["cls_train"], None,
                      str(tmp_path / "cls"), cfg, unlabeled="corpus")
    assert metrics["unlabelled_rows"] == 40
    metrics = distill(teachers["tag"], task_files["tag_train"], None,
                      str(tmp_path / "tag"), cfg, unlabeled="corpus")
    assert 1 <= metrics["unlabelled_rows"] <= 40
    with pytest.raises(ValueError, match="works for classify without text pairs and for tag"):
        distill(teachers["qa"], task_files["qa_train"], None, str(tmp_path / "qa"), cfg,
                unlabeled="corpus")
    assert not os.path.exists(tmp_path / "qa")


def test_student_from_a_pretrained_folder(teachers, task_files, init_folder, spm_path,
                                          tmp_path):
    out = str(tmp_path / "student")
    cfg = DistillConfig(student_init=init_folder, epochs=1, batch_size=8)
    distill(teachers["classify"], task_files["cls_train"], None, out, cfg)
    model_config = json.load(open(os.path.join(out, "train_config.json")))
    assert model_config["student_init"] == init_folder
    # a pretrained folder with another tokenizer is refused before training
    other = tmp_path / "other"
    shutil.copytree(init_folder, other)
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["a b c d e f g", "h i j k l m n"] * 50),
        model_prefix=str(tmp_path / "o"), vocab_size=30, model_type="unigram",
        hard_vocab_limit=False)
    shutil.copyfile(tmp_path / "o.model", other / "spm.model")
    with pytest.raises(ValueError, match="tokenizer is not the teacher's"):
        distill(teachers["classify"], task_files["cls_train"], None, str(tmp_path / "s2"),
                DistillConfig(student_init=str(other), epochs=1))
    assert not os.path.exists(tmp_path / "s2")


def test_layer_decay_slows_the_students_lower_layers(teachers, task_files, init_folder,
                                                     tmp_path):
    from albert_keras.sources.model_source import ModelSource

    tuned = {}
    for decay in (1.0, 0.01):
        out = str(tmp_path / f"decay{decay}")
        cfg = DistillConfig(student_init=init_folder, layer_decay=decay, epochs=1, batch_size=8,
                            learning_rate=1e-3)
        distill(teachers["classify"], task_files["cls_train"], None, out, cfg)
        tuned[decay] = ModelSource(out).encoder(dtype="float32")
        assert json.load(open(os.path.join(out, "train_config.json")))["layer_decay"] == decay
    assert_layer_decay_slows(ModelSource(init_folder).encoder(dtype="float32"), tuned)
    with pytest.raises(ValueError, match=r"layer_decay must be in \(0, 1\]"):
        DistillConfig(layer_decay=0).validate()


def test_distill_command_and_its_errors(teachers, task_files, init_folder, tmp_path, capsys):
    out = str(tmp_path / "student")
    code = main(["distill", "--teacher", teachers["classify"], "--train",
                 task_files["cls_train"], "--eval", task_files["cls_eval"], "--out", out,
                 "--student-overrides", json.dumps(STUDENT), "--epochs", "1",
                 "--batch-size", "8", "--temperature", "3", "--alpha", "0.8"])
    assert code == 0
    printed = capsys.readouterr().out
    assert '"accuracy"' in printed and f"model folder: {out}" in printed
    # where the student trains, in one line, as every training command says it
    assert "1 CPU device(s) on tensorflow, 1 replica(s): global batch 8, precision " \
        "float32" in printed.splitlines()
    config = json.load(open(os.path.join(out, "train_config.json")))
    assert config["temperature"] == 3.0 and config["alpha"] == 0.8
    # a teacher that is not fine-tuned: one line naming the folder, exit 2
    code = main(["distill", "--teacher", init_folder, "--train", task_files["cls_train"],
                 "--out", str(tmp_path / "bad")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and init_folder in err
    assert not os.path.exists(tmp_path / "bad")
    with pytest.raises(SystemExit) as stopped:  # refused where argparse reads it
        main(["distill", "--teacher", teachers["classify"], "--train",
              task_files["cls_train"], "--out", str(tmp_path / "bad"), "--alpha", "1.5"])
    assert stopped.value.code == 2
    assert "argument --alpha: must be in [0, 1]" in capsys.readouterr().err
    code = main(["distill", "--teacher", teachers["classify"], "--train",
                 task_files["cls_train"], "--out", str(tmp_path / "bad"), "--layer-epochs",
                 "1", "--layer-map", "1-2"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "'1-2' is not STUDENT:TEACHER" in err
    code = main(["distill", "--teacher", teachers["classify"], "--train",
                 task_files["cls_train"], "--out", str(tmp_path / "bad"), "--layer-epochs",
                 "1", "--layer-map", "5:1", "--student-overrides", json.dumps(STUDENT)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "outside the student's 0..1" in err
    assert not os.path.exists(tmp_path / "bad")


@pytest.mark.parametrize("task", ["classify", "choice"])
def test_layer_transfer_stage(task, teachers, task_files, tmp_path):
    """TinyBERT's first stage: the student's layers learn the teacher's (its
    hidden-state and attention losses fall), then the soft targets; the
    choice task's [B, C, S] rows are flattened for the encoders."""
    prefix = FILES[task]
    out = str(tmp_path / "student")
    cfg = DistillConfig(layer_epochs=8, **{**QUICK_STUDENT, "epochs": 1})
    metrics = distill(teachers[task], task_files[f"{prefix}_train"], task_files[f"{prefix}_eval"],
                      out, cfg)
    assert metrics["layer_map"][0] == [0, 0] and len(metrics["layer_map"]) == 2
    assert metrics["layer_hidden_loss_last"] < 0.8 * metrics["layer_hidden_loss_first"]
    assert metrics["layer_attention_loss_last"] < metrics["layer_attention_loss_first"]
    with open(os.path.join(out, "layers.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 8 and {"hidden_loss", "attention_loss"} <= set(rows[0])
    assert inference.evaluate(out, task_files[f"{prefix}_eval"])


def test_a_student_distils_with_sift(teachers, task_files, tmp_path):
    """SiFT on the student: the term is in its loss (above the soft loss
    alone, with alpha 1), and the student still learns the teacher's outputs."""
    out = str(tmp_path / "student")
    cfg = DistillConfig(alpha=1.0, temperature=2.0, adversarial="sift", adversarial_noise=0.3,
                        **{**QUICK_STUDENT, "epochs": 6})
    distill(teachers["classify"], task_files["cls_train"], None, out, cfg)
    with open(os.path.join(out, "metrics.csv"), encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert all(float(r["loss"]) > float(r["soft_loss"]) + 1e-5 for r in rows)
    losses = _soft_losses(out)
    assert losses[-1] < 0.7 * losses[0]
    assert json.load(open(os.path.join(out, "train_config.json")))["adversarial"] == "sift"
