import pytest

from albert_keras.precision import BF16_MIN_TOKENS
from albert_keras.precision import batch_precision
from albert_keras.precision import cpu_has_native_bf16
from albert_keras.precision import resolve_precision
from albert_keras.tasks.finetune_config import FinetuneConfig
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


@pytest.fixture
def onednn_on(monkeypatch):
    """TensorFlow with its default oneDNN kernels (the tests turn them off)."""
    monkeypatch.delenv("TF_ENABLE_ONEDNN_OPTS", raising=False)


def test_auto_picks_float32_on_a_cpu_without_native_bf16(tmp_path, onednn_on):
    # The test machines have no GPU or TPU, so the CPU decides.
    assert resolve_precision("auto", _cpuinfo(tmp_path, AVX2)) == "float32"
    assert resolve_precision("auto", _cpuinfo(tmp_path, BF16)) == "mixed_bfloat16"


@pytest.mark.parametrize("backend, expected", [("tensorflow", "mixed_bfloat16"),
                                               ("torch", "mixed_bfloat16"), ("jax", "float32")])
def test_auto_on_a_bf16_cpu_depends_on_the_backends_compiler(tmp_path, backend, expected,
                                                            onednn_on):
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


def test_auto_picks_float32_on_tensorflow_without_onednn(tmp_path, monkeypatch):
    """Without oneDNN TensorFlow multiplies bf16 through Eigen, slower than
    float32; torch keeps its own oneDNN."""
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    amx = _cpuinfo(tmp_path, AMX)
    assert resolve_precision("auto", amx, backend="tensorflow") == "float32"
    assert resolve_precision("auto", amx, backend="torch") == "mixed_bfloat16"


def test_fine_tuning_defaults_to_auto():
    assert FinetuneConfig().precision == "auto"
    FinetuneConfig(precision="float32").validate()
    with pytest.raises(ValueError, match="precision"):
        FinetuneConfig(precision="bf16").validate()


@pytest.mark.parametrize("precision, policy, tokens, machine, expected", [
    # on a bf16 CPU: a few short rows in float32, larger batches in bf16
    ("auto", "mixed_bfloat16", 1 * 34, ("mixed_bfloat16", False), "float32"),
    ("auto", "mixed_bfloat16", BF16_MIN_TOKENS - 1, ("mixed_bfloat16", False), "float32"),
    ("auto", "mixed_bfloat16", BF16_MIN_TOKENS, ("mixed_bfloat16", False), "mixed_bfloat16"),
    # a CPU without native bf16 runs a bf16-trained model in float32
    ("auto", "mixed_bfloat16", 64 * 34, ("float32", False), "float32"),
    # an accelerator runs the model's policy at any size
    ("auto", "mixed_bfloat16", 34, ("mixed_bfloat16", True), "mixed_bfloat16"),
    # float32 asked for, or a float32 model: float32 always
    ("float32", "mixed_bfloat16", 64 * 34, ("mixed_bfloat16", False), "float32"),
    ("auto", "float32", 64 * 34, ("mixed_bfloat16", False), "float32"),
    # a policy named: the model's, at any size
    ("mixed_bfloat16", "mixed_bfloat16", 34, ("float32", False), "mixed_bfloat16"),
])
def test_each_prediction_batch_gets_the_precision_that_is_fast_for_it(precision, policy, tokens,
                                                                      machine, expected):
    assert batch_precision(precision, policy, tokens, machine) == expected


@pytest.mark.parametrize("isa, expected", [("AVX2", "float32"), ("avx512_core", "float32"),
                                           ("AVX512_CORE_BF16", "mixed_bfloat16"),
                                           ("", "mixed_bfloat16")])
def test_auto_follows_onednns_isa_cap(tmp_path, monkeypatch, onednn_on, isa, expected):
    """``ONEDNN_MAX_CPU_ISA=AVX2`` on a bf16 CPU makes oneDNN emulate bf16
    (as an AVX2-only CPU does): auto then picks float32."""
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", isa)
    assert resolve_precision("auto", _cpuinfo(tmp_path, AMX), backend="tensorflow") == expected
