"""The command line starts fast and quiet: help without TensorFlow, no C++ noise."""

import os
import subprocess
import sys

import pytest

_CLI = os.path.join(os.path.dirname(sys.executable), "albert-keras")


def test_every_help_builds_without_importing_tensorflow_or_keras():
    script = (
        "import sys\n"
        "import albert_keras_cli\n"
        "from albert_keras.cli import build_parser\n"
        "parser = build_parser()\n"
        "def walk(p):\n"
        "    p.format_help()\n"
        "    for a in p._actions:\n"
        "        if isinstance(a.choices, dict):\n"
        "            for sub in a.choices.values():\n"
        "                walk(sub)\n"
        "walk(parser)\n"
        "print(sorted(m for m in ('tensorflow', 'keras', 'jax', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"


def test_top_level_help_lists_the_commands_and_verbose():
    result = subprocess.run([_CLI, "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stderr == ""
    for command in ("pretrain", "finetune", "export", "bench", "--verbose"):
        assert command in result.stdout


@pytest.mark.parametrize("verbose", [False, True])
def test_tensorflow_start_up_lines_only_with_verbose(verbose, tmp_path):
    # `presets` imports TensorFlow through the CLI (quietly unless --verbose)
    # and prints a table; on a machine without a GPU TensorFlow announces its
    # CUDA search on stderr.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    argv = [_CLI] + (["--verbose"] if verbose else []) + ["presets"]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env,
                            cwd=tmp_path)
    assert result.returncode == 0 and "albert_tiny" in result.stdout
    # quiet: nothing at all; verbose: TensorFlow's own start-up lines pass
    assert (result.stderr != "") == verbose


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_goes_before_or_after_the_command(where):
    from albert_keras.cli import build_parser

    argv = ["--verbose", "presets"] if where == "before" else ["presets", "--verbose"]
    assert build_parser().parse_args(argv).verbose is True
    assert build_parser().parse_args(["presets"]).verbose is False
