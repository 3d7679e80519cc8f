"""docs/reports/code/adversarial.py: one seed pass of every method on a tiny
task writes the table and its JSON, with every method's runs."""

import csv
import json
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "adversarial.py")


def _task(folder):
    os.makedirs(folder)
    for name, n in (("train", 48), ("eval", 16)):
        with open(os.path.join(folder, f"{name}.csv"), "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["text", "label"])
            for i in range(n):
                animal = ("fox", "dog")[i % 2]
                writer.writerow([f"the {animal} runs over the road {i}", animal])


def test_every_method_runs_and_is_tabled(init_folder, tmp_path):
    _task(str(tmp_path / "task"))
    out = tmp_path / "adversarial"
    done = subprocess.run([sys.executable, SCRIPT, "--init", init_folder, "--task",
                           str(tmp_path / "task"), "--seeds", "0", "1", "--epochs", "1",
                           "--seq-length", "32", "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / "adversarial.json").read_text())
    assert sorted(result["rows"]) == ["none", "r3f", "sift"]
    for row in result["rows"].values():
        assert len(row["accuracies"]) == 2 and row["step_seconds_median"] > 0
    table = (tmp_path / "adversarial.md").read_text()
    assert "| sift |" in table and "| TF-IDF + logistic regression |" in table
