"""docs/reports/code/objectives.py: --compare refuses step costs timed at another mask rate, and
its task sampling keeps validation rows apart from the scored ones."""

import csv
import json
import os
import subprocess
import sys

import pytest
from conftest import load_script

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "objectives.py")


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


def _sample_task():
    return load_script("objectives").sample_task


def _write_task(folder, n_train, n_eval):
    folder.mkdir()
    for split, n in (("train", n_train), ("eval", n_eval)):
        with open(folder / f"{split}.csv", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([["text", "label"],
                                     *([f"{split} row {i}", str(i % 2)] for i in range(n))])


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [tuple(r) for r in csv.reader(f)][1:]


def test_validation_rows_come_from_eval_rows_outside_the_scored_sample(tmp_path):
    sample_task = _sample_task()
    _write_task(tmp_path / "task", 50, 40)
    plain = sample_task(str(tmp_path / "task"), str(tmp_path / "plain"), 20, 15)
    with_val = sample_task(str(tmp_path / "task"), str(tmp_path / "val"), 20, 15, 10)
    train, scored, val = (_rows(os.path.join(with_val, f"{s}.csv"))
                          for s in ("train", "eval", "validation"))
    # the train and eval samples are the ones a run without validation rows drew
    assert train == _rows(os.path.join(plain, "train.csv"))
    assert scored == _rows(os.path.join(plain, "eval.csv"))
    assert not os.path.exists(os.path.join(plain, "validation.csv"))
    assert (len(train), len(scored), len(val), len(set(val))) == (20, 15, 10, 10)
    everything = set(_rows(tmp_path / "task" / "eval.csv"))
    assert set(val) <= everything and not set(val) & set(scored)


def test_too_many_validation_rows_is_one_line_naming_the_file(tmp_path):
    sample_task = _sample_task()
    _write_task(tmp_path / "task", 50, 40)
    with pytest.raises(SystemExit) as error:
        sample_task(str(tmp_path / "task"), str(tmp_path / "out"), 20, 30, 11)
    message = str(error.value)
    assert message.startswith(f"{tmp_path / 'task'}/eval.csv: --validation-rows 11 needs")
    assert "it has 10" in message and "\n" not in message


def test_a_case_names_an_objective_with_changed_fields():
    objectives = load_script("objectives")
    assert objectives.parse_case("mlm") == ("mlm", {})
    assert objectives.parse_case("rtd:rtd_mlm_weight=1,embedding_sharing=gdes") == (
        "rtd", {"rtd_mlm_weight": 1, "embedding_sharing": "gdes"})
    with pytest.raises(SystemExit, match="'rtd_mlm' is not a PretrainConfig field"):
        objectives.parse_case("rtd:rtd_mlm=1")
    with pytest.raises(SystemExit, match="is not FIELD=VALUE"):
        objectives.parse_case("rtd:rtd_mlm_weight")
