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
On TensorFlow, bf16 is native only through oneDNN: with
``TF_ENABLE_ONEDNN_OPTS=0`` a [1280, 384] x [384, 1536] bf16 matmul took
8.9 ms against 7.5 ms in float32 on that Xeon (1.7 against 6.4 ms with
oneDNN on), so ``auto`` picks float32 there too.

Prediction on a CPU mixes the two: a batch of a few short rows runs slower
in bf16 than in float32 (AMX's tiles are set up per product and the rows do
not fill them), so ``batch_precision`` sends a call whose batches are all
under ``BF16_MIN_TOKENS`` (one text at a time) through a float32 graph of
the same weights (``float32_trace``).
"""

import contextlib
import functools
import os

from albert_keras.cpu import CPUINFO
from albert_keras.cpu import cpu_flags

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")
PRECISION_CHOICES = ("auto",) + PRECISIONS

# /proc/cpuinfo flags of x86 CPUs that compute bf16 dot products natively.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
# oneDNN's ISA caps (``ONEDNN_MAX_CPU_ISA``) below its first with bf16
# instructions: with one of these, bf16 is emulated whatever the CPU has
ONEDNN_ISAS_WITHOUT_BF16 = ("SSE41", "AVX", "AVX2", "AVX2_VNNI", "AVX512_CORE",
                            "AVX512_CORE_VNNI")


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
    if backend == "tensorflow" and os.environ.get("TF_ENABLE_ONEDNN_OPTS") == "0":
        return "float32"  # bf16 through Eigen, not oneDNN: slower (the module's docstring)
    if os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper() in ONEDNN_ISAS_WITHOUT_BF16:
        return "float32"  # oneDNN told not to use the CPU's bf16 instructions
    return "mixed_bfloat16" if cpu_has_native_bf16(cpuinfo) else "float32"


# Tokens (rows x length) below which a prediction batch on a CPU runs in
# float32 even when the model computes in bf16: MiniLM-L6's shape, rows of
# 30-40 pieces, ms per row float32/bf16 on a 2-core Xeon with AMX (graph
# alone, best of 3): batch 1 10.9/15.6, 2 8.4/9.5, 4 6.4/6.5, 8 6.5/5.1,
# 16 4.9/3.6, 64 4.5/2.6.
BF16_MIN_TOKENS = 256


def batch_precision(precision, model_policy, tokens, machine=None):
    """The compute dtype policy a prediction call runs in, by its largest
    batch: the model's own, or ``float32``.

    Args:
        precision: the run's setting: ``float32`` runs every batch in
            float32; ``auto`` follows the machine (``resolve_precision``):
            where it does not compute bf16 natively, float32; on a CPU that
            does, batches under ``BF16_MIN_TOKENS`` in float32 and larger
            ones in the model's policy; on an accelerator, the model's. Any
            other value runs the model's policy.
        model_policy: the name of the model's dtype policy.
        tokens: rows x length of the call's largest batch.
        machine: ``resolve_precision("auto")``'s answer (computed when None)
            and whether an accelerator gave it: ``(name, on_accelerator)``.

    Example:
    >>> batch_precision("auto", "mixed_bfloat16", 34, ("mixed_bfloat16", False))
    'float32'
    >>> batch_precision("auto", "mixed_bfloat16", 64 * 34, ("mixed_bfloat16", False))
    'mixed_bfloat16'
    """
    if precision == "float32" or model_policy == "float32":
        return "float32"
    if precision != "auto":
        return model_policy
    name, on_accelerator = machine or machine_precision()
    if on_accelerator:
        return model_policy
    if name == "float32" or tokens < BF16_MIN_TOKENS:
        return "float32"
    return model_policy


@functools.cache
def machine_precision():
    """``(resolve_precision("auto"), on_accelerator)`` for this process,
    found once (each prediction call asks; the answer reads
    /proc/cpuinfo and lists the devices)."""
    accelerator = _accelerator_precision()
    return (accelerator, True) if accelerator else (resolve_precision("auto"), False)


@contextlib.contextmanager
def float32_trace(model):
    """Inside the block, every layer of ``model`` that computes in a lower
    float type than its float32 weights computes in float32; a graph traced
    there runs the same weights in float32 after the block, as a model
    built in float32 would (outputs equal). Quantized layers are left as
    they are.

    Keras 3 reads a layer's compute dtype from its policy at call time, and
    has no public way to change it for one call, so the policy object is
    swapped and put back.

    Example:
    >>> import keras
    >>> layer = keras.layers.Dense(2, dtype="mixed_bfloat16")
    >>> with float32_trace(layer):
    ...     keras.backend.standardize_dtype(layer(keras.ops.ones((1, 3))).dtype)
    'float32'
    >>> layer.dtype_policy.name
    'mixed_bfloat16'
    """
    swapped = []
    for layer in model._flatten_layers(include_self=True, recursive=True):
        policy = getattr(layer, "_dtype_policy", None)
        if (policy is not None and policy.quantization_mode is None
                and policy.variable_dtype == "float32" and policy.compute_dtype != "float32"):
            swapped.append((layer, policy))
            layer._dtype_policy = type(policy)("float32")
    try:
        yield model
    finally:
        for layer, policy in swapped:
            layer._dtype_policy = policy


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
