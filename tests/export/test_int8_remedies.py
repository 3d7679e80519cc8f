"""int8's remedies when it loses accuracy: layers kept in float by the
quantization debugger's measure, and per-tensor against per-channel scales.

The layer the debugger must pick is made bad by construction (weights whose
int8 rounding wipes out the small difference the output is made of), not
read from our code."""

import numpy as np
import pytest
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

from albert_keras.export import ExportConfig
from albert_keras.export import ExportError
from albert_keras.export import export_tflite
from albert_keras.export.converter import convert
from albert_keras.export.int8 import Int8Recipe
from albert_keras.export.runtime import float_ops

QUIET = dict(examples=16)


def _two_layer_model():
    """``spoiled``: 1000.3 x1 - 1000 x2 + x3 on rows where x1 == x2, so its
    output is 0.3 x1 + x3 while int8 weights (step 1000.3 / 127) make the two
    large weights equal and drop the 0.3 x1; ``clean`` reads it."""
    import keras

    inputs = keras.Input((4,), name="x")
    spoiled = keras.layers.Dense(4, name="spoiled")
    clean = keras.layers.Dense(2, name="clean")
    model = keras.Model(inputs, clean(spoiled(inputs)))
    kernel = np.zeros((4, 4), "float32")
    kernel[:, 0] = [1000.3, -1000.0, 1.0, 0.0]
    kernel[:, 1] = [0.0, 0.0, 0.5, 1.0]
    kernel[:, 2] = [0.0, 0.0, 1.0, -0.5]
    kernel[:, 3] = [0.0, 0.0, -1.0, 1.0]
    spoiled.set_weights([kernel, np.zeros(4, "float32")])
    rng = np.random.default_rng(0)
    clean.set_weights([rng.normal(size=(4, 2)).astype("float32"), np.zeros(2, "float32")])
    return model


def _rows(n, seed):
    x = np.random.default_rng(seed).uniform(-1, 1, (n, 4)).astype("float32")
    x[:, 1] = x[:, 0]
    return x


def _convert(model, recipe, rows):
    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name="x")])
    def serve(x):
        return {"y": model(x)}

    return convert(model, serve, "int8", representative=[{"x": row[None]} for row in rows],
                   int8=recipe)


def _error(blob, model, rows):
    runner = Interpreter(model_content=blob).get_signature_runner()
    got = np.concatenate([runner(x=row[None])["y"] for row in rows])
    return float(np.abs(got - model(rows).numpy()).mean())


def _fc_weight_dtypes(blob):
    interpreter = Interpreter(model_content=blob)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    return [tensors[op["inputs"][1]]["dtype"] for op in interpreter._get_ops_details()
            if op["op_name"] == "FULLY_CONNECTED"]


def test_the_layer_that_strays_most_is_kept_in_float_and_the_error_falls():
    model, rows = _two_layer_model(), _rows(64, 0)
    plain = _convert(model, Int8Recipe(), rows)
    remedied = _convert(model, Int8Recipe(float_layers=1), rows)
    assert _fc_weight_dtypes(plain) == [np.int8, np.int8]
    # exactly one of the two kept in float: the spoiled one (its float
    # weights are the 1000.3 ones)
    weights = _fc_weight_dtypes(remedied)
    assert sorted(map(str, weights)) == sorted(map(str, [np.float32, np.int8])), weights
    interpreter = Interpreter(model_content=remedied)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    float_kernels = [interpreter.get_tensor(tensors[op["inputs"][1]]["index"])
                     for op in interpreter._get_ops_details()
                     if op["op_name"] == "FULLY_CONNECTED"
                     and tensors[op["inputs"][1]]["dtype"] == np.float32]
    assert np.isclose(np.abs(float_kernels[0]).max(), 1000.3)
    held_out = _rows(64, 1)
    assert _error(remedied, model, held_out) < 0.5 * _error(plain, model, held_out)


def test_keeping_every_layer_in_float_is_refused():
    model, rows = _two_layer_model(), _rows(16, 0)
    with pytest.raises(ExportError, match="int8_float_layers 2: the model has 2 int8 layer"):
        _convert(model, Int8Recipe(float_layers=2), rows)


def test_per_tensor_weights_have_one_scale_per_kernel():
    model, rows = _two_layer_model(), _rows(16, 0)
    for recipe, many in ((Int8Recipe(), True), (Int8Recipe(weights="per-tensor"), False)):
        interpreter = Interpreter(model_content=_convert(model, recipe, rows))
        tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
        scales = [len(tensors[op["inputs"][1]]["quantization_parameters"]["scales"])
                  for op in interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"]
        assert (scales == [4, 2]) if many else (scales == [1, 1]), (recipe, scales)


def test_an_export_with_float_layers_validates_with_more_float_ops(classifier_folder, tmp_path):
    runs = {n: export_tflite(classifier_folder, str(tmp_path / f"f{n}.tflite"), ExportConfig(
        quantize="int8", int8_float_layers=n, **QUIET)) for n in (0, 3)}
    assert all(sidecar["validation"]["passed"] for sidecar in runs.values())
    record = runs[3]["int8"]
    assert {k: record[k] for k in ("scope", "float_layers", "weights")} == \
        {"scope": "dense", "float_layers": 3, "weights": "per-channel"}
    # the word table and the dense kernels are int8 unless kept: three kept
    assert runs[0]["int8"]["float_weight_layers"] == []
    assert len(record["float_weight_layers"]) == 3, record

    def computing(path):
        return sum(count for op, count in float_ops(path).items()
                   if op not in ("QUANTIZE", "DEQUANTIZE"))
    assert computing(str(tmp_path / "f3.tflite")) > computing(str(tmp_path / "f0.tflite"))


@pytest.mark.parametrize("field,value,mode,modes", [
    ("int8_float_layers", 2, "dynamic", "int8"), ("int8_float_layers", 2, "qat", "int8"),
    ("int8_weights", "per-tensor", "dynamic", "int8 and qat"),
    ("int8_scope", "all", "float16", "int8 and qat")])
def test_int8_settings_with_another_mode_are_refused(classifier_folder, tmp_path, field, value,
                                                     mode, modes):
    with pytest.raises(ExportError, match=f"{field} applies to quantize {modes} only"):
        export_tflite(classifier_folder, str(tmp_path / "m.tflite"),
                      ExportConfig(quantize=mode, **{field: value}))
    assert not list(tmp_path.iterdir())
