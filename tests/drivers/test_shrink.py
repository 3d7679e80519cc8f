"""``shrink``: two tiny students in two modes from the tiny teacher, end to
end; the recommendation is the smallest file within the tolerance of the
teacher's float accuracy, it runs in MediaPipe with the same labels, and a
second run resumes instead of starting over."""

import json
import os

import pytest

from albert_keras.drivers.shrink import ShrinkError
from albert_keras.drivers.shrink import shrink
from albert_keras.drivers.shrink_config import ShrinkConfig

TINY = ShrinkConfig(students=("bert_tiny", "albert_tiny"), modes=("none", "dynamic"),
                    student_overrides={"num_hidden_layers": 2, "hidden_size": 16, "embedding_size": 8,
                                       "num_attention_heads": 2, "intermediate_size": 32},
                    epochs=2, runs=3, tolerance=0.5)


@pytest.fixture(scope="module")
def run(classifier_folder, task_files, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("shrink") / "run")
    result = shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], out, TINY)
    return out, result


def test_every_candidate_is_measured_and_the_smallest_kept_file_recommended(run):
    out, result = run
    rows = result["rows"]
    assert {(r["candidate"], r["mode"]) for r in rows} == {
        (c, m) for c in ("teacher", "avg_embedding", "bert_tiny", "albert_tiny")
        for m in ("none", "dynamic")}
    table = json.load(open(os.path.join(out, "shrink.json")))
    teacher = table["teacher_accuracy"]
    assert teacher == next(r["tflite_accuracy"] for r in rows
                           if (r["candidate"], r["mode"]) == ("teacher", "none"))
    for r in rows:
        assert r["validated"], r
        assert r["examples"] == 16  # every eval row
        assert r["size_mb"] > 0 and r["median_ms"] > 0
        assert r["size_bytes"] == os.path.getsize(os.path.join(out, r["file"]))
    kept = [r for r in rows if r["tflite_accuracy"] >= teacher - TINY.tolerance
            and not r.get("baseline")]
    best = result["recommended"]
    assert best["size_bytes"] == min(r["size_bytes"] for r in kept)
    assert best["candidate"] != "teacher"  # students with a tenth of its layers are smaller
    students = [r for r in rows if r["candidate"] not in ("teacher", "avg_embedding")]
    assert max(r["params"] for r in students) < min(r["params"] for r in rows
                                                    if r["candidate"] == "teacher")
    with open(os.path.join(out, "recommended.tflite"), "rb") as f, \
            open(os.path.join(out, best["file"]), "rb") as g:
        assert f.read() == g.read()
    markdown = open(os.path.join(out, "shrink.md")).read()
    assert "**recommended**" in markdown and markdown.count("\n| ") == 9  # header + 8 rows
    assert "| avg_embedding (baseline) | dynamic |" in markdown
    assert os.path.isfile(os.path.join(out, "shrink.png"))


def test_the_baselines_are_measured_like_every_candidate_and_never_recommended(run):
    """The average-word-embedding classifier (MediaPipe Model Maker's kind)
    learns the tiny task from its 48 rows (each text starts with its label's
    word), its files are a small fraction of any transformer's, and TF-IDF's
    accuracy is beside them where scikit-learn is installed."""
    import importlib.util

    out, result = run
    baseline = {r["mode"]: r for r in result["rows"] if r["candidate"] == "avg_embedding"}
    assert set(baseline) == {"none", "dynamic"} and all(r["baseline"] for r in baseline.values())
    assert baseline["none"]["keras_accuracy"] >= 0.75, baseline  # chance is 0.5
    assert baseline["none"]["tflite_accuracy"] == baseline["none"]["keras_accuracy"]
    assert baseline["dynamic"]["size_bytes"] < baseline["none"]["size_bytes"] < 1_000_000
    assert result["recommended"]["candidate"] != "avg_embedding"
    references = json.load(open(os.path.join(out, "shrink.json")))["references"]
    if importlib.util.find_spec("sklearn") is None:
        assert references == {}
    else:
        assert 0.75 <= references["tfidf_logistic_regression"] <= 1.0
        assert "TF-IDF (word 1-2-grams) + logistic regression on the same rows" in open(
            os.path.join(out, "shrink.md")).read()


def test_a_second_run_resumes(run, classifier_folder, task_files):
    out, first = run
    results = os.path.join(out, "results")
    stamps = {name: os.path.getmtime(os.path.join(results, name)) for name in os.listdir(results)}
    again = shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], out, TINY)
    assert [r["tflite_accuracy"] for r in again["rows"]] == \
        [r["tflite_accuracy"] for r in first["rows"]]
    assert stamps == {name: os.path.getmtime(os.path.join(results, name))
                      for name in os.listdir(results)}


