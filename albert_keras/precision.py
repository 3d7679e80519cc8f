"""``--precision auto``: the Keras dtype policy that is fast on this machine.

bfloat16 halves memory traffic on TPUs, on GPUs from Ampere on and on CPUs
with native bf16 instructions (AVX512-BF16, AMX). A CPU without them runs
bf16 matmuls through conversions to float32: on a 2-core AVX2 EPYC an
``albert_tiny`` training step ran at 0.52x the float32 speed in
``mixed_bfloat16`` (``benchmarks/pretrain_throughput.py``). So ``auto``
picks float32 there.

The JAX backend on a CPU gets float32 even with native bf16: XLA's CPU
compiler (jax 0.10) does not use those instructions. On a 2-core Xeon with
AMX a 2048 x 2048 matmul ran at 0.30 TFLOP/s in bf16 and 0.34 in float32
under ``jax.jit`` (TensorFlow 1.52 and 0.39, torch 2.78 and 0.44;
``benchmarks/cpu_matmul.py``), and a MobileBERT training step at 8 x 128 ran
1.2x faster in float32 than in ``mixed_bfloat16`` (docs/benchmarks.md,
"MobileBERT training step"), while TensorFlow's and torch's were faster in bf16.
"""

import contextlib

from albert_keras.cpu import CPUINFO
from albert_keras.cpu import cpu_flags

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
PRECISION_CHOICES = ("auto",) + PRECISIONS

# /proc/cpuinfo flags of x86 CPUs that compute bf16 dot products natively.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_has_native_bf16(cpuinfo=CPUINFO):
    """Whether the CPU lists a native bf16 instruction set (Linux x86 only).

    Args:
        cpuinfo: as ``cpu_flags``'s.

    Example:
    >>> cpu_has_native_bf16("/no/such/file")
    False
    """
    return bool(cpu_flags(cpuinfo) & set(NATIVE_BF16_FLAGS))


def _accelerator_precision():
    """``mixed_bfloat16``/``mixed_float16`` for a TPU or GPU on the backend, else None."""
    # Imported here: the command line reads PRECISION_CHOICES without a backend.
    import keras

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        if tf.config.list_logical_devices("TPU"):
            return "mixed_bfloat16"
        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            major = (details.get("compute_capability") or (8, 0))[0]
            return "mixed_bfloat16" if major >= 8 else "mixed_float16"
    elif backend == "jax":
        import jax

        device = jax.devices()[0]
        if device.platform == "tpu":
            return "mixed_bfloat16"
        if device.platform == "gpu":
            major = int(str(getattr(device, "compute_capability", "8.0")).split(".")[0])
            return "mixed_bfloat16" if major >= 8 else "mixed_float16"
    elif backend == "torch":
        import torch

        if torch.cuda.is_available():
            major = torch.cuda.get_device_capability()[0]
            return "mixed_bfloat16" if major >= 8 else "mixed_float16"
    return None


def resolve_precision(precision, cpuinfo=CPUINFO, backend=None):
    """The dtype policy name ``precision`` stands for on this machine.

    Args:
        precision: ``auto`` or one of ``PRECISIONS`` (returned as it is).
            ``auto``: ``mixed_bfloat16`` on TPUs, on GPUs of compute
            capability 8 or more and on CPUs with native bf16 (TensorFlow
            and torch); ``mixed_float16`` on older GPUs; float32 on other
            CPUs and on any CPU under JAX.
        cpuinfo: where the CPU flags are read (for tests).
        backend: the Keras backend on a CPU (default: Keras' own).

    Example:
    >>> resolve_precision("float32")
    'float32'
    """
    if precision != "auto":
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISION_CHOICES}, got {precision!r}")
        return precision
    accelerator = _accelerator_precision()
    if accelerator:
        return accelerator
    if backend is None:
        import keras

        backend = keras.backend.backend()
    if backend == "jax":  # XLA's CPU compiler: bf16 is slower (the module's docstring)
        return "float32"
    return "mixed_bfloat16" if cpu_has_native_bf16(cpuinfo) else "float32"


@contextlib.contextmanager
def global_policy(precision):
    """Keras' global dtype policy set to ``precision`` inside the block, and
    the caller's again after it (a model built next in the same process
    would otherwise silently compute in bfloat16).

    Example:
    >>> import keras
    >>> with global_policy("mixed_bfloat16"):
    ...     keras.mixed_precision.global_policy().name
    'mixed_bfloat16'
    """
    import keras

    caller = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(precision)
    try:
        yield
    finally:
        keras.mixed_precision.set_global_policy(caller)
