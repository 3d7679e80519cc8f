"""Keras model -> TFLite flatbuffer, on the conversion path that is safe.

Phases: rebuild the model in float32 with a bounded attention mask -> a
serving function with Task-Library input names (ids-in, or string-in with
the tokenizer in the graph) -> ``keras.export.ExportArchive`` -> a SavedModel
-> ``TFLiteConverter.from_saved_model`` with TFLite builtin ops only (plus
tf-text's custom tokenizer op for string-in) and the quantization mode.

Paths that keep live variables in the graph (``tf.saved_model.save`` on a
raw function, ``from_concrete_functions(..., trackable_obj)``) give NaN or
garbage without an error (measured with TF 2.21), so they are not used; and every
converted model is validated against Keras before it is written anyway.
"""

import contextlib
import dataclasses
import io
import logging
import tempfile
import warnings

import keras
import tensorflow as tf

from albert_keras.export.export_config import QUANTIZE_MODES
from albert_keras.export.export_config import ExportError
from albert_keras.export.export_config import arg
from albert_keras.export.int8 import Int8Recipe
from albert_keras.export.int8 import int8_quantized
from albert_keras.export.runtime import to_feed
from albert_keras.export.string_input import pack_one
from albert_keras.models.export_kind import ExportKind
from albert_keras.native_output import stderr_silenced
from albert_keras.text.truncation import DEFAULT_TRUNCATE

logger = logging.getLogger(__name__)

# Our encoder inputs under the TFLite Task Library's names.
INPUT_NAMES = {"ids": "token_ids", "mask": "padding_mask", "segment_ids": "segment_ids"}


def model_kind(model):
    """``(kind, output names)`` that ``model`` declares: the ``ExportKind``
    of its class (``export_kind``, inherited by subclasses) and its outputs."""
    kind = getattr(model, "export_kind", None)
    if not isinstance(kind, ExportKind):
        raise ExportError(f"cannot export a {type(model).__name__}: its class declares no "
                          f"ExportKind (export_kind is {kind!r})")
    return kind, tuple(kind.outputs)


def rebuild(model, **encoder_options):
    """A float32 copy of ``model`` whose encoder takes ``encoder_options``
    (``mask_value``, ``quantize_aware``), with the weights copied by path.

    Copying by path lets a quantization-aware copy, which has range
    variables of its own, take a float model's weights.
    """
    config = model.get_config()
    # a task model's encoder is serialized in its config; an encoder's is its own
    nested = isinstance(config.get("encoder"), dict)
    encoder_config = config["encoder"]["config"] if nested else config
    encoder_config.update(encoder_options, dtype="float32")
    config["dtype"] = "float32"
    copy = type(model).from_config(config)
    by_path = {v.path: v for v in copy.weights}
    missing = [v.path for v in model.weights if v.path not in by_path]
    if missing:
        raise ExportError(f"the rebuilt model has no place for {missing[0]} "
                          f"(and {len(missing) - 1} more)")
    for variable in model.weights:
        by_path[variable.path].assign(keras.ops.cast(variable, "float32"))
    return copy


def reads_only_cls(model):
    """Whether ``model``'s output depends on the last block's ``[CLS]`` row
    alone, as the model says (``reads_only_cls``: classifiers of the pooled
    output, multiple choice, embedders of the pooled output)."""
    return bool(getattr(model, "reads_only_cls", False))


def prepare_for_export(model, mask_value=-120.0, cls_only=None):
    """A float32 copy of ``model`` whose attention mask adds ``mask_value``.

    Training may leave a ``mixed_bfloat16`` policy, which TFLite should not
    see; and a bounded mask (-120 instead of -10000, as MobileBERT-EdgeTPU)
    lets full-int8 quantization keep the scores' resolution: a -10000 bias
    stretches the int8 range of the scores. ``exp(-120)`` is 0 in float32,
    so the float outputs are unchanged.

    Args:
        model: a Keras model of one of the exportable kinds.
        mask_value: the additive attention bias at padded keys.
        cls_only: compute only the ``[CLS]`` row in the last block
            (``AlbertEncoder``'s ``cls_only``). ``None``: on when
            ``reads_only_cls(model)``, where it cuts the last block's query,
            output and FFN work from ``S`` rows to one (about 1/L of the
            model's matmuls) and leaves the outputs as they are.
    """
    if cls_only is None:
        cls_only = reads_only_cls(model)
    options = {"mask_value": float(mask_value)}
    if cls_only:
        options["cls_only"] = True
    return rebuild(model, **options)