def test_the_recommended_file_runs_in_mediapipe_with_our_labels(run, classifier_folder,
                                                                 task_files, tmp_path):
    """With ``metadata`` the recommended file is exported again for
    MediaPipe; MediaPipe's Python TextClassifier, tokenizing itself, gives
    the labels our runner gives on our ids."""
    import dataclasses
    import shutil

    import numpy as np
    from mediapipe.tasks.python.core.base_options import BaseOptions
    from mediapipe.tasks.python.text import text_classifier

    from albert_keras.export.runtime import TFLiteRunner
    from albert_keras.sources.model_source import ModelSource
    from albert_keras.text.packer import pack_texts

    out, _ = run
    copy = str(tmp_path / "run")
    shutil.copytree(out, copy)
    result = shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], copy,
                    dataclasses.replace(TINY, metadata=True))
    best = result["recommended"]
    path = os.path.join(copy, "recommended.tflite")
    sidecar = json.load(open(path[:-len(".tflite")] + ".json"))
    assert sidecar["metadata"] and sidecar["validation"]["mediapipe"]["passed"]
    texts = ["fox the quick brown fox", "dog naps in the sun", "a dog and a fox"]
    classifier = text_classifier.TextClassifier.create_from_options(
        text_classifier.TextClassifierOptions(base_options=BaseOptions(model_asset_path=path)))
    theirs = [classifier.classify(t).classifications[0].categories[0].category_name
              for t in texts]
    classifier.close()
    tokenizer = ModelSource(os.path.join(copy, "students", best["candidate"])).tokenizer
    packed = pack_texts(tokenizer, texts, None, sidecar["sequence_length"])
    runner = TFLiteRunner(path)
    ours = [sidecar["labels"][int(np.argmax(runner({
        "ids": packed["token_ids"][i:i + 1], "mask": packed["padding_mask"][i:i + 1],
        "segment_ids": packed["segment_ids"][i:i + 1]})["probability"]))]
        for i in range(len(texts))]
    assert theirs == ours


def test_int8_remedies_each_give_a_row_always(run, classifier_folder, task_files, tmp_path,
                                              monkeypatch):
    """``always``: every remedy of each candidate's int8 file is exported,
    validated and measured (the students of the first run are reused; a
    shorter ladder, with one step past the models' int8 layers, for time)."""
    import dataclasses
    import shutil

    from albert_keras.drivers import shrink as module
    from albert_keras.export.runtime import float_ops

    ladder = ("int8+float2", "int8+float500", "qat")
    monkeypatch.setattr(module, "INT8_REMEDIES", ladder)
    out, _ = run
    copy = str(tmp_path / "run")
    shutil.copytree(out, copy)
    cfg = dataclasses.replace(TINY, students=("bert_tiny",), modes=("int8",),
                              int8_remedies="always", baselines=False, runs=2)
    rows = shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], copy,
                  cfg)["rows"]
    for candidate in ("teacher", "bert_tiny"):
        mine = {r["mode"]: r for r in rows if r["candidate"] == candidate}
        assert list(mine) == ["int8", *ladder], (candidate, list(mine))
        assert all(mine[m]["validated"] for m in ("int8", "int8+float2", "qat")), mine
        assert not mine["int8+float500"]["validated"]
        assert "int8 layer(s) that compute" in mine["int8+float500"]["failure"]

        def computing_in_float(mode):
            ops = float_ops(os.path.join(copy, mine[mode]["file"]))
            return sum(n for op, n in ops.items() if op not in ("QUANTIZE", "DEQUANTIZE"))
        assert computing_in_float("int8+float2") > computing_in_float("int8"), candidate
    markdown = open(os.path.join(copy, "shrink.md")).read()
    assert "| teacher | int8+float2 |" in markdown and "| bert_tiny | qat |" in markdown


