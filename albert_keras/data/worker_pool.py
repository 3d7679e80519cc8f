"""The worker processes of ``data create``: each holds the run's state.

The functions a pool runs live in the modules that use them; they read the
state from ``WORKER``, which ``parallel`` fills in each process (inherited,
not pickled, with fork; pickled with forkserver).
"""

import ctypes
import ctypes.util
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading

# the state of the run, in each worker (and in the parent with one worker)
WORKER = {}


def start_method():
    """How workers start: ``fork`` (the state inherited, no pickling), or
    ``forkserver`` where fork is unsafe (``spawn`` off POSIX).

    Fork copies only the calling thread: a lock that a thread of
    TensorFlow's (or JAX's, torch's) runtime held at that moment stays held
    in the child for good. A CI run hung that way, two forked workers of a
    test process in futex waits. So a process whose runtime has started
    (it ran an op) forks its workers from a fresh server process instead
    (Python 3.14's default), which imports the worker functions once; the
    state is pickled. On the built-in corpus with 2 workers that costs 21 s
    against fork's 16 s (spawning each worker: 25 s), so a command that has
    run no op, as ``data create``, still forks.
    """
    if os.name != "posix":
        return "spawn"
    return "forkserver" if _runtime_started() else "fork"


def _runtime_started():
    """Whether TensorFlow's, JAX's or torch's runtime (and its threads) may
    have started in this process. The libraries have no public call for it;
    their modules are read where loaded (a name that moved counts as
    started: forkserver is always safe)."""
    tf_context = sys.modules.get("tensorflow.python.eager.context")
    jax_backends = sys.modules.get("jax._src.xla_bridge")
    try:
        if tf_context is not None and tf_context.context_safe() is not None:
            return True
        if jax_backends is not None and jax_backends._backends:
            return True
    except AttributeError:
        return True
    return "torch" in sys.modules


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
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    parent = multiprocessing.parent_process()
    if not parent.is_alive():  # it ended before the call above
        os._exit(1)
    if os.getppid() != parent.pid:
        # Forked by a fork server, which outlives the command while any of
        # its children holds its pipe: a thread ends this worker when the
        # command ends.
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()


def _exit_with(parent):
    multiprocessing.connection.wait([parent.sentinel])
    os._exit(1)


def _pool(workers, state, preload=()):
    """A pool of ``workers`` processes holding ``state`` (see ``start_method``;
    a fork server first imports the modules ``preload``).

    SIGTERM is held while the workers are forked, so none can take it with
    the inherited handler before ``_init_worker`` gives it the default
    action: one that did raised the command's stop inside the worker's
    start-up, which then hung on a lock for good, holding the command's
    stderr after the stopped command had ended (1 run in 3 on a 2-core EPYC).
    A SIGTERM sent to the command meanwhile arrives when the pool is made.
    """
    method = start_method()
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(list(preload))
    if not hasattr(signal, "pthread_sigmask"):
        return context.Pool(workers, _init_worker, (state,))
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        return context.Pool(workers, _init_worker, (state,))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def parallel(fn, tasks, state, workers, progress=None):
    """``map(fn, tasks)`` in ``workers`` processes that hold ``state``.

    With fork the state is inherited, not pickled; with spawn, pickled once
    per worker.
    ``progress(done_tasks, result)`` is called as each result arrives.
    """
    results = []
    if workers <= 1:
        _init_worker(state)
        stream = map(fn, tasks)
    else:
        pool = _pool(workers, state, [fn.__module__])  # the server imports it once
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
