"""benchmarks/objectives.py --compare refuses step costs timed at another mask rate."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "benchmarks", "objectives.py")


def _compare(tmp_path, step_cost_file, *extra):
    return subprocess.run([sys.executable, SCRIPT, "--compare", "--data", str(tmp_path / "none"),
                           "--step-cost-file", str(step_cost_file),
                           "--out", str(tmp_path / "out.json"), "--work", str(tmp_path / "work"),
                           *extra], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("timed_at,compare_at", [(None, "0.4"), (0.15, "0.4"), (0.4, None)])
def test_compare_refuses_step_costs_from_another_mask_rate(tmp_path, timed_at, compare_at):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"settings": {"mask_rate": timed_at},
                                 "ratio_to_mlm_sop": {"mlm_sop": 1.0, "rtd": 1.6}}))
    done = _compare(tmp_path, costs, *(["--mask-rate", compare_at] if compare_at else []))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{costs}: step costs timed at mask rate"), done.stderr[-2000:]
    # refused before any pretraining started: nothing written
    assert not (tmp_path / "out.json").exists() and not (tmp_path / "work" / "mlm_sop").exists()


def test_compare_refuses_a_file_without_ratios(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"settings": {}}))
    done = _compare(tmp_path, costs)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1] == f"{costs}: no ratio_to_mlm_sop; not a " \
        "--step-cost results file", done.stderr[-2000:]


def test_compare_accepts_step_costs_from_the_same_mask_rate(tmp_path):
    costs = tmp_path / "costs.json"
    costs.write_text(json.dumps({"settings": {"mask_rate": 0.4},
                                 "ratio_to_mlm_sop": {"mlm_sop": 1.0, "rtd": 1.4}}))
    done = _compare(tmp_path, costs, "--mask-rate", "0.4", "--objectives", "mlm_sop")
    # past the check, it stops at the missing data folder instead
    assert done.returncode != 0
    assert "step costs timed" not in done.stderr
    assert "no manifest" in done.stderr.strip().splitlines()[-1], done.stderr[-2000:]
