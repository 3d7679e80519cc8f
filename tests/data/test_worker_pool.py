import os
import subprocess
import sys
import time

import pytest

# A command whose two workers are stuck (an idle worker ends on its own when
# its queue closes; a stuck one, as a worker once hung on a lock, does not)
# and which ends without stopping them, as an interrupted command can.
_ABANDON = """
import os, time
from albert_keras.data.worker_pool import _pool
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
def test_workers_end_with_the_process_that_made_them():
    # the workers would hold the pipes open: read the one line, then wait
    proc = subprocess.Popen([sys.executable, "-c", _ABANDON], stdout=subprocess.PIPE,
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
