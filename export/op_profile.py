"""``albert-keras bench --profile``: where a ``.tflite``'s time goes, op by op.

LiteRT's Python package has no op profiler (the C++ ``benchmark_model``
tool has one, but it is not shipped on PyPI), so this measures each op on
its own: every operator of the model's main graph is cut out into a
one-op model with the same tensors (shapes, types, quantization and
constant weights) and timed in LiteRT with the same thread count, on the
values that op sees when the whole model runs. Ops with the same kind,
options, shapes, quantization and constant inputs (a float model's shared
layers repeat them; a quantized model's layers differ in their activation
scales) are timed once and counted as many times as they occur.

The sum of the ops is an estimate of the whole: it includes one runtime
call per op (a few microseconds), leaves out what XNNPACK saves by running
neighbouring ops as one delegate partition, and the ops are timed one after
another while the machine's speed drifts. It is reported next to the whole
model's median; the shares are what to read.

Example:
>>> from albert_keras.export.op_profile import profile_ops
>>> table = profile_ops("party.tflite", threads=2)  # doctest: +SKIP
>>> table["by_type"][0]  # doctest: +SKIP
{'op': 'FULLY_CONNECTED', 'count': 73, 'ms': 101.2, 'share': 0.84}
"""

import copy
import time

import numpy as np

# Ops that call other subgraphs cannot be cut out on their own.
_CONTROL_FLOW = ("WHILE", "IF", "CALL_ONCE", "CALL")


# ---------------------------------------------------------------------------
# Reading the flatbuffer


def _schema():
    from ai_edge_litert import schema_py_generated as schema

    return schema


def _op_names(schema):
    return {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}


def _read(blob):
    schema = _schema()
    return schema.ModelT.InitFromObj(schema.Model.GetRootAs(blob, 0))


def _main_subgraph(model):
    if model.signatureDefs:
        return int(model.signatureDefs[0].subgraphIndex)
    return 0


def _buffer_data(model, blob, index):
    """A constant tensor's bytes, or None for an activation. Models over
    2 GB keep their buffers after the flatbuffer (offset and size)."""
    buffer = model.buffers[index] if index < len(model.buffers) else None
    if buffer is None:
        return None
    if buffer.data is not None and len(buffer.data):
        return buffer.data
    if getattr(buffer, "offset", 0) and buffer.offset > 1:
        return np.frombuffer(blob[buffer.offset:buffer.offset + buffer.size], np.uint8)
    return None


# ---------------------------------------------------------------------------
# One op as a model


class _AlignedBuffer:
    """A constant buffer packed with its data 16-byte aligned, as TFLite's
    schema asks (``force_align: 16``). The generated ``BufferT.Pack`` aligns
    to the element size only, one byte for ``[ubyte]``, and XNNPACK's aligned
    loads then crash on weights that land off a 16-byte boundary."""

    def __init__(self, data):
        self.data = np.asarray(data, np.uint8).reshape(-1)

    def Pack(self, builder):  # noqa: N802 (the flatbuffers object API's name)
        schema = _schema()
        payload = self.data.tobytes()
        builder.StartVector(1, len(payload), 16)
        builder.head = builder.head - len(payload)
        builder.Bytes[builder.head:builder.head + len(payload)] = payload
        vector = builder.EndVector(len(payload))
        schema.BufferStart(builder)
        schema.BufferAddData(builder, vector)
        return schema.BufferEnd(builder)


