"""ProgressLog: plain lines at every multiple of ``every`` steps and at the end."""

import logging
import re

import keras
import numpy as np
import pytest

from albert_keras.training.callbacks import ProgressLog


@pytest.mark.parametrize("steps_per_execution", [1, 2])
def test_progress_lines_every_n_steps_and_at_the_end(caplog, steps_per_execution):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse", steps_per_execution=steps_per_execution)
    x, y = np.ones((10, 3), "float32"), np.zeros((10, 1), "float32")
    with caplog.at_level(logging.INFO, logger="albert_keras"):
        model.fit(x, y, batch_size=1, epochs=1, verbose=0,
                  callbacks=[ProgressLog(10, every=3, tokens_per_step=128)])
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("albert_keras")]
    # every line but the last gives the time left (at the speed so far)
    assert all(re.search(r", about [0-9.]+ (s|min|h) left\)$", line) for line in lines[:-1])
    assert lines[-1].endswith("tokens/s)")
    steps = [int(line.split()[1].split("/")[0]) for line in lines]
    # with chunks of 2 steps, the multiple of 3 inside a chunk logs at its end
    expected = [3, 6, 9, 10] if steps_per_execution == 1 else [4, 6, 10]
    assert steps == expected
    assert all("/10: loss " in line and "tokens/s" in line for line in lines)
    assert not any("\r" in line or "\x1b" in line for line in lines)


def test_the_first_line_says_what_the_whole_run_takes(caplog):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    x, y = np.ones((8, 3), "float32"), np.zeros((8, 1), "float32")
    with caplog.at_level(logging.INFO, logger="albert_keras"):
        model.fit(x, y, batch_size=1, epochs=1, verbose=0,
                  callbacks=[ProgressLog(8, every=2, announce=True)])
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("albert_keras")]
    said = [line for line in lines if line.startswith("at this speed the run takes about")]
    assert len(said) == 1 and lines.index(said[0]) == 1  # right after the first step line
    assert "on this machine (" in said[0]
