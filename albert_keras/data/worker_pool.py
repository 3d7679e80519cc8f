"""The worker processes of ``data create``: each holds the run's state.

The functions a pool runs live in the modules that use them; they read the
state from ``WORKER``, which ``parallel`` fills in each process (inherited,
not pickled, with fork).
"""

import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys

# the state of the run, in each worker (and in the parent with one worker)
WORKER = {}


def _init_worker(state):
    # A forked worker inherits the command line's SIGTERM handler, which
    # raises instead of exiting: pool.terminate() (its SIGTERM) would then
    # never end the worker, and the stopping run would hang. Workers die on
    # SIGTERM and leave Ctrl-C to the parent, which terminates them.
    if multiprocessing.parent_process() is not None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if hasattr(signal, "pthread_sigmask"):  # held since the fork (see _pool)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        _die_with_parent()
    WORKER.clear()
    WORKER.update(state)


def _die_with_parent():
    """On Linux, the kernel kills this worker when the process that forked
    it ends, however it ends. A stopped command could otherwise leave a
    worker behind that holds its stderr open: once in some 1,100 CI tests
    under load, after a SIGTERM, with no reproduction outside it. Python's
    standard library has no call for it (``prctl(PR_SET_PDEATHSIG)``)."""
    if not sys.platform.startswith("linux"):
        return
    parent = multiprocessing.parent_process().pid
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent ended before the call above
        os._exit(1)


def _pool(workers, state):
    """A pool of ``workers`` processes holding ``state`` (inherited with fork).

    SIGTERM is held while the workers are forked, so none can take it with
    the inherited handler before ``_init_worker`` gives it the default
    action: one that did raised the command's stop inside the worker's
    start-up, which then hung on a lock for good, holding the command's
    stderr after the stopped command had ended (1 run in 3 on a 2-core EPYC).
    A SIGTERM sent to the command meanwhile arrives when the pool is made.
    """
    context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
    if not hasattr(signal, "pthread_sigmask"):
        return context.Pool(workers, _init_worker, (state,))
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        return context.Pool(workers, _init_worker, (state,))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def parallel(fn, tasks, state, workers, progress=None):
    """``map(fn, tasks)`` in ``workers`` processes that hold ``state``.

    With fork (Linux, macOS with fork) the state is inherited, not pickled.
    ``progress(done_tasks, result)`` is called as each result arrives.
    """
    results = []
    if workers <= 1:
        _init_worker(state)
        stream = map(fn, tasks)
    else:
        pool = _pool(workers, state)
        stream = pool.imap(fn, tasks)  # in order, as they complete
    try:
        for result in stream:
            results.append(result)
            if progress:
                progress(len(results), result)
    finally:
        if workers > 1:
            pool.terminate()
    return results
