"""``export --web``: the page folder, opened in headless Chromium, tokenizes
as our tokenizer does and gives our LiteRT runner's numbers, at the shortest
length that holds each text."""

import json
import os

import numpy as np
import pytest

from albert_keras.export import ExportConfig
from albert_keras.export import ExportError
from albert_keras.export import export_tflite
from albert_keras.export.runtime import TFLiteRunner
from albert_keras.sources.model_source import ModelSource
from albert_keras.text.packer import pack_texts
from tests.web.driver import run_page

# accents, capitals, punctuation, CJK, emoji, odd spaces, nothing (refused,
# as predict refuses it), and one text longer than the longest input (cut as
# our packer cuts it)
TEXTS = ["The quick brown fox jumps.", "Naïve café, déjà vu!", "ÀÉÎÕÜ  straße", "东京 and 北京",
         "emoji 😀 ok", "  spaced\tout\n", "", " \n\t ", "fox dog " * 30]


def _tokenizer(folder):
    return ModelSource(folder).tokenizer


def _check_page(folder, site, texts, atol=1e-5, console=None):
    """The page's packed ids are ours, at the shortest length that holds
    them; its outputs are our LiteRT runner's on the same signature."""
    config = json.load(open(os.path.join(site, "model.json")))
    lengths = sorted(config["signatures"].values())
    tokenizer = _tokenizer(folder)
    results = _refused_blank(run_page(site, texts, console=console), texts)
    runners = {name: TFLiteRunner(os.path.join(site, "model.tflite"), signature=name)
               for name in config["signatures"]}
    for r in results:
        needed = len(tokenizer.encode([r["text"]])[0]) + 2
        length = next((n for n in lengths if n >= needed), lengths[-1])
        assert r["pack"]["length"] == length, (r["text"], r["pack"]["length"], needed)
        packed = pack_texts(tokenizer, [r["text"]], None, length)
        assert r["pack"]["ids"] == packed["token_ids"][0].tolist(), r["text"]
        assert r["pack"]["mask"] == packed["padding_mask"][0].tolist()
        ours = runners[r["pack"]["signature"]]({"ids": packed["token_ids"],
                                                "mask": packed["padding_mask"],
                                                "segment_ids": packed["segment_ids"]})
        name = config["outputs"][0]
        got = r["result"].get("logits", r["result"].get("embedding"))
        if atol is None:  # quantized: the same top label
            assert np.argmax(got) == np.argmax(ours[name][0]), r["text"]
        else:
            np.testing.assert_allclose(got, ours[name][0], atol=atol, err_msg=r["text"])
    return results


def _refused_blank(results, texts):
    """The page's results for the texts with words; the blank ones were
    refused with a message that says so."""
    assert [r["text"] for r in results] == texts
    for r in results:
        assert ("error" in r) == (not r["text"].strip()), r
        assert "empty text" in r.get("error", "empty text"), r
    return [r for r in results if "error" not in r]


