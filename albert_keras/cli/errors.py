"""How the command reports an exception: input errors in one line, bugs in full.

An input error is one our own code raised about what it was given (a
``ValueError`` or ``RuntimeError`` whose innermost frame is in albert-keras:
a bad flag, file, record or config), or one the system raised about a file
(``OSError``: missing, unreadable, disk full; a file that is not JSON or
not text; TensorFlow's missing file, corrupt record or exhausted memory).
It becomes one line and exit
status 2; ``--verbose`` prints its traceback too. Anything else (an
exception from inside Keras, TensorFlow or NumPy, a ``TypeError``, a
``KeyError``) is a bug: its traceback is always printed, with a line that
says so, and the exit status is 1.
"""

import json
import os
import sys
import traceback

from albert_keras.cli.flags import CliError


def _our_folders():
    """The folders whose ``raise`` statements speak to the user: the
    package and the export package (installed as ``albert_keras.export``)."""
    folders = []
    for name in ("albert_keras", "albert_keras.export"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            folders.append(os.path.dirname(os.path.abspath(module.__file__)) + os.sep)
    return tuple(folders)


def raised_by_us(error):
    """Whether the innermost frame of ``error``'s traceback is our code."""
    tb = error.__traceback__
    if tb is None:
        return True  # raised without a frame: built by us and raised at once
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = os.path.abspath(tb.tb_frame.f_code.co_filename)
    return path.startswith(_our_folders()) or os.path.basename(path) == "albert_keras_cli.py"


# TensorFlow's errors about files and memory (it raises them from inside
# tf.data and its file system): about the input or the machine, not a bug.
_TENSORFLOW_INPUT_ERRORS = ("NotFoundError", "DataLossError", "PermissionDeniedError",
                            "ResourceExhaustedError")


def is_input_error(error):
    """Whether ``error`` is about the command's input (see the module's text)."""
    # a file that is not JSON or not text, wherever it was parsed
    if isinstance(error, (CliError, OSError, MemoryError, json.JSONDecodeError, UnicodeError)):
        return True
    if (type(error).__module__.startswith("tensorflow")
            and type(error).__name__ in _TENSORFLOW_INPUT_ERRORS):
        return True
    return isinstance(error, (ValueError, RuntimeError)) and raised_by_us(error)


def report(error, command, verbose):
    """Prints ``error`` as the command's message; returns the exit status.

    Example:
    >>> report(ValueError("train.csv:3: no label"), "finetune", False)  # doctest: +SKIP
    2
    """
    lines = str(error).strip().splitlines()
    first = " ".join(lines[0].split()) if lines else type(error).__name__
    if isinstance(error, MemoryError):
        first = "out of memory" + (f" ({first})" if lines else "")
    if is_input_error(error):
        if verbose:  # the traceback too, for a report
            traceback.print_exc()
        print(f"albert-keras {command}: error: {first}", file=sys.stderr)
        return 2
    traceback.print_exc()
    print(f"albert-keras {command}: internal error: {type(error).__name__}: {first[:300]} "
          "(a bug in albert-keras, or in a library it calls: please report it with the "
          "traceback above)", file=sys.stderr)
    return 1
