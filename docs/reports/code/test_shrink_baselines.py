"""docs/reports/code/shrink_baselines.py on tiny rows: the rows and the reference written."""

import json
import os
import subprocess
import sys

from tests.helpers import make_sentences

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shrink_baselines.py")


def test_command_measures_the_baselines(tmp_path):
    for split, n, seed in (("train", 48, 1), ("eval", 16, 2)):
        lines = ["text,label"] + [f"{'fox' if i % 2 else 'dog'} {t},{'fox' if i % 2 else 'dog'}"
                                  for i, t in enumerate(make_sentences(n, seed=seed))]
        (tmp_path / f"{split}.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "baselines.json"
    done = subprocess.run([sys.executable, SCRIPT, "--train", str(tmp_path / "train.csv"),
                           "--eval", str(tmp_path / "eval.csv"), "--runs", "2",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert [r["mode"] for r in result["rows"]] == ["none", "dynamic"]
    # each text starts with its label's word: far above chance (0.5)
    assert all(r["validated"] and r["tflite_accuracy"] >= 0.75 for r in result["rows"])
    assert result["cores"] >= 1 and result["cpu"]