@pytest.fixture(scope="module")
def bert_classifier(bert_folder, task_files, tmp_path_factory):
    """A BERT (WordPiece, lower-casing and accent-stripping) classifier
    fine-tuned here from an HF folder."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    out = str(tmp_path_factory.mktemp("bert-cls") / "model")
    finetune(bert_folder, task_files["cls_train"], task_files["cls_eval"], out,
             FinetuneConfig(task="classify", epochs=2, batch_size=8, sequence_length=32))
    return out


@pytest.mark.parametrize("model, quantize", [("bert", "none"), ("albert", "none"),
                                             ("bert", "dynamic"), ("albert", "float16")])
@pytest.mark.sampled(keep=2)  # CI: 2 of these per commit
def test_a_classifier_page_in_chromium(model, quantize, bert_classifier, classifier_folder,
                                       tmp_path):
    folder = bert_classifier if model == "bert" else classifier_folder
    site = str(tmp_path / "site")
    sidecar = export_tflite(folder, str(tmp_path / "m.tflite"),
                            ExportConfig(quantize=quantize, examples=16, web=site))
    assert sidecar["signatures"] == {"length_16": 16, "serving_default": 32}
    results = _check_page(folder, site, TEXTS, atol=None if quantize == "dynamic" else
                          {"none": 1e-5, "float16": 1e-3}[quantize])
    assert {r["pack"]["length"] for r in results} == {16, 32}  # both lengths ran
    best = results[0]["result"]
    assert best["label"] in sidecar["labels"]
    assert abs(sum(s["score"] for s in best["scores"]) - 1) < 1e-5


def test_web_alone_writes_the_model_once_into_the_folder(classifier_folder, tmp_path, capsys):
    """``export MODEL --web DIR`` needs no ``--out``: the folder holds the
    only copy of the file, its sidecar and its card, and the page runs it."""
    from albert_keras.cli import main
    from albert_keras.files import sha256_file

    site = tmp_path / "site"
    assert main(["export", classifier_folder, "--web", str(site), "--examples", "8"]) == 0
    assert os.listdir(tmp_path) == ["site"]
    said = capsys.readouterr().out
    assert said.count("wrote ") == 2, said  # the model once, the folder once
    assert f"wrote {site / 'model.tflite'}" in said and f"web page folder {site}" in said
    assert "1 CPU device(s) on tensorflow, 1 replica(s): precision float32 (the Keras" in said
    sidecar = json.load(open(site / "sidecar.json"))
    assert sidecar["sha256"] == sha256_file(str(site / "model.tflite"))
    assert sidecar["size_bytes"] == os.path.getsize(site / "model.tflite")
    assert "validated on 8 examples" in (site / "MODEL.md").read_text()
    config = json.load(open(site / "model.json"))
    assert {"model.tflite", "sidecar.json", "MODEL.md"} <= set(config["files"])
    console = []
    _check_page(classifier_folder, str(site), TEXTS, console=console)
    # LiteRT's normal start-up lines are not errors (they were: "error: INFO:
    # [environment.cc:36] Creating LiteRT environment", the NPU warning); the
    # page says once that the accelerator warnings are expected
    assert [m for m in console if m.startswith("error:")] == [], console
    assert any(m.startswith("debug: LiteRT: INFO: ") for m in console), console
    assert sum("warnings that none was found are expected" in m for m in console) == 1


def test_an_embedder_page_in_chromium(init_folder, tmp_path):
    site = str(tmp_path / "site")
    export_tflite(init_folder, str(tmp_path / "e.tflite"),
                  ExportConfig(part="embedder", sequence_length=64, examples=8, web=site))
    config = json.load(open(os.path.join(site, "model.json")))
    assert config["signatures"] == {"length_16": 16, "length_32": 32, "length_48": 48,
                                    "serving_default": 64}
    _check_page(init_folder, site, TEXTS[:4] + TEXTS[-1:])


@pytest.mark.parametrize("model", ["bert", "albert"])
@pytest.mark.sampled(keep=1)
def test_a_metadata_classifier_runs_in_mediapipe_for_web(model, bert_classifier,
                                                          classifier_folder, tmp_path):
    """MediaPipe tokenizes from the file; the page lower-cases and strips
    accents first where our tokenizer does, so it gives our probabilities."""
    folder = bert_classifier if model == "bert" else classifier_folder
    site = str(tmp_path / "site")
    export_tflite(folder, str(tmp_path / "m.tflite"),
                  ExportConfig(metadata=True, examples=16, web=site))
    config = json.load(open(os.path.join(site, "model.json")))
    assert config["runtime"] == "mediapipe" and config["signatures"] == {"serving_default": 32}
    assert config["prepare"] == ({"lowercase": True, "strip_accents": True} if model == "bert"
                                 else {"lowercase": False, "strip_accents": False})
    assert not os.path.exists(os.path.join(site, "tokenizer.json"))
    tokenizer = _tokenizer(folder)
    runner = TFLiteRunner(os.path.join(site, "model.tflite"))
    for r in _refused_blank(run_page(site, TEXTS), TEXTS):
        packed = pack_texts(tokenizer, [r["text"]], None, 32)
        ours = runner({"ids": packed["token_ids"], "mask": packed["padding_mask"],
                       "segment_ids": packed["segment_ids"]})["probability"][0]
        np.testing.assert_allclose(r["result"]["probabilities"], ours, atol=1e-5,
                                   err_msg=r["text"])


def test_a_user_folder_is_never_touched(classifier_folder, tmp_path):
    from albert_keras.options import command_line_names

    site = tmp_path / "site"
    site.mkdir()
    (site / "notes.txt").write_text("mine")
    with command_line_names(), pytest.raises(ExportError, match="did not write"):
        export_tflite(classifier_folder, str(tmp_path / "m.tflite"),
                      ExportConfig(examples=4, web=str(site), overwrite=True))
    assert os.listdir(site) == ["notes.txt"] and not os.path.exists(tmp_path / "m.tflite")


def test_overwrite_replaces_only_what_an_earlier_export_wrote(classifier_folder, tmp_path):
    from albert_keras.options import command_line_names

    site = tmp_path / "site"
    config = ExportConfig(examples=4, web=str(site), lengths=[16])
    export_tflite(classifier_folder, str(tmp_path / "m.tflite"), config)
    (site / "notes.txt").write_text("mine")
    with command_line_names(), pytest.raises(ExportError, match="--overwrite"):
        export_tflite(classifier_folder, str(tmp_path / "n.tflite"), config)
    export_tflite(classifier_folder, str(tmp_path / "m.tflite"),
                  ExportConfig(examples=4, web=str(site), lengths=[8, 16], overwrite=True))
    assert (site / "notes.txt").read_text() == "mine"
    assert json.load(open(site / "model.json"))["signatures"]["length_8"] == 8


@pytest.mark.parametrize("changes, message", [
    (dict(with_tokenizer=True), "LiteRT.js has no string tensors"),
    (dict(part="encoder", sequence_length=32), "classifiers and embedders; this is an encoder"),
    (dict(out_in_site=True), "the .tflite goes outside --web"),
    (dict(web=None, no_out=True), "nothing to write: give the .tflite"),
])
def test_what_the_page_cannot_run_is_refused_before_work(init_folder, classifier_folder,
                                                         tmp_path, changes, message):
    from albert_keras.options import command_line_names

    folder = init_folder if changes.get("part") else classifier_folder
    site = tmp_path / "site"
    out = site / "m.tflite" if changes.pop("out_in_site", False) else tmp_path / "m.tflite"
    out = None if changes.pop("no_out", False) else str(out)
    changes = {"web": str(site), **changes}
    with command_line_names(), pytest.raises(ExportError, match=message):
        export_tflite(folder, out, ExportConfig(examples=4, **changes))
    assert not os.listdir(tmp_path)
