"""Config number checks: NaN and out-of-range values stop a run before it
starts, named by their flag, on every command's config and where the flag
is parsed."""

import math
import subprocess
import sys

import pytest

from albert_keras.data.data_config import DataConfig
from albert_keras.drivers.distill_config import DistillConfig
from albert_keras.options import check_options
from albert_keras.options import in_interval
from albert_keras.options import option
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.training.pretrain_config import PretrainConfig

NAN = math.nan


def test_good_values_and_none_pass():
    check_options(PretrainConfig(learning_rate=None, rtd_weight=1e-3, weight_decay=0.0))
    # a rate of 0 steps nothing, which a test of --init relies on
    PretrainConfig(learning_rate=0.0).validate()
    FinetuneConfig(task="classify", learning_rate=0.0).validate()


@pytest.mark.parametrize("make, field, value", [
    # (NaN passed the old `x <= 0` style checks and failed inside a step)
    (PretrainConfig, "rtd_weight", NAN),
    (PretrainConfig, "rtd_weight", -1.0),
    (PretrainConfig, "rtd_mlm_weight", -0.5),
    (PretrainConfig, "learning_rate", -1e-3),
    (PretrainConfig, "learning_rate", NAN),
    (PretrainConfig, "weight_decay", -0.01),
    (PretrainConfig, "clip_norm", NAN),
    (PretrainConfig, "max_minutes", -1.0),
    (lambda **kw: FinetuneConfig(task="classify", **kw), "learning_rate", -1e-4),
    (lambda **kw: FinetuneConfig(task="classify", **kw), "weight_decay", NAN),
    (lambda **kw: FinetuneConfig(task="classify", **kw), "dropout", 1.0),
    (lambda **kw: FinetuneConfig(task="classify", **kw), "null_threshold", NAN),
    (DistillConfig, "temperature", NAN),
    (DistillConfig, "hidden_weight", NAN),
    (DistillConfig, "dropout", -0.1),
    (DataConfig, "short_seq_prob", 1.5),
    (DataConfig, "short_seq_prob", NAN),
])
def test_bad_numbers_are_refused_with_the_flag_named(make, field, value):
    """In Python the error names the argument; under the command line, the flag."""
    from albert_keras.options import command_line_names

    config = make(**{field: value})
    with pytest.raises(ValueError, match=f"^{field} must be"):
        config.validate()
    with command_line_names(), pytest.raises(ValueError,
                                             match=f"^--{field.replace('_', '-')} must be"):
        config.validate()


def test_cli_refuses_a_nan_rtd_weight_in_one_line(tmp_path):
    # before any data is read or anything is written
    done = subprocess.run(
        [sys.executable, "-m", "albert_keras_cli", "pretrain", "--objective", "rtd",
         "--rtd-weight", "nan", "--data", str(tmp_path / "data"),
         "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "albert-keras pretrain: error: argument --rtd-weight: must be at least 0, got nan "
        "(see albert-keras pretrain --help)"]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("valid, good, bad", [
    ("[0, 1)", [0, 0.5], [1, -0.1, NAN, math.inf]),
    ("(0, inf)", [1e-9, 1e9], [0, -1, math.inf, NAN]),
    ("[1, inf)", [1, 7], [0, -5]),
    ("(-inf, inf)", [-1e30, 0], [NAN, math.inf, -math.inf]),
])
def test_intervals(valid, good, bad):
    assert all(in_interval(v, valid) for v in good)
    assert not any(in_interval(v, valid) for v in bad)


def test_a_typo_in_an_interval_fails_at_declaration():
    with pytest.raises(ValueError, match="not an interval"):
        option(1, "x", valid="0..1")


@pytest.mark.parametrize("make, field, value", [
    (PretrainConfig, "precision", "float8"),
    (PretrainConfig, "objective", "clm"),
    (PretrainConfig, "embedding_sharing", "shared"),
    (FinetuneConfig, "task", "translate"),
    (FinetuneConfig, "truncate", "middle"),
    (DistillConfig, "precision", "fp16"),
])
def test_a_value_outside_its_choices_is_named_with_the_choices(make, field, value):
    with pytest.raises(ValueError, match=rf"^{field} must be one of .*, got '{value}'$"):
        make(**{field: value}).validate()
