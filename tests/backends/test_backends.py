"""The model code on JAX and torch: shared checks, equal outputs, portable
``.keras`` files and a pretraining fit. Each backend runs in a subprocess
(Keras fixes its backend per process); this process is TensorFlow."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from albert_keras import AlbertEncoder
from albert_keras import MobileBertConfig
from albert_keras import MobileBertEncoder
from tests.helpers import albert_config

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "backend_check.py")
BENCHMARK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "benchmarks", "backends.py")


# DeBERTa-v3's attention on ALBERT's shared, factorized model (buckets small
# enough that 11 tokens reach the log-spaced ones).
DEBERTA = dict(relative_attention=True, position_buckets=4, share_att_key=True,
               norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0)


@pytest.fixture(scope="module", params=["none", "alibi", "deberta", "mobilebert"])
def reference(tmp_path_factory, request):
    """A tiny encoder saved under TensorFlow, padded inputs and its outputs:
    with ALBERT's attention, with ALiBi (the small-corpus recipe's) and with
    DeBERTa's disentangled attention, and MobileBERT. The child also
    pretrains this architecture (with the enhanced mask decoder for DeBERTa,
    MobileBERT's extra decoder rows for it)."""
    folder = tmp_path_factory.mktemp("tf")
    keras.utils.set_random_seed(3)
    attention = (DEBERTA if request.param == "deberta"
                 else {"position_bias": request.param})
    if request.param == "mobilebert":
        encoder = MobileBertEncoder(MobileBertConfig(
            vocab_size=60, embedding_size=8, hidden_size=16, intra_bottleneck_size=8,
            num_hidden_layers=3, num_attention_heads=4, intermediate_size=12,
            num_feedforward_networks=2, max_position_embeddings=32))
    else:
        encoder = AlbertEncoder(albert_config(vocab_size=60, embedding_size=8, hidden_size=16,
                                             num_hidden_layers=3, num_hidden_groups=1,
                                             num_attention_heads=4, intermediate_size=32,
                                             max_position_embeddings=32, **attention))
    rng = np.random.default_rng(0)
    mask = np.ones((3, 11), "int32")
    mask[1, 6:] = 0
    mask[2, 9:] = 0
    inputs = {"token_ids": rng.integers(0, 60, (3, 11)).astype("int32"),
              "segment_ids": (np.arange(11) > 5).astype("int32")[None].repeat(3, 0),
              "padding_mask": mask}
    encoder.save(str(folder / "encoder.keras"))
    np.savez(folder / "inputs.npz", **inputs)
    outputs = {k: keras.ops.convert_to_numpy(v) for k, v in encoder(inputs).items()}
    return folder, inputs, outputs


@pytest.mark.parametrize("backend", ["jax", "torch"])
@pytest.mark.sampled(keep=3)  # CI: 3 of these sets per commit
def test_model_on_backend(backend, reference, tmp_path):
    folder, inputs, expected = reference
    env = {**os.environ, "KERAS_BACKEND": backend, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, CHILD, str(folder), str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["backend"] == backend
    # The model code imports no TensorFlow on the other backends.
    assert not report["tensorflow_imported"]
    # A fit that learns: the loss falls on a batch it sees again and again.
    assert report["loss"][-1] < 0.5 * report["loss"][0], report["loss"]

    # TensorFlow's file, run there: the same numbers (padding included).
    got = dict(np.load(tmp_path / "outputs.npz"))
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(got[name], expected[name], atol=1e-5, rtol=0)
    # And the file saved there loads here with the same numbers.
    loaded = keras.saving.load_model(str(tmp_path / "encoder.keras"), safe_mode=True)
    out = loaded(inputs)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(out["sequence_output"]),
                               expected["sequence_output"], atol=1e-5, rtol=0)


@pytest.mark.sampled(keep=2, group="jax_torch_runs")  # CI: 2 of the JAX/torch runs per commit
def test_backend_benchmark_runs_on_cpu(tmp_path):
    """benchmarks/backends.py's CPU mode: tiny cases (DeBERTa's layout too),
    rows written, and the rtd case's step cost read against ours on the
    same shape."""
    stem = tmp_path / "bench"
    done = subprocess.run([sys.executable, BENCHMARK, "--device", "cpu", "--shapes", "2x16",
                           "--cases", "ours-jax", "ours-rtd-jax", "ours-deberta-jax",
                           "--steps", "1",
                           "--repeats", "1",
                           "--out", str(stem)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "bench.json").read_text())["rows"]
    assert [(r["who"], r["batch"], r["seq"]) for r in rows] == [
        ("ours-jax", 2, 16), ("ours-rtd-jax", 2, 16), ("ours-deberta-jax", 2, 16)]
    for row in rows:
        assert row.get("tokens_per_s", 0) > 0, row
    table = (tmp_path / "bench.md").read_text()
    assert "| 2x16 | ours-jax |" in table
    cost = rows[0]["tokens_per_s"] / rows[1]["tokens_per_s"]
    assert f"step cost {cost:.2f}x ours (mlm_sop)" in table


def _bench_module():
    """benchmarks/backends.py, imported by path (benchmarks/ is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("backends_bench", BENCHMARK)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_render_gives_the_rtd_case_its_step_cost_not_peer_ratios():
    bench = _bench_module()
    row = {"batch": 2, "seq": 16, "peak_bytes": 2 ** 30, "memory_kind": "device"}
    results = {"machine": "test", "matmul_peak_flops": 1e12, "rows": [
        {**row, "who": "ours-jax", "tokens_per_s": 200.0},
        {**row, "who": "keras-hub-jax", "tokens_per_s": 100.0},
        {**row, "who": "ours-rtd-jax", "tokens_per_s": 150.0}]}
    lines = bench.render(results).splitlines()
    ours = next(x for x in lines if "| ours-jax |" in x)
    rtd = next(x for x in lines if "| ours-rtd-jax |" in x)
    assert "| 2.00x |" in ours
    # 200 / 150: a step of rtd costs 1.33 of ours; no MFU, no peer ratio
    assert rtd.startswith("| 2x16 | ours-rtd-jax | 150 | - | - | 1.0 | step cost 1.33x ours")


def test_render_compares_each_family_with_its_own_peers():
    """A MobileBERT row's "vs best peer" is against HF's MobileBERT, not
    against the faster ALBERT peers of the same shape, and gets no MFU
    (the FLOP count is ALBERT-base's)."""
    bench = _bench_module()
    row = {"batch": 2, "seq": 16, "peak_bytes": 2 ** 30, "memory_kind": "device"}
    results = {"machine": "test", "matmul_peak_flops": 1e12, "rows": [
        {**row, "who": "hf-eager", "tokens_per_s": 1000.0},
        {**row, "who": "hf-mobilebert-eager", "tokens_per_s": 100.0},
        {**row, "who": "hf-mobilebert-compile", "tokens_per_s": 160.0},
        {**row, "who": "ours-mobilebert-jax", "tokens_per_s": 240.0}]}
    ours = next(x for x in bench.render(results).splitlines() if "| ours-mobilebert-jax |" in x)
    assert ours.startswith("| 2x16 | ours-mobilebert-jax | 240 | 1.50x | - |")
