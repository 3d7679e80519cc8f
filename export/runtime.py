"""Running a ``.tflite`` in LiteRT (``ai_edge_litert``), with tf-text's
custom ops registered when the model holds the in-graph tokenizer."""

import numpy as np

from albert_keras.native_output import stderr_silenced


def make_interpreter(blob_or_path, num_threads=2, **options):
    """A LiteRT interpreter that also knows tf-text's tokenizer op;
    ``options`` go to the interpreter as they are."""
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    kwargs = {"model_path": blob_or_path} if isinstance(blob_or_path, str) else \
        {"model_content": bytes(blob_or_path)}
    with stderr_silenced():
        return InterpreterWithCustomOps(
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
            num_threads=num_threads, **kwargs, **options,
        )


def to_feed(value):
    """Strings go in as UTF-8 bytes: a numpy unicode array would reach the
    tokenizer as UTF-32 and tokenize wrongly, silently."""
    if isinstance(value, str):
        return np.array(value.encode("utf-8"))
    if isinstance(value, bytes):
        return np.array(value)
    return np.asarray(value)


class TFLiteRunner:
    """Calls one signature (``serving_default`` unless named) on one example
    at a time.

    Args:
        blob_or_path: the ``.tflite`` bytes or path.
        num_threads: the interpreter's threads.
        signature: which signature (a file exported with ``lengths`` has
            ``length_N`` beside ``serving_default``).

    Example:
    >>> runner = TFLiteRunner("model.tflite")  # doctest: +SKIP
    >>> runner({"text": "hello world"})["logits"]  # doctest: +SKIP
    """

    def __init__(self, blob_or_path, num_threads=2, signature="serving_default"):
        self.interpreter = make_interpreter(blob_or_path, num_threads)
        self.signature = self.interpreter.get_signature_list()[signature]
        # LiteRT announces its XNNPACK delegate on stderr when it first allocates
        with stderr_silenced():
            self.runner = self.interpreter.get_signature_runner(signature)

    @property
    def input_names(self):
        return list(self.signature["inputs"])

    @property
    def output_names(self):
        return list(self.signature["outputs"])

    def __call__(self, feed):
        return self.runner(**{k: to_feed(v) for k, v in feed.items()})


def float_ops(blob_or_path):
    """``{op name: count}`` of the ops that still compute in float32.

    In a full-int8 model these are the ops TFLite has no int8 kernel for
    (or whose inputs the quantizer keeps in float), so they stay float.
    """
    interpreter = make_interpreter(blob_or_path)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    counts = {}
    for op in interpreter._get_ops_details():  # no public API lists ops
        inputs = [tensors[i] for i in op["inputs"] if i >= 0 and i in tensors]
        if any(t["dtype"] == np.float32 for t in inputs):
            counts[op["op_name"]] = counts.get(op["op_name"], 0) + 1
    return dict(sorted(counts.items()))


# The weight input of the ops int8 quantizes weights of (by position).
WEIGHT_INPUT = {"FULLY_CONNECTED": 1, "GATHER": 0, "EMBEDDING_LOOKUP": 1}


def float_weight_layers(blob_or_path):
    """The layers whose weights stayed float32 in a quantized file (the
    layers an int8 export kept in float): one output tensor name per weight
    tensor, so a layer ALBERT applies N times is named once.

    Example:
    >>> float_weight_layers("model_int8.tflite")  # doctest: +SKIP
    ['model/encoder/layer_0/output/MatMul']
    """
    interpreter = make_interpreter(blob_or_path)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    names = {}
    for op in interpreter._get_ops_details():  # no public API lists ops
        position = WEIGHT_INPUT.get(op["op_name"])
        if position is None or len(op["inputs"]) <= position:
            continue
        weight = op["inputs"][position]
        if tensors[weight]["dtype"] == np.float32 and _is_constant(interpreter, weight):
            names.setdefault(weight, tensors[op["outputs"][0]]["name"])
    return list(names.values())


def _is_constant(interpreter, index):
    # before allocate_tensors only a constant (a buffer in the file) has data
    try:
        return interpreter.get_tensor(index).size > 0
    except ValueError:
        return False
