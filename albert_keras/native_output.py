"""Silencing what native libraries write straight to file descriptor 2.

TensorFlow's start-up lines (the absl notice, CUDA probing) and LiteRT's
"INFO: Created TensorFlow Lite XNNPACK delegate for CPU." are written by C++
to the descriptor itself, before or beside any Python log level, so only
redirecting the descriptor hides them.
"""

import contextlib
import os
import sys


@contextlib.contextmanager
def stderr_silenced(enabled=True):
    """Sends file descriptor 2 to ``/dev/null`` for the duration (when ``enabled``).

    An exception raised inside still propagates; Python's own messages
    written after the block show as usual.

    Example:
    >>> with stderr_silenced():
    ...     print("still on stdout")
    still on stdout
    """
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream: nothing to hide
        fd = None
    if not enabled or fd is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, fd)
        os.close(saved)
        os.close(devnull)

