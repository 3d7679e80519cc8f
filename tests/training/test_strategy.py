import pytest

from albert_keras.training.strategy import StrategyError
from albert_keras.training.strategy import make_strategy


def test_no_tpu_is_a_clear_one_line_error():
    with pytest.raises(StrategyError, match="no TPU is reachable") as info:
        make_strategy("tpu")
    assert "\n" not in str(info.value)


def test_auto_and_cpu_fall_back_to_one_device():
    assert make_strategy("auto").num_replicas_in_sync == 1
    assert make_strategy("cpu").num_replicas_in_sync == 1
    with pytest.raises(StrategyError, match="strategy must be one of"):
        make_strategy("gpu-cluster")