def _word_tables_as_embedding_lookups(blob):
    """``(blob, widths)``: ``blob`` with each GATHER that reads a constant 2-D
    table by a 1-D index rewritten as the equivalent EMBEDDING_LOOKUP (same
    output), and the row widths of the rewritten tables.

    The LiteRT quantizer stores an EMBEDDING_LOOKUP's table in 4 bits but
    refuses a GATHER's ("Unsupported op ... GATHER"), and TensorFlow's
    converter only ever writes GATHER; no library does this rewrite, so it
    is done here on the flatbuffer. A table that another op also reads (the
    MLM decoder's tied word table) is left as it is: the quantizer cannot
    give one tensor two encodings.
    """
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(blob, 0))
    codes = [max(c.builtinCode, c.deprecatedBuiltinCode) for c in model.operatorCodes]
    lookup_code = None
    widths = set()
    for graph in model.subgraphs:
        readers = {}
        for op in graph.operators:
            for t in op.inputs:
                readers[int(t)] = readers.get(int(t), 0) + 1
        for op in graph.operators:
            if codes[op.opcodeIndex] != schema.BuiltinOperator.GATHER or len(op.inputs) != 2:
                continue
            table, index = (int(t) for t in op.inputs)
            options = op.builtinOptions
            if (len(graph.tensors[table].shape) != 2 or len(graph.tensors[index].shape) != 1
                    or model.buffers[graph.tensors[table].buffer].data is None
                    or readers[table] != 1
                    or (options is not None and (options.axis != 0 or options.batchDims != 0))):
                continue
            if lookup_code is None:
                code = schema.OperatorCodeT()
                code.builtinCode = code.deprecatedBuiltinCode = (
                    schema.BuiltinOperator.EMBEDDING_LOOKUP)
                code.version = 1
                model.operatorCodes.append(code)
                lookup_code = len(model.operatorCodes) - 1
            op.opcodeIndex = lookup_code
            op.inputs = [index, table]  # EMBEDDING_LOOKUP takes (ids, table)
            op.builtinOptionsType = schema.BuiltinOptions.NONE
            op.builtinOptions = None
            widths.add(int(graph.tensors[table].shape[1]))
    if not widths:
        return blob, widths
    builder = flatbuffers.Builder(len(blob) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output()), widths


def _int4_weights(blob):
    """``blob`` with every FULLY_CONNECTED weight and the word table in 4
    bits by the LiteRT quantizer (dynamic: activations are quantized on the
    fly where the kernel supports it).

    Dense kernels get one scale per block of 32 inputs, or one per output
    channel when a width is not a multiple of 32 (the quantizer refuses such
    blocks). The word table gets the largest block (up to 256) that divides
    its width, usually one scale per row: a lookup reads whole rows, and a
    block of 32 four-bit values pays 2 bytes of float16 scale for 16 bytes of
    data, 12.5% on the table that dominates a small model's file (it kept
    the h64 student's int4 file above 60% of its dynamic-int8 one).
    Per-channel is the last resort for the table: the flatbuffer keeps a
    float32 scale and an int64 zero point per row there, 12 bytes a row."""
    from litert_quantizer import Quantizer
    from litert_quantizer import qtyping
    from litert_quantizer import recipe_manager
    from litert_quantizer.recipe import QuantGranularity

    blob, widths = _word_tables_as_embedding_lookups(blob)
    table_granularity = QuantGranularity.CHANNELWISE
    for size in (256, 128, 64, 32):
        if widths and all(w % size == 0 for w in widths):
            table_granularity = getattr(QuantGranularity, f"BLOCKWISE_{size}")
            break

    def run(dense_granularity):
        recipe = recipe_manager.RecipeManager()
        recipe.add_dynamic_config(regex=".*",
                                  operation_name=qtyping.TFLOperationName.FULLY_CONNECTED,
                                  num_bits=4, granularity=dense_granularity)
        recipe.add_dynamic_config(regex=".*",
                                  operation_name=qtyping.TFLOperationName.EMBEDDING_LOOKUP,
                                  num_bits=4, granularity=table_granularity)
        quiet = io.StringIO()  # it prints a size summary and progress bars
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            result = Quantizer(blob, recipe.get_quantization_recipe()).quantize()
        return bytes(result.quantized_model)

    try:
        return run(QuantGranularity.BLOCKWISE_32)
    except Exception as e:  # the quantizer raises several types
        if "not divisible by block size" not in str(e):
            raise
        return run(QuantGranularity.CHANNELWISE)


def _int_spec(shape, name):
    return tf.TensorSpec(shape, tf.int32, name=name)


