"""int8 quantization: what stays float, and the remedies when int8 loses.

Phases: the converter calibrates on the representative rows (through
TensorFlow's quantization debugger) -> with ``float_layers``, the debugger's
instrumented model measures each layer against float and the worst are
deny-listed -> the int8 model is written with the deny lists.
"""

import csv
import dataclasses
import io
import logging
import math

import tensorflow as tf

from albert_keras.export.export_config import INT8_SCOPES
from albert_keras.export.export_config import INT8_WEIGHTS
from albert_keras.export.export_config import ExportError
from albert_keras.export.export_config import arg
from albert_keras.export.runtime import WEIGHT_INPUT

logger = logging.getLogger(__name__)

# Ops kept in float by ``int8_scope="dense"``: LayerNorm as the converter
# lowers it (MEAN, SQUARED_DIFFERENCE, RSQRT, NEG, MUL, ADD, SUB), softmax,
# the attention products (BATCH_MATMUL), GELU and the residual adds. In int8
# XNNPACK has no kernel for several of them (int8 RSQRT, SOFTMAX,
# BATCH_MATMUL here), so a full-int8 graph falls apart into many delegate
# partitions with the default kernels between them, and ran slower than the
# dynamic-range model (measured at the albert_base shape, batch 1, sequence
# 128, 2 threads: 247 ms full int8, 156 ms dynamic, 138 ms with these float).
FLOAT_OPS_IN_DENSE_INT8 = ("MEAN", "SQUARED_DIFFERENCE", "RSQRT", "NEG", "MUL", "ADD", "SUB",
                           "SOFTMAX", "BATCH_MATMUL", "GELU", "TANH", "POW")
# Ops that only move or reshape their input: the quantization debugger
# reports the error of their input again, so they are never the layer kept
# in float.
MOVEMENT_OPS = ("RESHAPE", "TRANSPOSE", "STRIDED_SLICE", "SLICE", "SQUEEZE", "EXPAND_DIMS",
                "CONCATENATION", "PACK", "UNPACK", "SPLIT", "QUANTIZE", "DEQUANTIZE")


@dataclasses.dataclass(frozen=True)
class Int8Recipe:
    """How ``int8`` quantizes, and the remedies when it loses accuracy.

    Args:
        scope: ``dense`` (the dense layers' matmuls in int8, the ops in
            ``FLOAT_OPS_IN_DENSE_INT8`` in float) or ``all`` (every op the
            converter has an int8 kernel for).
        float_layers: this many more layers stay in float: those whose int8
            output strays most from float on the calibration examples, by
            TensorFlow's quantization debugger (RMSE over the quantization
            step, the measure of its guide).
        weights: ``per-channel`` (a scale per output unit of each dense
            kernel) or ``per-tensor`` (one scale per kernel, for runtimes
            that want it).

    Example:
    >>> Int8Recipe(float_layers=2).scope
    'dense'
    """

    scope: str = "dense"
    float_layers: int = 0
    weights: str = "per-channel"

    def check(self):
        if self.scope not in INT8_SCOPES:
            raise ExportError(f"int8_scope must be one of {INT8_SCOPES}, got {self.scope!r}")
        if self.weights not in INT8_WEIGHTS:
            raise ExportError(f"int8_weights must be one of {INT8_WEIGHTS}, got {self.weights!r}")
        if self.float_layers < 0:
            raise ExportError(f"int8_float_layers must be >= 0, got {self.float_layers}")


def check_float_layers(float_layers, model):
    """Refuses, before converting, more layers kept in float than ``model``
    has weight matrices (each int8 layer that computes is one; the exact
    count is known only after calibration, where the same refusal stands)."""
    matrices = sum(1 for weight in model.weights if len(weight.shape) == 2)
    if float_layers >= matrices:
        raise ExportError(f"{arg('int8_float_layers')} {float_layers}: the model has at most "
                          f"{matrices} int8 layer(s) that compute; keep fewer in float, or "
                          "export float16 or dynamic")


