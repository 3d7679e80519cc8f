"""Two worker processes on 127.0.0.1 under MultiWorkerMirroredStrategy.

The workers run ``albert-keras pretrain --strategy multiworker`` with a
``TF_CONFIG`` each, as they would on two machines. One is killed with
SIGKILL mid-run: the other must stop with a one-line error, and the same
command on both must resume and finish with the weights of a one-process run
on the same global batch.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.helpers import SMALL

STEPS = 12
PRETRAIN_FLAGS = [
    "--steps", str(STEPS), "--steps-per-epoch", "2", "--warmup-steps", "1",
    "--batch-size", "8", "--eval-steps", "1", "--precision", "float32",
    "--model-overrides", json.dumps(SMALL),
]
# Every wait below is bounded; together they stay well under this.
WAIT = 300


def _free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def _env(**extra):
    return {**os.environ, "CI": "true", "TF_CPP_MIN_LOG_LEVEL": "3",
            "KERAS_BACKEND": "tensorflow", **extra}


def _pretrain_command(data_dir, out, *extra):
    return [sys.executable, "-m", "albert_keras_cli", "pretrain", "--data", data_dir,
            "--out", out, *PRETRAIN_FLAGS, *extra]


def _start_workers(data_dir, out, tmp_path, name):
    ports = _free_ports(2)
    cluster = {"worker": [f"127.0.0.1:{p}" for p in ports]}
    workers = []
    for index in range(2):
        tf_config = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        log = open(tmp_path / f"{name}-{index}.log", "w")  # noqa: SIM115 (closed below)
        proc = subprocess.Popen(
            _pretrain_command(data_dir, out, "--strategy", "multiworker"),
            stdout=log, stderr=subprocess.STDOUT, env=_env(TF_CONFIG=tf_config))
        workers.append((proc, log))
    return workers


def _finish(workers, tmp_path, name):
    codes = []
    for proc, log in workers:
        try:
            codes.append(proc.wait(timeout=WAIT))
        finally:
            if proc.poll() is None:
                proc.kill()
            log.close()
    logs = [(tmp_path / f"{name}-{i}.log").read_text() for i in range(2)]
    return codes, logs


def _weights(folder):
    from albert_keras.saving import load_model

    return load_model(os.path.join(folder, "pretrainer.keras")).get_weights()


@pytest.mark.sampled(keep=2, group="tf_distribute")  # CI: 2 of the tf.distribute runs per commit
def test_two_workers_survive_a_kill_and_match_one_process(data_dir, tmp_path):
    # One process, the same global batch of 8.
    one = str(tmp_path / "one")
    result = subprocess.run(_pretrain_command(data_dir, one), capture_output=True,
                            text=True, timeout=WAIT, env=_env())
    assert result.returncode == 0, result.stdout + result.stderr

    # Two workers (4 examples each per step); worker 1 dies after the first
    # checkpoint, 4 of 12 steps in.
    out = str(tmp_path / "two")
    workers = _start_workers(data_dir, out, tmp_path, "first")
    first_ckpt = os.path.join(out, "checkpoints", "ckpt-000002.keras")
    deadline = time.time() + WAIT
    while not os.path.exists(first_ckpt):
        assert time.time() < deadline, "no checkpoint appeared"
        assert all(p.poll() is None for p, _ in workers), "a worker ended early"
        time.sleep(0.2)
    workers[1][0].send_signal(signal.SIGKILL)
    codes, logs = _finish(workers, tmp_path, "first")
    assert codes[1] == -signal.SIGKILL
    assert codes[0] == 2, logs[0]
    errors = [line for line in logs[0].splitlines() if "error:" in line]
    assert len(errors) == 1, logs[0]
    assert "a worker was lost during training" in errors[0]
    assert "run the same command on every worker to resume" in errors[0]
    assert "Traceback" not in logs[0]
    assert not os.path.exists(os.path.join(out, "pretrainer.keras"))

    # The same command on both workers resumes from the chief's checkpoint.
    codes, logs = _finish(_start_workers(data_dir, out, tmp_path, "again"), tmp_path, "again")
    assert codes == [0, 0], logs
    assert "resuming from" in logs[0] and "resuming from" in logs[1]
    assert f"{STEPS} steps on this worker; the chief writes" in logs[1]
    metrics = json.loads(open(os.path.join(out, "metrics.json")).read())
    assert metrics["steps"] == STEPS

    for a, b in zip(_weights(one), _weights(out), strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5)
