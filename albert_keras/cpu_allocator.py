"""TensorFlow's CPU allocator, chosen before TensorFlow loads.

TensorFlow's default CPU allocator takes every large buffer fresh from the
operating system and gives it back when the op is done, so each training
step maps, zeroes (page faults) and unmaps its activations and gradients
again: on a 2-core AMD EPYC with AVX2 only, 37% of a MiniLM fine-tune's
cycles went to the kernel (sys 55 s against user 111 s). TensorFlow's own
BFC allocator for the CPU (``TF_CPU_ALLOCATOR_USE_BFC``, read once when
TensorFlow creates its CPU allocator) keeps the freed buffers and hands them
out again; it grows as needed and caps at ``TF_CPU_BFC_MEM_LIMIT_IN_MB``
(TensorFlow's default: 64 GiB). The numbers a model computes do not change.

The variable is read by TensorFlow's C++ code when it loads, so it must be
set before the first ``import tensorflow``: the ``albert-keras`` command
and ``import albert_keras`` both call :func:`use_bfc_allocator` first. A
value the user set (``TF_CPU_ALLOCATOR_USE_BFC=false`` turns it off) is
never replaced, and once TensorFlow is loaded nothing is set (it would not
apply, and would mislead child processes' readers of the environment).
"""

import os
import sys

BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"


def use_bfc_allocator(environ=None, modules=None):
    """Asks TensorFlow for its BFC CPU allocator, if it is not loaded yet.

    Args:
        environ: the environment to set (default: ``os.environ``).
        modules: the loaded modules (default: ``sys.modules``); nothing is
            set when ``tensorflow`` is among them.

    Returns:
        Whether the variable says ``true`` now (set here or by the user).

    Example:
    >>> env = {}
    >>> use_bfc_allocator(env, modules={})
    True
    >>> env
    {'TF_CPU_ALLOCATOR_USE_BFC': 'true'}
    >>> use_bfc_allocator({"TF_CPU_ALLOCATOR_USE_BFC": "false"}, modules={})
    False
    """
    environ = os.environ if environ is None else environ
    modules = sys.modules if modules is None else modules
    if BFC_VARIABLE not in environ and "tensorflow" not in modules:
        environ[BFC_VARIABLE] = "true"
    return environ.get(BFC_VARIABLE, "").strip().lower() in ("true", "1")
