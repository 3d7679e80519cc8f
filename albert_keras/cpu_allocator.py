"""How the process allocates memory on the CPU, set before the work starts.

A training step frees and allocates the same large buffers (activations,
gradients, the packing buffers of the matrix kernels) every time. With
glibc's defaults a block over its mmap threshold (128 KiB, adapting up to
32 MiB) is mapped fresh from the kernel and unmapped when freed, and the
heap's free top is returned above 128 KiB, so each step pays page faults
and zeroing again: on a 2-core AMD EPYC (oneDNN capped at AVX2), fine-tuning
MiniLM-L6's shape for one epoch of 1,500 rows took 1.83M minor page faults,
sys 7.6 s and 45.3 s in all; with the heap kept (the settings below, given
as glibc's environment variables) 0.46M faults, sys 3.3 s and 40.1 s. Users
on other machines saw the kernel take a third of the process's cycles.

Two settings, each applied only where the user set nothing:

* glibc's ``mallopt``: blocks up to 32 MiB come from the heap, and up to
  1 GiB of freed heap is kept for the next step (what the process keeps is
  its peak, as a framework's caching allocator keeps it). Applied through
  ``ctypes`` at import, so it works whenever this module loads; skipped
  when any ``MALLOC_*`` variable of these settings is set, or off glibc.
* TensorFlow's BFC allocator for the CPU (``TF_CPU_ALLOCATOR_USE_BFC=true``),
  which reuses freed tensors; read by TensorFlow's C++ code once, so only
  set before TensorFlow loads. It took a whole fine-tune from 110.7 to
  66.1 s on a user's AVX2 machine (sys 52 -> 13 s); on the EPYC above it
  changed nothing measurable. ``TF_CPU_ALLOCATOR_USE_BFC=false`` keeps
  TensorFlow's default.

The numbers a model computes do not change.
"""

import ctypes
import os
import platform
import sys

BFC_VARIABLE = "TF_CPU_ALLOCATOR_USE_BFC"
# glibc's mallopt parameters (malloc.h) and the values set; mallopt takes
# an int, so the trim threshold stays under 2 GiB
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MALLOC_SETTINGS = {"MALLOC_MMAP_THRESHOLD_": (M_MMAP_THRESHOLD, 32 << 20),
                   "MALLOC_TRIM_THRESHOLD_": (M_TRIM_THRESHOLD, 1 << 30),
                   "MALLOC_TOP_PAD_": (M_TOP_PAD, 64 << 20)}


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


def keep_the_heap(environ=None, libc=None):
    """Sets glibc's mmap threshold, trim threshold and top pad (above)
    unless the user set any of them; returns the settings applied.

    Args:
        environ: where the user's ``MALLOC_*`` variables are looked for.
        libc: the C library (default: this process's, on glibc only).

    Example:
    >>> keep_the_heap({"MALLOC_TOP_PAD_": "0"})
    {}
    """
    environ = os.environ if environ is None else environ
    if any(name in environ for name in MALLOC_SETTINGS):
        return {}
    if libc is None:
        if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
            return {}
        libc = ctypes.CDLL(None)
    applied = {}
    for name, (parameter, value) in MALLOC_SETTINGS.items():
        if libc.mallopt(ctypes.c_int(parameter), ctypes.c_int(value)) == 1:  # 1: done
            applied[name] = value
    return applied
