import json
import os
import subprocess
import sys

import pytest

import albert_keras.training.strategy as strategy_module
from albert_keras.training.strategy import StrategyError
from albert_keras.training.strategy import describe_devices
from albert_keras.training.strategy import make_strategy


def test_no_tpu_is_a_clear_one_line_error():
    with pytest.raises(StrategyError, match="no TPU is reachable") as info:
        make_strategy("tpu")
    assert "\n" not in str(info.value)


def test_no_tpu_for_tensorflow_on_a_machine_with_chips_says_to_use_jax(monkeypatch):
    """Colab's and Kaggle's TPU runtimes: the chips are there, JAX holds them."""
    monkeypatch.setattr(strategy_module, "tpu_device_files", lambda: ["/dev/vfio/0"])
    with pytest.raises(StrategyError, match="this machine has TPU chips .*/dev/vfio/0.*"
                                            "KERAS_BACKEND=jax") as info:
        make_strategy("tpu")
    assert "\n" not in str(info.value)


def test_auto_and_cpu_fall_back_to_one_device():
    assert make_strategy("auto").num_replicas_in_sync == 1
    assert make_strategy("cpu").num_replicas_in_sync == 1
    with pytest.raises(StrategyError, match="strategy must be one of"):
        make_strategy("gpu-cluster")


def test_describe_devices_counts_what_tensorflow_sees():
    assert describe_devices(make_strategy("cpu")) == {
        "backend": "tensorflow", "hardware": "CPU", "devices": 1, "replicas": 1}


JAX_DEVICES = r"""
import json
from albert_keras.training.strategy import StrategyError, describe_devices, make_strategy
found = {name: describe_devices(make_strategy(name))
         for name in ("auto", "cpu", "data_parallel", "model_parallel")}
try:
    make_strategy("tpu")
except StrategyError as e:
    found["tpu"] = str(e)
print("RESULT " + json.dumps(found))
"""


def test_describe_devices_counts_jax_devices_and_the_batch_axis():
    """On JAX the devices are JAX's (a Colab TPU runtime's chips, whose
    TensorFlow sees none); model_parallel splits each batch over half of them."""
    env = {**os.environ, "KERAS_BACKEND": "jax",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    done = subprocess.run([sys.executable, "-c", JAX_DEVICES], capture_output=True, text=True,
                          env=env, timeout=300)
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, done.stderr[-2000:]
    found = json.loads(line[0][len("RESULT "):])
    cpu4 = {"backend": "jax", "hardware": "CPU", "devices": 4}
    assert found["auto"] == found["data_parallel"] == {**cpu4, "replicas": 4}
    assert found["model_parallel"] == {**cpu4, "replicas": 2}
    assert found["cpu"] == {**cpu4, "devices": 1, "replicas": 1}
    assert "--strategy auto trains data-parallel over every TPU chip" in found["tpu"]
