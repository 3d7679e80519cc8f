"""docs/reports/code/deberta_v3_search.py: two settings of the search on tiny
data write their numbers and the table."""

import json
import os
import subprocess
import sys

from tests.training.conftest import _make_data

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "deberta_v3_search.py")


def test_two_settings_run_and_are_tabled(tmp_path_factory, corpus_file, spm_path, tmp_path):
    data = _make_data(tmp_path_factory, corpus_file, spm_path, "data", 32, 5)
    short = _make_data(tmp_path_factory, corpus_file, spm_path, "data_16", 16, 3)
    out = tmp_path / "search.json"
    done = subprocess.run(
        [sys.executable, SCRIPT, "--data", data, "--short-data", short, "--steps", "4",
         "--settings", "recipe", "lr_4e-3", "--work", str(tmp_path / "runs"), "--out", str(out),
         "--pretrain-args", "--batch-size 8 --steps-per-epoch 2 --eval-steps 1 "
                            "--model-overrides '{\"num_hidden_layers\": 1, \"hidden_size\": 64, "
                            "\"num_attention_heads\": 2, \"intermediate_size\": 64}'"],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = json.loads(out.read_text())["runs"]
    assert sorted(runs) == ["lr_4e-3", "recipe"]
    for row in runs.values():
        assert 0 <= row["rtd_auc"] <= 1 and row["token_spread"] >= 0
        assert len(row["train_rtd_loss"]) == 2
    assert "| lr_4e-3 --learning-rate 4e-3 |" in done.stdout