@dataclasses.dataclass(frozen=True)
class Signature:
    """The ``.tflite``'s inputs and outputs beyond the ids-in default.

    Args:
        tokenizer: the in-graph tokenizer layer: string inputs (``text``,
            and ``text_pair`` with ``pair``), tokenized and packed in the graph.
        pair: two texts per example.
        truncate: how the packer cuts a long input.
        num_choices: multiple choice: the ``C`` of ``[1, C, S]`` inputs.
        max_predictions: the MLM's ``masked_positions`` length.
        special_ids: the tokenizer's special ids, for the packer.
        probabilities: a classifier outputs ``probability`` (the softmax of
            its logits, what app runtimes show as scores) instead of ``logits``.
    """

    tokenizer: object = None
    pair: bool = False
    truncate: str = DEFAULT_TRUNCATE
    num_choices: int = None
    max_predictions: int = 20
    special_ids: dict = None
    probabilities: bool = False


def serving_function(model, sequence_length=128, signature=None, **fields):
    """The function the ``.tflite`` runs, with its named inputs and outputs.

    Ids-in: ``ids``, ``mask``, ``segment_ids`` (int32 ``[1, S]``; ``[1, C,
    S]`` for multiple choice; plus ``masked_positions`` ``[1, P]`` for the
    MLM). String-in (``signature.tokenizer`` given): ``text`` (and
    ``text_pair``), scalar strings; the tokenizer and packer run inside the
    graph.

    Args:
        model: the Keras model to serve.
        sequence_length: ``S``.
        signature: a ``Signature``.
        **fields: ``Signature`` fields, as a shorthand for ``signature``.
    """
    sig = dataclasses.replace(signature or Signature(), **fields)
    kind, output_names = model_kind(model)

    def run(ids, mask, segment_ids, extra=None):
        inputs = {"token_ids": ids, "padding_mask": mask, "segment_ids": segment_ids}
        if kind.masked_positions:
            inputs["masked_positions"] = extra
        out = model(inputs, training=False)
        if sig.probabilities and kind.probabilities:
            return {"probability": tf.nn.softmax(tf.cast(out["logits"], tf.float32), -1)}
        return {name: tf.cast(out[name], tf.float32) for name in output_names}

    if sig.tokenizer is not None:
        if not kind.one_text:
            raise ExportError(f"{arg('with_tokenizer')} does not support {kind.article()} "
                              f"{kind} model")
        return _string_in(run, int(sequence_length), sig)
    return _ids_in(run, kind, int(sequence_length), sig)


def _string_in(run, S, sig):
    """``text`` (and ``text_pair``) in: tokenized and packed in the graph."""
    tokenizer = sig.tokenizer
    if sig.pair:
        @tf.function(input_signature=[tf.TensorSpec([], tf.string, name="text"),
                                      tf.TensorSpec([], tf.string, name="text_pair")])
        def serve(text, text_pair):
            ids, mask, segments = pack_one(tokenizer(text), tokenizer(text_pair), S,
                                           sig.truncate, sig.special_ids)
            return run(ids, mask, segments)
        return serve

    @tf.function(input_signature=[tf.TensorSpec([], tf.string, name="text")])
    def serve_one(text):
        ids, mask, segments = pack_one(tokenizer(text), None, S, sig.truncate, sig.special_ids)
        return run(ids, mask, segments)
    return serve_one


def _ids_in(run, kind, S, sig):
    """``ids``, ``mask``, ``segment_ids`` in (and ``masked_positions`` for the MLM)."""
    if kind.per_choice and not sig.num_choices:
        raise ExportError("a multiple-choice export needs the number of choices")
    shape = [1, int(sig.num_choices), S] if kind.per_choice else [1, S]
    if kind.masked_positions:
        @tf.function(input_signature=[_int_spec(shape, "ids"), _int_spec(shape, "mask"),
                                      _int_spec(shape, "segment_ids"),
                                      _int_spec([1, sig.max_predictions], "masked_positions")])
        def serve_mlm(ids, mask, segment_ids, masked_positions):
            return run(ids, mask, segment_ids, masked_positions)
        return serve_mlm

    @tf.function(input_signature=[_int_spec(shape, "ids"), _int_spec(shape, "mask"),
                                  _int_spec(shape, "segment_ids")])
    def serve(ids, mask, segment_ids):
        return run(ids, mask, segment_ids)
    return serve


