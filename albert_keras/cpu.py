"""What the CPU is: its model name and instruction-set flags, read from
``/proc/cpuinfo`` in one place. Timings mean little without the CPU's name,
and its matrix features decide the precision (bf16 is native only with
AVX512-BF16 or AMX) and how fast int8 and bf16 run."""

import platform

CPUINFO = "/proc/cpuinfo"
# The flags that decide matrix speed, in the order a name shows them.
MATRIX_FEATURES = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def _field(name, cpuinfo):
    """The value of the first ``name`` line of ``cpuinfo``, or None."""
    try:
        with open(cpuinfo, encoding="utf-8") as f:
            return next((line.split(":", 1)[1].strip() for line in f
                         if line.split(":", 1)[0].strip() == name), None)
    except OSError:
        return None


def cpu_name(cpuinfo=CPUINFO):
    """The CPU's model name (elsewhere than Linux, what ``platform`` says).

    Example:
    >>> isinstance(cpu_name(), str)
    True
    """
    return _field("model name", cpuinfo) or platform.processor() or platform.machine() or "CPU"


def cpu_flags(cpuinfo=CPUINFO):
    """The instruction-set flags the CPU lists (Linux only; elsewhere empty).

    Args:
        cpuinfo: the file to read; on macOS and Windows it is missing.

    Example:
    >>> cpu_flags("/no/such/file")
    set()
    """
    return set((_field("flags", cpuinfo) or "").split())


def cpu_with_features(cpuinfo=CPUINFO):
    """The CPU's name and the matrix features it has, for result files.

    Example:
    >>> cpu_with_features("/no/such/file").endswith("(no AVX2)")
    True
    """
    found = [f for f in MATRIX_FEATURES if f in cpu_flags(cpuinfo)]
    return f"{cpu_name(cpuinfo)} ({', '.join(found) or 'no AVX2'})"
