"""docs/reports/code/layer_probe.py: the pairwise cosine, the probe and the command's output."""

import csv
import json
import os
import subprocess
import sys

import numpy as np
from conftest import load_script

from tests.helpers import make_sentences

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "layer_probe.py")


def _module():
    return load_script("layer_probe")


def test_mean_cosine_is_the_mean_over_pairs_of_different_rows():
    mean_cosine = _module().mean_cosine
    x = np.random.default_rng(0).normal(size=(7, 5))
    pairs = [np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b)
             for i, a in enumerate(x) for j, b in enumerate(x) if i != j]
    assert abs(mean_cosine(x) - np.mean(pairs)) < 1e-9
    # a shared offset much larger than the differences pushes it to 1
    assert mean_cosine(x + 100.0) > 0.99 > mean_cosine(x)


def test_probe_reads_a_feature_that_carries_the_label():
    probe = _module().probe_accuracy
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    x = rng.normal(size=(200, 4))
    x[:, 2] += 3.0 * y
    assert probe(x[:100], y[:100], x[100:], y[100:], 1.0) > 0.9
    assert probe(x[:100, [0, 1, 3]], y[:100], x[100:, [0, 1, 3]], y[100:], 1.0) < 0.7


def test_command_reports_every_hidden_state(init_folder, tmp_path):
    # the label's word three times, then a sentence: even random embeddings,
    # averaged, tell the labels apart
    task = tmp_path / "task"
    task.mkdir()
    for split, n, seed in (("train", 48, 1), ("eval", 16, 2)):
        rows = [["text", "label"]]
        for i, text in enumerate(make_sentences(n, seed=seed)):
            label = "fox" if i % 2 else "dog"
            rows.append([f"{label} {label} {label} {text}", label])
        with open(task / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows(rows)
    out = tmp_path / "probe.json"
    done = subprocess.run(
        [sys.executable, SCRIPT, "--task", str(task), "--model", f"tiny={init_folder}",
         "--from-scratch", init_folder, "--c", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert (result["train_rows"], result["eval_rows"]) == (48, 16)
    # if the training and eval rows were embedded with different random
    # weights, the probe would be at chance
    assert result["models"]["from scratch"]["layers"][0]["probe"] >= 0.9
    assert set(result["models"]) == {"tiny", "from scratch"}
    for model in result["models"].values():
        # the tiny model has 2 layers: the embeddings and both layers' outputs
        assert [entry["layer"] for entry in model["layers"]] == [0, 1, 2]
        for entry in model["layers"]:
            assert -1 <= entry["cosine"] <= 1 and 0 <= entry["probe"] <= 1


def test_a_model_without_a_name_is_refused(tmp_path):
    done = subprocess.run([sys.executable, SCRIPT, "--task", str(tmp_path), "--model",
                           str(tmp_path), "--out", str(tmp_path / "o.json")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == \
        f"--model {str(tmp_path)!r}: expected NAME=FOLDER"
    assert not (tmp_path / "o.json").exists()
