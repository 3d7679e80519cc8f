"""What the peer benchmarks share: the child-process runner, the FLOP count of
ALBERT pretraining, and the machine's name.

Each measurement runs in a child process (one library, one backend, one
precision per process: Keras fixes its backend at import, and a library
imported for one case must not slow the next). Free of TensorFlow, so the
GPU machines, which have none, can run it.
"""

import importlib.util
import json
import os
import subprocess
import sys


def _package_module(name):
    """A module of the package loaded from its file alone: importing
    ``albert_keras`` would load Keras into the parent process, which runs
    no model."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "albert_keras",
                        f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"_albert_keras_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# the one reader of the CPU's name and features
cpu_name = _package_module("cpu").cpu_name
cpu_with_features = _package_module("cpu").cpu_with_features

VOCAB = 30000
PREDICTIONS = 20


def run_child(code, *argv, timeout=None):
    """Runs ``python -c code argv...``; returns the dict it prints after
    ``RESULT ``, or ``{"error": its last stderr line}``."""
    try:
        done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode or line is None:
        return {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:200]}
    return json.loads(line[len("RESULT "):])


def training_flops_per_token(hidden, embedding, layers, intermediate, seq,
                             last_block_rows=None):
    """Training FLOPs per token of ALBERT pretraining: 3x the forward matmuls
    (forward and two backward).

    Args:
        hidden: H.
        embedding: E.
        layers: blocks run (shared or not).
        intermediate: the FFN width.
        seq: the sequence length.
        last_block_rows: the rows the last block computes, when fewer than
            ``seq`` (ours computes only ``[CLS]`` and the masked positions
            there; its keys and values still cover every position).
    """
    H, E, S = hidden, embedding, seq
    per_layer = 2 * (4 * H * H + 2 * H * intermediate) + 2 * 2 * S * H  # dense + scores/context
    forward = layers * per_layer + 2 * E * H  # + the E -> H projection
    if last_block_rows is not None:
        cut = last_block_rows / S
        last = 2 * 2 * H * H + cut * (2 * (2 * H * H + 2 * H * intermediate) + 2 * 2 * S * H)
        forward += last - per_layer
    forward += PREDICTIONS / S * 2 * (H * E + E * VOCAB)  # the MLM head at the masked rows
    return 3 * forward


