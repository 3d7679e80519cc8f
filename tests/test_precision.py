import pytest

from albert_keras.precision import cpu_has_native_bf16
from albert_keras.precision import resolve_precision
from albert_keras.training.pretrain_config import PretrainConfig

AVX2 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma\n"
BF16 = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512_bf16\n"
AMX = "processor\t: 0\nflags\t\t: fpu avx2 amx_tile amx_bf16 amx_int8\n"


def _cpuinfo(tmp_path, text):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return str(path)


def test_native_bf16_is_read_from_the_cpu_flags(tmp_path):
    assert not cpu_has_native_bf16(_cpuinfo(tmp_path, AVX2))
    assert cpu_has_native_bf16(_cpuinfo(tmp_path, BF16))
    assert cpu_has_native_bf16(_cpuinfo(tmp_path, AMX))
    # macOS and Windows have no /proc/cpuinfo
    assert not cpu_has_native_bf16(str(tmp_path / "missing"))


def test_auto_picks_float32_on_a_cpu_without_native_bf16(tmp_path):
    # The test machines have no GPU or TPU, so the CPU decides.
    assert resolve_precision("auto", _cpuinfo(tmp_path, AVX2)) == "float32"
    assert resolve_precision("auto", _cpuinfo(tmp_path, BF16)) == "mixed_bfloat16"


@pytest.mark.parametrize("backend, expected", [("tensorflow", "mixed_bfloat16"),
                                               ("torch", "mixed_bfloat16"), ("jax", "float32")])
def test_auto_on_a_bf16_cpu_depends_on_the_backends_compiler(tmp_path, backend, expected):
    """XLA's CPU compiler runs bf16 slower than float32; oneDNN (TensorFlow,
    torch) runs it faster."""
    assert resolve_precision("auto", _cpuinfo(tmp_path, AMX), backend=backend) == expected
    assert resolve_precision("auto", _cpuinfo(tmp_path, AVX2), backend=backend) == "float32"
    assert resolve_precision("mixed_bfloat16", _cpuinfo(tmp_path, AVX2),
                             backend=backend) == "mixed_bfloat16"


def test_a_named_precision_is_kept_and_a_wrong_one_refused(tmp_path):
    cpuinfo = _cpuinfo(tmp_path, AVX2)
    for name in ("float32", "mixed_bfloat16", "mixed_float16"):
        assert resolve_precision(name, cpuinfo) == name
    with pytest.raises(ValueError, match="precision must be one of"):
        resolve_precision("bf16", cpuinfo)


def test_pretraining_defaults_to_auto():
    assert PretrainConfig().precision == "auto"
    with pytest.raises(ValueError, match="precision"):
        PretrainConfig(precision="half").validate()
