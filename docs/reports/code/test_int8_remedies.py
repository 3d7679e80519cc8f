"""docs/reports/code/int8_remedies.py on the tiny classifier: a row per
variant asked for, each validated, the float layers in the file."""

import json

from conftest import load_script


def test_each_variant_is_measured(classifier_folder, task_files, tmp_path):
    script = load_script("int8_remedies")
    out = tmp_path / "remedies.json"
    only = ["none", "int8 dense, per-tensor", "int8 + 2 float layers"]
    script.main([classifier_folder, "--train", task_files["cls_train"], "--eval",
                 task_files["cls_eval"], "--only", *only, "--runs", "2", "--out", str(out)])
    result = json.loads(out.read_text())
    assert [r["variant"] for r in result["rows"]] == only
    assert all(r["validated"] and r["examples"] == 16 for r in result["rows"]), result["rows"]
    sizes = {r["variant"]: r["size_bytes"] for r in result["rows"]}
    assert sizes["int8 dense, per-tensor"] < 0.75 * sizes["none"]  # int8 weights
    assert result["rows"][2]["int8_float_layers"] == 2 and result["cpu"]
