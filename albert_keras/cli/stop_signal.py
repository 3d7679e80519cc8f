"""SIGTERM as a clean stop: what ``timeout``, ``kill``, schedulers and
container stops send ends a command as Ctrl-C does (nothing half-written, a
resumable checkpoint kept).

An exception raised by a signal handler is lost when the signal lands in a
garbage-collection callback or a ``__del__`` (JAX, which TensorFlow imports
where it is installed, registers such a callback): the command would go on
training. So the first SIGTERM also starts a watchdog thread that delivers
it again every few seconds until the command has unwound.
"""

import _thread
import signal
import sys
import threading
import time


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be."""


# "requested": a SIGTERM came; "unwound": the command caught it and is ending.
_STOP = {"requested": False, "unwound": False}
_REPEAT_SECONDS = 5.0


def stop_on_sigterm():
    """Makes SIGTERM raise ``Terminated`` in the main thread from now on.

    Example:
    >>> stop_on_sigterm()  # doctest: +SKIP
    """
    signal.signal(signal.SIGTERM, _raise_terminated)
    sys.unraisablehook = _quiet_lost_stops


def unwound():
    """Says the command caught the stop and is ending: the watchdog stops."""
    _STOP["unwound"] = True


def _raise_terminated(signum, frame):
    if not _STOP["requested"]:
        _STOP["requested"] = True
        threading.Thread(target=_repeat_until_unwound, daemon=True).start()
    raise Terminated()


def _quiet_lost_stops(unraisable, default=sys.unraisablehook):
    """A SIGTERM lost in a callback is delivered again; no traceback for it."""
    if not isinstance(unraisable.exc_value, Terminated):
        default(unraisable)


def _repeat_until_unwound():
    while True:
        time.sleep(_REPEAT_SECONDS)
        if _STOP["unwound"]:
            return
        _thread.interrupt_main(signal.SIGTERM)
