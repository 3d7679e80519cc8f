"""``bench --profile``: every op cut out on its own computes what it computes
inside the whole model, and the profile covers every op of the graph."""

import subprocess
import sys

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter
from ai_edge_litert.interpreter import OpResolverType

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.export.converter import convert
from albert_keras.export.converter import prepare_for_export
from albert_keras.export.converter import serving_function
from albert_keras.export.op_profile import _whole_model_values
from albert_keras.export.op_profile import cut_op
from albert_keras.export.op_profile import format_profile
from albert_keras.export.op_profile import profile_ops
from albert_keras.export.runtime import make_interpreter

SEQ = 16
NO_DELEGATES = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES


@pytest.fixture(scope="module")
def tflite_files(tmp_path_factory):
    config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=32,
                          num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          max_position_embeddings=SEQ)
    encoder = prepare_for_export(AlbertEncoder(config))
    folder = tmp_path_factory.mktemp("profile")
    paths = {}
    for mode in ("none", "dynamic", "int4"):
        paths[mode] = str(folder / f"{mode}.tflite")
        with open(paths[mode], "wb") as f:
            f.write(convert(encoder, serving_function(encoder, SEQ), mode))
    return paths


def _feed():
    rng = np.random.default_rng(0)
    return {"ids": rng.integers(5, 100, (1, SEQ)).astype(np.int32),
            "mask": np.concatenate([np.ones((1, 12)), np.zeros((1, 4))], 1).astype(np.int32),
            "segment_ids": np.zeros((1, SEQ), np.int32)}


def _ops(path):
    return [op["op_name"] for op in make_interpreter(path)._get_ops_details()]


# int4: blockwise weights name their scale tensors by index, which must come
# along into the one-op model.
@pytest.mark.parametrize("mode", ["none", "dynamic", "int4"])
def test_each_cut_op_computes_what_it_computes_in_the_whole_model(tflite_files, mode):
    path = tflite_files[mode]
    _, values = _whole_model_values(path, 1, _feed())
    with open(path, "rb") as f:
        blob = f.read()
    for index in range(len(_ops(path))):
        single, feeds, outputs = cut_op(blob, index)
        # The reference kernels, as in the whole model's run that gave the
        # values; XNNPACK rounds differently (it quantizes int4 layers'
        # inputs on the fly).
        interpreter = Interpreter(model_content=single, num_threads=1,
                                  experimental_op_resolver_type=NO_DELEGATES)
        interpreter.allocate_tensors()
        for detail, tensor in zip(interpreter.get_input_details(), feeds):
            interpreter.set_tensor(detail["index"], values[tensor])
        interpreter.invoke()
        for detail, tensor in zip(interpreter.get_output_details(), outputs):
            got = interpreter.get_tensor(detail["index"])
            np.testing.assert_allclose(got, values[tensor], rtol=1e-6, atol=1e-6,
                                       err_msg=f"op #{index}")


def test_profile_covers_every_op_in_graph_order(tflite_files):
    path = tflite_files["dynamic"]
    names = _ops(path)
    profile = profile_ops(path, threads=1, runs=2, warmup=1, feed=_feed())
    assert not profile["skipped"]
    assert [r["op"] for r in profile["ops"]] == names
    assert [r["index"] for r in profile["ops"]] == list(range(len(names)))
    assert all(r["ms"] > 0 for r in profile["ops"])
    by_type = {e["op"]: e["count"] for e in profile["by_type"]}
    assert by_type == {n: names.count(n) for n in set(names)}
    # the embedding projection, q k v o ffn-in ffn-out in each of 2 layers, the pooler
    assert by_type["FULLY_CONNECTED"] == 1 + 2 * 6 + 1
    assert sum(e["share"] for e in profile["by_type"]) == pytest.approx(1.0)
    assert profile["sum_ms"] == pytest.approx(sum(r["ms"] for r in profile["ops"]))
    lines = format_profile(profile, whole_ms=1.0, top=3)
    assert lines[1].split()[0] == profile["by_type"][0]["op"]
    assert any("whole model median 1.00 ms" in line for line in lines)
    assert sum(line.startswith("  #") for line in lines) == 3


def test_bench_profile_command_prints_the_table(tflite_files, capsys):
    from albert_keras.cli import main

    assert main(["bench", tflite_files["none"], "--runs", "2", "--threads", "1",
                 "--profile", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "per op (each op timed alone at 1 threads" in out
    assert "FULLY_CONNECTED" in out and "whole model median" in out
    assert out.count("FULLY_CONNECTED") >= 1 and "slowest 2 ops:" in out


def test_string_in_model_profiles_every_op(classifier_folder, tmp_path):
    """After the in-graph tokenizer the lengths are dynamic: the one-op models
    take the shapes of the whole model's run, so every op is timed."""
    from albert_keras.export import ExportConfig
    from albert_keras.export import export_tflite

    out = str(tmp_path / "text.tflite")
    export_tflite(classifier_folder, out, ExportConfig(with_tokenizer=True, examples=16))
    names = _ops(out)
    profile = profile_ops(out, threads=1, runs=2, warmup=1)
    assert not profile["skipped"]
    assert [r["op"] for r in profile["ops"]] == names
    assert any("Sentencepiece" in name for name in names)


def test_bench_writes_nothing_to_stderr(tflite_files):
    # LiteRT announces its XNNPACK delegate on stderr unless told not to
    done = subprocess.run([sys.executable, "-m", "albert_keras_cli", "bench",
                           tflite_files["dynamic"], "--runs", "2"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
