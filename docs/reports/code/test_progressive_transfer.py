"""docs/reports/code/progressive_transfer.py: a teacher and the two students
on tiny data write their numbers and the table."""

import json
import os
import subprocess
import sys

from tests.training.conftest import _make_data

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "progressive_transfer.py")

SHAPE = {"num_hidden_layers": 1, "hidden_size": 16, "intra_bottleneck_size": 8,
         "intermediate_size": 16, "num_attention_heads": 2, "embedding_size": 8,
         "max_position_embeddings": 64}


def test_the_teacher_and_both_students_run_and_are_tabled(tmp_path_factory, corpus_file,
                                                          spm_path, tmp_path):
    data = _make_data(tmp_path_factory, corpus_file, spm_path, "data", 32, 5)
    out = tmp_path / "progressive.json"
    done = subprocess.run(
        [sys.executable, SCRIPT, "--data", data, "--work", str(tmp_path / "runs"),
         "--teacher-steps", "2", "--layer-stage-steps", "2", "--student-steps", "4",
         "--batch-size", "8", "--same-time-steps", "6", "--out", str(out),
         "--pretrain-args", "--steps-per-epoch 2 --eval-steps 1 --precision float32 "
                            f"--model-overrides '{json.dumps(SHAPE)}'"],
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    pre = json.loads(out.read_text())["pretraining"]
    assert sorted(pre) == ["direct", "direct_same_time", "distilled", "teacher"]
    assert pre["distilled"]["steps"] == pre["direct"]["steps"] == 4
    assert pre["direct_same_time"]["steps"] == 6
    assert pre["distilled"]["parameters"] == pre["direct"]["parameters"]
    for row in pre.values():
        assert 0 <= row["masked_lm_accuracy"] <= 1
    assert "| direct_same_time | " in done.stdout
    assert "| distilled | " in done.stdout and "| most frequent token |" in done.stdout