def _single_op_model(model, blob, graph, op):
    """``(bytes, [input tensor indices of the original graph])``: a model
    whose only operator is ``op``; its non-constant inputs become the
    model's inputs and its outputs the model's outputs."""
    import flatbuffers

    schema = _schema()
    new = schema.ModelT()
    new.version = model.version
    new.description = b"op profile"
    code = copy.copy(model.operatorCodes[op.opcodeIndex])
    new.operatorCodes = [code]
    empty = schema.BufferT()
    new.buffers = [empty]
    sub = schema.SubGraphT()
    sub.tensors = []
    remap = {}
    feeds = []

    def add(index):
        if index < 0:
            return -1
        if index in remap:
            return remap[index]
        tensor = copy.copy(graph.tensors[index])
        data = _buffer_data(model, blob, tensor.buffer)
        details = tensor.quantization.details if tensor.quantization is not None else None
        if details is not None and hasattr(details, "scales"):
            # Blockwise (int4) quantization names its scale and zero-point
            # tensors by index: they come along, renumbered.
            tensor.quantization = copy.copy(tensor.quantization)
            tensor.quantization.details = details = copy.copy(details)
            details.scales = add(int(details.scales))
            details.zeroPoints = add(int(details.zeroPoints))
        if data is None:
            tensor.buffer = 0
        else:
            new.buffers.append(_AlignedBuffer(data))
            tensor.buffer = len(new.buffers) - 1
        sub.tensors.append(tensor)
        remap[index] = len(sub.tensors) - 1
        if data is None and not tensor.isVariable:
            feeds.append(index)
        return remap[index]

    single = copy.copy(op)
    single.opcodeIndex = 0
    single.inputs = [add(int(i)) for i in op.inputs]
    is_output = set()
    single.outputs = []
    for i in op.outputs:
        single.outputs.append(add(int(i)))
        is_output.add(int(i))
    if op.intermediates is not None and len(op.intermediates):
        single.intermediates = [add(int(i)) for i in op.intermediates]
    feeds = [i for i in feeds if i not in is_output]
    sub.operators = [single]
    sub.inputs = [remap[i] for i in feeds]
    sub.outputs = [remap[int(i)] for i in op.outputs]
    new.subgraphs = [sub]
    builder = flatbuffers.Builder(1024 + sum(
        len(b.data) + 16 for b in new.buffers if b.data is not None))
    builder.Finish(new.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output()), feeds


def cut_op(blob, index):
    """``(bytes, inputs, outputs)``: operator ``index`` of ``blob``'s main
    graph as a model of its own, with the original graph's tensor indices of
    its fed inputs and of its outputs (to compare with the whole model)."""
    model = _read(blob)
    graph = model.subgraphs[_main_subgraph(model)]
    op = graph.operators[index]
    single, feeds = _single_op_model(model, blob, graph, op)
    return single, feeds, [int(i) for i in op.outputs]


def _key(model, blob, graph, op, name):
    """Ops with equal keys cost the same: kind, options, and for each input
    its shape, type, quantization and (for constants) its buffer."""
    parts = [name, repr(sorted(vars(op.builtinOptions).items()))
             if op.builtinOptions is not None else ""]
    for i in list(op.inputs) + list(op.outputs):
        i = int(i)
        if i < 0:
            parts.append("-")
            continue
        t = graph.tensors[i]
        const = _buffer_data(model, blob, t.buffer) is not None
        parts.append((tuple(int(s) for s in t.shape) if t.shape is not None else (),
                      int(t.type), t.buffer if const else None,
                      repr(vars(t.quantization)) if t.quantization is not None else ""))
    return repr(parts)


def _shape(graph, index):
    return [int(s) for s in graph.tensors[int(index)].shape] if index >= 0 else None


def _random_like(shape, dtype, rng):
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return np.ones(shape, np.bool_)
    if dtype in (np.int8, np.uint8, np.int16):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return np.zeros(shape, dtype)  # ids, indices: 0 is valid for any table


# ---------------------------------------------------------------------------
# Timing