def convert(model, serve, quantize="none", representative=None, tokenizer=None,
            int8=None):
    """Converts ``serve`` (from ``serving_function``) to TFLite bytes.

    Args:
        model: the Keras model ``serve`` calls (its variables are tracked).
        serve: the serving ``tf.function``, or ``{signature name: function}``
            (``serving_default`` first): one file whose signatures share the
            weights.
        quantize: ``none``, ``float16``, ``dynamic``, ``int8``, ``int4``
            (the dense layers' weights and the word table in 4 bits by the
            LiteRT quantizer) or ``qat`` (a model with fake-quant
            ops, converted to int8 from its own ranges).
        representative: for ``int8``: a list of feed dicts (input name ->
            array) drawn from real data.
        tokenizer: the in-graph tokenizer layer (string-in), if any.
        int8: for ``int8``: an ``Int8Recipe`` (default: dense scope,
            per-channel weights, no extra float layers).
    """
    int8 = int8 or Int8Recipe()
    _check_modes(quantize, int8, representative)
    endpoints = serve if isinstance(serve, dict) else {"serving_default": serve}
    with tempfile.TemporaryDirectory() as folder:
        archive = keras.export.ExportArchive()
        archive.track(model)
        if tokenizer is not None:
            archive.track(tokenizer)
        for name, function in endpoints.items():
            archive.add_endpoint(name, function)
        archive.write_out(folder, verbose=False)
        converter = _configured_converter(folder, quantize, representative, tokenizer,
                                          list(endpoints))
        blob = _converted(converter, quantize, int8)
    if quantize == "int4":
        try:
            blob = _int4_weights(blob)
        except Exception as e:  # the quantizer raises several types
            message = " ".join(str(e).split())
            raise ExportError(f"int4 quantization failed: {message[:300]}") from None
    if tokenizer is None:
        _refuse_custom_ops(blob)
    return blob


def _check_modes(quantize, int8, representative):
    if quantize not in QUANTIZE_MODES:
        raise ExportError(f"quantize must be one of {QUANTIZE_MODES}, got {quantize!r}")
    int8.check()
    if quantize == "int8" and not representative:
        raise ExportError(f"int8 needs representative examples ({arg('representative')})")


def _configured_converter(folder, quantize, representative, tokenizer, signature_keys):
    """A converter on the saved model's ``signature_keys``, builtins only,
    set for ``quantize``."""
    converter = tf.lite.TFLiteConverter.from_saved_model(folder, signature_keys=signature_keys)
    # Builtins only: no Python runtime here ships the Flex delegate.
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = tokenizer is not None
    if tokenizer is not None:
        import tensorflow_text

        # int8 calibration runs the graph in LiteRT: the tokenizer's op
        # must be known there too
        converter.target_spec._experimental_custom_op_registerers = list(
            tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS)
    if quantize in ("float16", "dynamic", "int8", "qat"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantize == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if quantize in ("int8", "qat") and representative:
        # qat: the fake-quant ops give the dense layers' ranges; the
        # representative examples calibrate what they do not cover
        # (embedding tables, LayerNorm, softmax), so both are int8.
        feeds = list(representative)
        converter.representative_dataset = lambda: (
            {k: to_feed(v) for k, v in feed.items()} for feed in feeds)
    return converter


def _converted(converter, quantize, int8):
    """The converter's bytes; a graph that needs Flex ops is named as such."""
    try:
        # the calibration inside runs TensorFlow's own (deprecated)
        # tf.lite.Interpreter, which warns about itself; ours is LiteRT's
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"\s*Warning: tf.lite.Interpreter")
            return _run_converter(converter, quantize, int8)
    except ExportError:
        raise
    except Exception as e:  # the converter raises several types
        message = " ".join(str(e).split())
        if "Flex" in message or "Select TF" in message or "select TF" in message or \
                "not supported by the tflite" in message.lower():
            raise ExportError(
                "the model needs TensorFlow ops outside TFLite's builtins (the Flex "
                f"delegate), which LiteRT's Python runtime lacks: {message[:300]}"
            ) from None
        raise ExportError(f"TFLite conversion failed: {message[:300]}") from None


def _run_converter(converter, quantize, int8):
    # The converter's private switch, read by both routes: TensorFlow offers
    # no public one (per-channel is its default).
    converter._experimental_disable_per_channel = int8.weights == "per-tensor"
    if quantize not in ("int8", "qat") or (int8.scope == "all" and not int8.float_layers):
        return converter.convert()
    # qat too: converted whole, its fake-quant ranges made every op int8,
    # and the ops without fast int8 kernels (see FLOAT_OPS_IN_DENSE_INT8)
    # ran it 12x slower than post-training int8 on a CPU (century teacher)
    return int8_quantized(converter, int8)


def _refuse_custom_ops(blob):
    from ai_edge_litert.interpreter import Interpreter

    try:
        with stderr_silenced():  # LiteRT's "Created ... XNNPACK delegate" line
            Interpreter(model_content=blob).allocate_tensors()
    except RuntimeError as e:
        raise ExportError(f"the converted model does not run in LiteRT: {e}") from None