def int8_quantized(converter, int8):
    """The int8 bytes of a converter set for int8 (optimizations and
    representative data), with ``int8``'s deny lists."""
    # TensorFlow's public route to selective quantization: the debugger
    # calibrates once and quantizes with deny lists.
    ops = list(FLOAT_OPS_IN_DENSE_INT8) if int8.scope == "dense" else None
    feeds, order = converter.representative_dataset, []
    # the debugger's run sets lists in its model's input order; the
    # calibration feeds are dicts by signature input name
    debugger = tf.lite.experimental.QuantizationDebugger(
        converter=converter, debug_dataset=lambda: ([f[n] for n in order] for f in feeds()),
        debug_options=tf.lite.experimental.QuantizationDebugOptions(denylisted_ops=ops))
    if not int8.float_layers:
        return debugger.get_nondebug_quantized_model()
    instrumented = tf.lite.Interpreter(model_content=debugger.get_debug_quantized_model())
    order.extend(_input_order(instrumented))
    worst = worst_int8_layers(debugger, instrumented, int8.float_layers)
    if len(worst) <= int8.float_layers:
        raise ExportError(f"{arg('int8_float_layers')} {int8.float_layers}: the model has "
                          f"{len(worst)} int8 layer(s) that compute; keep fewer in float, "
                          f"or export float16 or dynamic")
    kept = worst[:-1]
    logger.info(f"int8: kept in float, the {int8.float_layers} layer(s) that strayed most "
                f"(RMSE in quantization steps): " + ", ".join(
                    f"{names[0]}" + (f" and {len(names) - 1} more with its weights"
                                     if len(names) > 1 else "") + f" ({error:.2f})"
                    for names, error in kept))
    debugger.options = tf.lite.experimental.QuantizationDebugOptions(
        denylisted_ops=ops, denylisted_nodes=[name for names, _ in kept for name in names])
    return debugger.get_nondebug_quantized_model()


def _input_order(interpreter):
    """The signature input names in the order of the model's input tensors."""
    runner = interpreter.get_signature_runner()
    name_of = {detail["index"]: name for name, detail in runner.get_input_details().items()}
    return [name_of[detail["index"]] for detail in interpreter.get_input_details()]


def worst_int8_layers(debugger, instrumented, count):
    """``[(output tensor names, RMSE / quantization step)]`` of the
    ``count + 1`` quantized layers whose outputs stray most from float,
    worst first.

    The debugger runs its instrumented model (``instrumented``: the same
    model in an interpreter, read for its ops) on its dataset; each layer is
    compared with float on the same (dequantized) inputs, so the error is the
    layer's own. A layer is a weight: the ops that share one (ALBERT's layer
    applied N times) are kept in float together, scored by the worst of
    them, since keeping one would store the weights twice. Ops that only move
    data are left out (``MOVEMENT_OPS``).
    """
    debugger.run()
    dump = io.StringIO()
    debugger.layer_statistics_dump(dump)
    dump.seek(0)
    weight_of = _weights_by_output(instrumented)
    groups = {}
    for row in csv.DictReader(dump):
        if row["op_name"] in MOVEMENT_OPS or float(row["scale"]) <= 0:
            continue
        error = math.sqrt(float(row["mean_squared_error"])) / float(row["scale"])
        key = weight_of.get(int(row["tensor_idx"]), row["tensor_name"])
        names, worst = groups.get(key, ([], 0.0))
        groups[key] = ([*names, row["tensor_name"]], max(worst, error))
    # one more than asked, so a caller can tell when none would stay int8
    return sorted(groups.values(), key=lambda group: -group[1])[:count + 1]


def _weights_by_output(interpreter):
    """``{output tensor index: weight tensor index}`` of the ops with weights."""
    found = {}
    for op in interpreter._get_ops_details():  # no public API lists ops
        position = WEIGHT_INPUT.get(op["op_name"])
        if position is not None and len(op["inputs"]) > position:
            found.update({out: op["inputs"][position] for out in op["outputs"]})
    return found
