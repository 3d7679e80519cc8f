"""A task defined here, in tests/toy_task/, goes through the whole package.

The proof that a task is its own folder plus one registry line: the
``similarity`` task (a score per sentence pair) is registered with one
``register_task`` call, and nothing in albert_keras changes for it. It
fine-tunes from the command line, loads and predicts in Python, exports to
a validated ``.tflite`` and goes out as an HF folder that transformers runs
with the same scores, and comes back.
"""

import json
import os

import numpy as np
import pytest
import torch
import transformers

from albert_keras.cli import main
from albert_keras.export.runtime import TFLiteRunner
from albert_keras.tasks import registry
from albert_keras.tasks.classify.text_classifier import TextClassifier
from albert_keras.tasks.text_task import TextTask
from tests.helpers import make_sentences
from tests.toy_task.similarity_scorer import SimilarityScorer


@pytest.fixture(scope="module")
def similarity_registered():
    added = "similarity" not in registry.TASKS
    registry.register_task("similarity", "tests.toy_task.similarity:Similarity")  # the one line
    yield
    if added:
        del registry.TASKS["similarity"]


def _pairs(n, seed):
    """Pairs whose score follows the first sentence's first word (4 for a
    fox, 1 for a dog): a tiny model learns it in a few epochs, and a model
    that learned nothing scores every pair alike (Spearman's rho 0)."""
    firsts = make_sentences(n, seed=seed)
    seconds = make_sentences(n, seed=seed + 100)
    rows = []
    for i, (a, b) in enumerate(zip(firsts, seconds)):
        animal = "fox" if i % 2 else "dog"
        rows.append({"sentence1": f"{animal} {a}", "sentence2": b,
                     "score": 4.0 if animal == "fox" else 1.0})
    return rows


def _write(rows, path):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def tuned(similarity_registered, init_folder, tmp_path_factory):
    root = tmp_path_factory.mktemp("similarity")
    train = _write(_pairs(48, 1), root / "train.jsonl")
    evaluation = _write(_pairs(16, 2), root / "eval.jsonl")
    out = str(root / "model")
    assert main(["finetune", "--task", "similarity", "--init", init_folder, "--train", train,
                 "--eval", evaluation, "--out", out, "--epochs", "40", "--batch-size", "8",
                 "--seq-length", "32", "--learning-rate", "3e-3"]) == 0
    return root, out, evaluation


def test_the_command_line_fine_tunes_and_predicts_it(tuned, capsys):
    root, out, evaluation = tuned
    with open(os.path.join(out, "task.json")) as f:
        assert json.load(f)["task"] == "similarity"
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics["spearman"] > 0.8, metrics  # scoring every pair alike gives 0
    capsys.readouterr()
    assert main(["predict", out, "--input", evaluation]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == 16 and all("similarity" in r for r in records)


def test_python_loads_the_folder_and_scores_pairs_as_the_command_line(tuned, capsys):
    root, out, evaluation = tuned
    rows = _pairs(16, 2)
    scorer = TextTask.load(out)
    assert isinstance(scorer, SimilarityScorer)
    scores = scorer.predict(([r["sentence1"] for r in rows], [r["sentence2"] for r in rows]))
    capsys.readouterr()
    assert main(["predict", out, "--input", evaluation]) == 0
    cli = [json.loads(line)["similarity"] for line in capsys.readouterr().out.splitlines()]
    np.testing.assert_allclose(scores, cli, atol=1e-5)
    assert np.mean(scores[1::2]) > np.mean(scores[::2]) + 1.5  # foxes above dogs


def test_it_exports_to_a_validated_tflite(tuned):
    root, out, evaluation = tuned
    tflite = str(root / "similarity.tflite")
    assert main(["export", out, "--out", tflite, "--quantize", "none",
                 "--validation-data", evaluation]) == 0
    with open(str(root / "similarity.json")) as f:
        sidecar = json.load(f)
    assert sidecar["task"] == "similarity" and sidecar["validation"]["passed"]
    assert sidecar["validation"]["outputs"]["logits"]["max_abs_diff"] < 1e-4
    rows = _pairs(4, 3)
    scorer = TextTask.load(out)
    x, _, _ = scorer.preprocessor(([r["sentence1"] for r in rows],
                                   [r["sentence2"] for r in rows]))
    runner = TFLiteRunner(tflite)
    got = [runner({"ids": x["token_ids"][i:i + 1], "mask": x["padding_mask"][i:i + 1],
                   "segment_ids": x["segment_ids"][i:i + 1]})["logits"][0, 0]
           for i in range(len(rows))]
    want = scorer.predict(([r["sentence1"] for r in rows], [r["sentence2"] for r in rows]))
    np.testing.assert_allclose(got, want, atol=1e-4)
    # quantized, its one output is judged as a score (one class would agree always)
    assert main(["export", out, "--out", str(root / "dynamic.tflite"), "--quantize", "dynamic",
                 "--validation-data", evaluation]) == 0
    with open(str(root / "dynamic.json")) as f:
        entry = json.load(f)["validation"]["outputs"]["logits"]
    assert entry["measure"] == "scores" and entry["score_error"] < 0.1, entry


def test_it_goes_out_to_transformers_and_comes_back(tuned):
    root, out, _ = tuned
    hf = str(root / "hf")
    assert main(["convert", out, "--to", "hf", "--out", hf]) == 0
    rows = _pairs(6, 4)
    firsts, seconds = [r["sentence1"] for r in rows], [r["sentence2"] for r in rows]
    ours = TextTask.load(out).predict((firsts, seconds))
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(hf).eval()
    assert model.config.problem_type == "regression"
    batch = tokenizer(firsts, seconds, padding=True, truncation=True, max_length=32,
                      return_tensors="pt")
    with torch.no_grad():
        theirs = model(**batch).logits[:, 0].numpy()
    np.testing.assert_allclose(theirs, ours, atol=1e-4)
    # back: HF has no similarity class, so the folder reads as its
    # SequenceClassification, a regression, with the same scores
    back = TextClassifier.from_preset(hf, sequence_length=32)
    np.testing.assert_allclose(back.predict((firsts, seconds)), ours, atol=1e-4)
