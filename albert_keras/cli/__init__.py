"""The ``albert-keras`` command: flags in, one library function per command.

Each module here parses one group of commands and calls the library; the
work itself lives in the package (``training.pipeline``, ``tasks``,
``export``, ``data``, ``convert``), where tests and notebooks call it too.
"""

import argparse
import json
import logging
import os
import re
import subprocess
import sys

import albert_keras
from albert_keras.cli import data_commands
from albert_keras.cli import export_commands
from albert_keras.cli import model_commands
from albert_keras.cli import pretrain_command
from albert_keras.cli import task_commands
from albert_keras.cli.errors import report
from albert_keras.cli.stop_signal import Terminated
from albert_keras.cli.stop_signal import stop_on_sigterm
from albert_keras.cli.stop_signal import unwound
from albert_keras.native_output import stderr_silenced
from albert_keras.options import command_line_names


def _add_backend_flag(p):
    p.add_argument("--backend", choices=("tensorflow", "jax", "torch"), default=None,
                   help="the Keras backend for the model (default: Keras' own choice: "
                        "$KERAS_BACKEND, else keras.json, else tensorflow); the data "
                        "pipeline is tf.data on every backend")


def configured_backend():
    """The backend Keras will pick, read without importing Keras.

    Keras' rules: ``KERAS_BACKEND``, else ``backend`` in ``keras.json`` under
    ``KERAS_HOME`` (default ``~/.keras``), else TensorFlow.
    """
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as f:
            return json.load(f).get("backend", "tensorflow")
    except (OSError, ValueError, AttributeError):
        return "tensorflow"


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: the usage block is for ``--help``."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser():
    from albert_keras import __version__

    parser = _Parser(prog="albert-keras", description="ALBERT for TensorFlow / Keras 3.")
    parser.add_argument("--version", action="version", version=f"albert-keras {__version__}")
    parser.add_argument("--verbose", action="store_true",
                        help="show TensorFlow's start-up and C++ log lines (hidden by default)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    model_commands.add_parsers(sub)
    data_commands.add_parsers(sub)
    pretrain_command.add_parser(sub, _add_backend_flag)
    task_commands.add_parsers(sub, _add_backend_flag)
    export_commands.add_parsers(sub)
    for command in sub.choices.values():
        # also after the command (`albert-keras export ... --verbose`), where
        # users put it; SUPPRESS keeps a --verbose given before the command
        command.add_argument("--verbose", action="store_true", default=argparse.SUPPRESS,
                             help="as before the command: TensorFlow's log lines, and the "
                                  "traceback of an error")
    return parser


def _run_on_backend(backend, argv):
    """Runs this command again in a process with ``KERAS_BACKEND=backend``.

    Keras fixes its backend when it is first imported, which has already
    happened here, so a new process is the only way to switch.
    """
    keras = sys.modules.get("keras")
    current = keras.backend.backend() if keras is not None else configured_backend()
    if backend is None or backend == current:
        return None
    argv = list(sys.argv[1:] if argv is None else argv)
    env = {**os.environ, "KERAS_BACKEND": backend}
    return subprocess.call([sys.executable, "-m", "albert_keras_cli", *argv], env=env)


def _import_tensorflow(verbose):
    """Imports TensorFlow now, quietly unless ``verbose``.

    An import error still shows: it propagates after stderr is back.
    """
    if "tensorflow" in sys.modules:
        return
    # The command's own process only: TensorFlow's C++ start-up lines (CUDA
    # probing, oneDNN notes) are noise to a user of the command line.
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0" if verbose else "3"
    with stderr_silenced(enabled=not verbose):
        import tensorflow  # noqa: F401


def _show_progress(verbose=False):
    """The library's progress lines go to stdout, as the command's own output.

    Only the ``albert_keras`` loggers: TensorFlow's and Keras' warnings keep
    going where they did (stderr), so stdout stays parseable (JSONL).
    """
    logger = logging.getLogger("albert_keras")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
    logger.propagate = False


_NEGATIVE_LIST = re.compile(r"^-\d+(\.\d+)?(,-?\d+(\.\d+)?)*$")


def _join_negative_values(argv):
    """``--layers -2,-1`` -> ``--layers=-2,-1``.

    argparse reads a value that starts with ``-`` and is not a plain number
    (``-2,-1``) as a flag; no flag of ours looks like that, so such a value
    belongs to the flag before it.
    """
    out = []
    for arg in argv:
        if (_NEGATIVE_LIST.match(arg) and out and out[-1].startswith("--")
                and "=" not in out[-1]):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv=None):
    argv = _join_negative_values(sys.argv[1:] if argv is None else list(argv))
    args = build_parser().parse_args(argv)
    switched = _run_on_backend(getattr(args, "backend", None), argv)
    if switched is not None:
        return switched
    stop_on_sigterm()  # timeout, kill, schedulers: the same clean stop as Ctrl-C
    _import_tensorflow(args.verbose)
    albert_keras.load_all()
    _show_progress(args.verbose)
    try:
        with command_line_names():  # errors name flags, not Python arguments
            return args.func(args)
    except KeyboardInterrupt as e:
        unwound()
        terminated = isinstance(e, Terminated)
        print(f"albert-keras {args.command}: {'terminated' if terminated else 'interrupted'}",
              file=sys.stderr)
        return 143 if terminated else 130
    except Exception as e:  # noqa: BLE001  (every error is reported, as input or as a bug)
        return report(e, args.command, args.verbose)