def test_a_pretrained_folder_is_a_student(run, classifier_folder, init_folder, task_files,
                                          tmp_path):
    """A student given as a folder starts from its weights (here the tiny
    pretrained folder the teacher was fine-tuned from) and is named after it."""
    import dataclasses
    import shutil

    from albert_keras.sources.model_source import ModelSource

    out, _ = run
    copy = str(tmp_path / "run")
    shutil.copytree(out, copy)
    cfg = dataclasses.replace(TINY, students=(init_folder,), student_overrides=None,
                              modes=("dynamic",), baselines=False, runs=2)
    rows = shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], copy,
                  cfg)["rows"]
    name = os.path.basename(os.path.normpath(init_folder))
    assert [(r["candidate"], r["mode"]) for r in rows] == [("teacher", "dynamic"),
                                                            (name, "dynamic")]
    assert rows[1]["validated"]
    shape = ("hidden_size", "num_hidden_layers", "intermediate_size", "embedding_size")
    student = ModelSource(os.path.join(copy, "students", name)).encoder().config
    pretrained = ModelSource(init_folder).encoder().config
    # its shape, not a preset's (TINY's overrides would give hidden 16)
    assert [getattr(student, f) for f in shape] == [getattr(pretrained, f) for f in shape]
    with pytest.raises(ValueError, match="student_overrides changes presets"):
        shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], copy,
               dataclasses.replace(cfg, student_overrides={"num_hidden_layers": 1}))
    with pytest.raises(ValueError, match="no such student folder"):
        ShrinkConfig(students=(str(tmp_path / "missing"),)).validate()


def test_auto_remedies_stop_at_the_first_that_keeps_the_accuracy(monkeypatch, tmp_path):
    """``auto``: the ladder runs while the last file loses more than the
    tolerance against its float model, and not at all when int8 keeps it."""
    from albert_keras.drivers import shrink as module

    def scripted(accuracies):
        def row(name, folder, mode, run, params):
            return {"candidate": name, "mode": mode, "validated": True, "keras_accuracy": 0.9,
                    "tflite_accuracy": accuracies[mode]}
        return row
    cfg = ShrinkConfig(modes=("dynamic", "int8"), tolerance=0.01)
    losing = {"dynamic": 0.9, "int8": 0.6, "int8+float1": 0.7, "int8+float2": 0.895,
              "int8+float4": 0.9, "int8+float8": 0.9, "qat": 0.9}
    run = module._Run(("e", "t"), str(tmp_path), cfg, module.ShrinkBudget(None))
    monkeypatch.setattr(module, "_row", scripted(losing))
    modes = [r["mode"] for r in module._files_of("s", "f", run)]
    assert modes == ["dynamic", "int8", "int8+float1", "int8+float2"]
    monkeypatch.setattr(module, "_row", scripted({**losing, "int8": 0.895}))
    modes = [r["mode"] for r in module._files_of("s", "f", run)]
    assert modes == ["dynamic", "int8"]


def test_a_file_that_loses_to_its_own_float_model_is_not_recommended():
    from albert_keras.drivers.shrink_table import recommend

    rows = [{"candidate": "teacher", "mode": "none", "validated": True, "size_mb": 8.0,
             "tflite_accuracy": 0.80, "keras_accuracy": 0.80},
            # within a point of the teacher, but 10 below its own float model
            {"candidate": "big", "mode": "int8", "validated": True, "size_mb": 2.0,
             "tflite_accuracy": 0.80, "keras_accuracy": 0.90},
            {"candidate": "big", "mode": "dynamic", "validated": True, "size_mb": 2.2,
             "tflite_accuracy": 0.895, "keras_accuracy": 0.90}]
    assert recommend(rows, 0.01)["mode"] == "dynamic"


def test_refusals_before_any_work(classifier_folder, init_folder, task_files, tmp_path):
    with pytest.raises(ShrinkError, match="fine-tuned classifier folder"):
        shrink(init_folder, task_files["cls_train"], task_files["cls_eval"],
               str(tmp_path / "a"), TINY)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("x")
    with pytest.raises(ShrinkError, match="other files in it"):
        shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"], str(mine),
               TINY)
    assert os.listdir(mine) == ["notes.txt"]
    # a model fine-tuned with transformers is a teacher too; its other task classes are not
    from albert_keras.drivers.shrink import _check_request
    from tests.helpers import make_hf_model

    make_hf_model("BertForSequenceClassification", tmp_path / "hf_cls")
    _check_request(str(tmp_path / "hf_cls"), (), str(tmp_path / "c"))
    make_hf_model("BertForTokenClassification", tmp_path / "hf_tag")
    with pytest.raises(ShrinkError, match="fine-tuned classifier folder"):
        _check_request(str(tmp_path / "hf_tag"), (), str(tmp_path / "c"))
    with pytest.raises(ValueError, match="albert_huge"):
        shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"],
               str(tmp_path / "b"), ShrinkConfig(students=("albert_huge",)))
    with pytest.raises(ValueError, match="int8_remedies always remedies int8 files"):
        shrink(classifier_folder, task_files["cls_train"], task_files["cls_eval"],
               str(tmp_path / "b"), ShrinkConfig(modes=("none",), int8_remedies="always"))
    assert not os.path.exists(tmp_path / "a") and not os.path.exists(tmp_path / "b")
