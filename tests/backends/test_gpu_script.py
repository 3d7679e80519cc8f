"""benchmarks/gpu.py, the one call a lent GPU machine runs, at a tiny size on
this CPU: every part writes its rows, and the budget skips what does not fit
instead of dropping it."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks", "gpu.py")


def _run(tmp_path, *argv):
    done = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--tiny",
                           "--out", str(tmp_path / "gpu"), *argv],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    return {part: json.loads((tmp_path / f"gpu_{part}.json").read_text())
            for part in ("finetune", "albert") if (tmp_path / f"gpu_{part}.json").exists()}


@pytest.mark.sampled(keep=2, group="jax_torch_runs")  # CI: 2 of the JAX/torch runs per commit
def test_fine_tuning_and_a_backend_part_run_and_compare(tmp_path):
    results = _run(tmp_path, "--parts", "finetune", "albert")
    rows = results["finetune"]["rows"]
    assert [(r["who"], r["shape"]) for r in rows] == [("ours-jax", "tiny"),
                                                     ("hf-trainer", "tiny")]
    for row in rows:  # two epochs each, the second after compiling
        assert "error" not in row, row
        assert len(row["epoch_s"]) == 2 and all(t > 0 for t in row["epoch_s"]), row
        assert row["steps"] == 48 // 8 and row["padded_tokens"] >= 6 * 8 * 3, row
    ratio = rows[1]["epoch_s"][-1] / rows[0]["epoch_s"][-1]
    table = (tmp_path / "gpu_finetune.md").read_text()
    assert f"| {ratio:.2f}x |" in table
    albert = results["albert"]["rows"]
    assert [(r["who"], r["batch"], r["seq"]) for r in albert] == [("ours-jax", 2, 16)]
    assert albert[0]["tokens_per_s"] > 0


def test_a_spent_budget_records_every_case_as_skipped(tmp_path):
    results = _run(tmp_path, "--parts", "finetune", "albert", "--budget", "0")
    for part, found in results.items():
        assert found["rows"], part
        for row in found["rows"]:
            assert row["error"] == "skipped: the --budget of 0 s was spent", row


def test_real_lengths_come_from_the_corpus_sentences():
    sys.path.insert(0, os.path.dirname(SCRIPT))
    try:
        import gpu
    finally:
        sys.path.remove(os.path.dirname(SCRIPT))
    lengths = gpu.real_lengths(2000, 128)
    assert len(lengths) == 2000 and min(lengths) >= 5 and max(lengths) <= 128
    # State of the Union sentences: a mean of 20 to 40 pieces, some cut at 128
    assert 20 <= sum(lengths) / len(lengths) <= 40
    assert lengths.count(128) < 0.05 * len(lengths)