def _whole_model_values(path_or_blob, threads, feed=None):
    """``(feed, values)``: every tensor's value when the whole model runs
    once on ``feed`` (by default the inputs ``albert-keras bench`` uses)."""
    import warnings

    from ai_edge_litert.interpreter import OpResolverType

    from albert_keras.export.bench import sample_feed
    from albert_keras.export.runtime import make_interpreter
    from albert_keras.export.runtime import to_feed

    # Without XNNPACK: tensors inside a delegate partition are not kept, and
    # only the values are wanted here, not the speed.
    with warnings.catch_warnings():  # "preserve_all_tensors is for debugging"
        warnings.simplefilter("ignore", UserWarning)
        interpreter = make_interpreter(
            path_or_blob, threads, experimental_preserve_all_tensors=True,
            experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    runner = interpreter.get_signature_runner()
    if feed is None:
        feed = sample_feed(runner.get_input_details())
    runner(**{k: to_feed(v) for k, v in feed.items()})
    values = {}
    for detail in interpreter.get_tensor_details():
        try:
            values[detail["index"]] = np.array(interpreter.get_tensor(detail["index"]))
        except ValueError:  # tensors without data (e.g. never written)
            continue
    return feed, values


def _time_op(blob, feeds, values, threads, runs, warmup, rng):
    from albert_keras.export.runtime import make_interpreter

    interpreter = make_interpreter(blob, threads)
    details = interpreter.get_input_details()
    # A string-in model's tensors after the tokenizer have a dynamic length:
    # the file holds a placeholder shape, the whole model's run the real one.
    resized = False
    for detail, index in zip(details, feeds):
        value = values.get(index)
        if (value is not None and value.dtype == detail["dtype"]
                and value.shape != tuple(int(s) for s in detail["shape"])):
            interpreter.resize_tensor_input(detail["index"], value.shape, strict=False)
            resized = True
    interpreter.allocate_tensors()
    if resized:
        details = interpreter.get_input_details()
    for detail, index in zip(details, feeds):
        value = values.get(index)
        shape = tuple(int(s) for s in detail["shape"])
        if value is None or value.shape != shape or value.dtype != detail["dtype"]:
            value = _random_like(shape, detail["dtype"], rng)
        interpreter.set_tensor(detail["index"], value)
    for _ in range(warmup):
        interpreter.invoke()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        interpreter.invoke()
        times.append((time.perf_counter() - start) * 1000.0)
    return float(np.median(times))


def profile_ops(path, threads=2, runs=20, warmup=3, feed=None):
    """Per-op latency of a ``.tflite``.

    Args:
        path: the ``.tflite`` file.
        threads: interpreter threads, as for the whole model.
        runs: timed invocations of each distinct op (median kept).
        warmup: untimed invocations first.
        feed: the whole model's inputs (``{name: array}``); by default the
            inputs ``albert-keras bench`` uses.

    Returns:
        ``{"ops": [...], "by_type": [...], "sum_ms", "skipped"}``: one row per
        operator in graph order (index, op, input and output shapes, ms) and
        one per op kind, largest first (count, ms, share of the sum).
        ``skipped`` lists ops that could not be timed alone, with the reason.
    """
    with open(path, "rb") as f:
        blob = f.read()
    _, values = _whole_model_values(blob, threads, feed)
    model = _read(blob)
    schema = _schema()
    names = _op_names(schema)
    graph = model.subgraphs[_main_subgraph(model)]
    rng = np.random.default_rng(0)
    timed = {}
    rows, skipped = [], []
    for index, op in enumerate(graph.operators):
        code = model.operatorCodes[op.opcodeIndex]
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        name = names.get(builtin, str(builtin))
        if builtin == schema.BuiltinOperator.CUSTOM:
            name = (code.customCode or b"CUSTOM").decode() if isinstance(
                code.customCode, bytes) else str(code.customCode or "CUSTOM")
        if name in _CONTROL_FLOW:
            skipped.append({"index": index, "op": name, "reason": "calls a subgraph"})
            continue
        key = _key(model, blob, graph, op, name)
        if key not in timed:
            try:
                single, feeds = _single_op_model(model, blob, graph, op)
                timed[key] = _time_op(single, feeds, values, threads, runs, warmup, rng)
            except (RuntimeError, ValueError) as e:
                timed[key] = None
                skipped.append({"index": index, "op": name,
                                "reason": str(e).strip().splitlines()[0][:200]})
        if timed[key] is None:
            continue
        rows.append({"index": index, "op": name, "ms": timed[key],
                     "inputs": [_shape(graph, i) for i in op.inputs],
                     "outputs": [_shape(graph, i) for i in op.outputs]})
    total = sum(r["ms"] for r in rows)
    by_type = {}
    for r in rows:
        entry = by_type.setdefault(r["op"], {"op": r["op"], "count": 0, "ms": 0.0})
        entry["count"] += 1
        entry["ms"] += r["ms"]
    table = sorted(by_type.values(), key=lambda e: -e["ms"])
    for entry in table:
        entry["share"] = entry["ms"] / total if total else 0.0
    return {"ops": rows, "by_type": table, "sum_ms": total, "skipped": skipped,
            "threads": threads, "runs": runs}


def format_profile(profile, whole_ms=None, top=10):
    """The profile as printable lines: per op kind, then the slowest ops."""
    lines = [f"{'op':<28}{'count':>7}{'ms':>10}{'share':>8}"]
    for entry in profile["by_type"]:
        lines.append(f"{entry['op']:<28}{entry['count']:>7}{entry['ms']:>10.2f}"
                     f"{entry['share']:>8.1%}")
    total = f"sum of ops {profile['sum_ms']:.2f} ms"
    if whole_ms:
        total += f" (whole model median {whole_ms:.2f} ms)"
    lines.append(total)
    if top:
        lines.append(f"slowest {top} ops:")
        for r in sorted(profile["ops"], key=lambda r: -r["ms"])[:top]:
            lines.append(f"  #{r['index']:<5}{r['op']:<24}{r['ms']:>8.3f} ms  "
                         f"{r['inputs']} -> {r['outputs']}")
    for s in profile["skipped"]:
        lines.append(f"  not timed: #{s['index']} {s['op']} ({s['reason']})")
    return lines
