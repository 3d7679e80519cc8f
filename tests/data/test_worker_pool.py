import os
import subprocess
import sys
import time

import pytest

# A command whose two workers are stuck (an idle worker ends on its own when
# its queue closes; a stuck one, as a worker once hung on a lock, does not)
# and which ends without stopping them, as an interrupted command can.
_ABANDON = """
import os, sys, time
from albert_keras.data import worker_pool
from albert_keras.data.worker_pool import _pool, start_method
if sys.argv[1] == "forkserver":  # a started runtime, without its start-up time
    worker_pool._runtime_started = lambda: True
assert start_method() == sys.argv[1], start_method()
pool = _pool(2, {"run": 1})
for _ in range(2):
    pool.apply_async(time.sleep, (600,))
time.sleep(1)
print(" ".join(str(p.pid) for p in pool._pool), flush=True)
os._exit(0)
"""


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's parent-death signal is Linux's")
@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_end_with_the_process_that_made_them(method):
    # the workers would hold the pipes open: read the one line, then wait
    proc = subprocess.Popen([sys.executable, "-c", _ABANDON, method], stdout=subprocess.PIPE,
                            text=True, start_new_session=True)
    pids = [int(p) for p in proc.stdout.readline().split()]
    proc.wait(timeout=120)
    proc.stdout.close()
    assert len(pids) == 2 and proc.returncode == 0, (pids, proc.returncode)
    deadline = time.time() + 20
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    left = [p for p in pids if _alive(p)]
    for p in left:
        os.kill(p, 9)
    assert not left, f"workers {left} outlived the process that made them"


def test_forkserver_workers_hold_the_state_and_keep_the_order(monkeypatch):
    from albert_keras.data import worker_pool

    monkeypatch.setattr(worker_pool, "_runtime_started", lambda: True)
    monkeypatch.setattr(worker_pool.multiprocessing, "get_context",
                        _only_forkserver(worker_pool.multiprocessing.get_context))
    assert worker_pool.start_method() == "forkserver"
    seen = []
    out = worker_pool.parallel(_scaled, range(20), {"scale": 3}, 2,
                               lambda done, result: seen.append(done))
    assert out == [3 * i for i in range(20)]
    assert seen == list(range(1, 21))


def _scaled(value):
    from albert_keras.data.worker_pool import WORKER

    return WORKER["scale"] * value


def _only_forkserver(get_context):
    def checked(method):
        assert method == "forkserver", method
        return get_context(method)
    return checked


def test_a_process_that_ran_tensorflow_does_not_fork():
    code = ("import tensorflow as tf; from albert_keras.data.worker_pool import start_method; "
            "print(start_method()); tf.constant(1) + 1; print(start_method())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    assert out == ["fork", "forkserver"]
