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
import io
import tempfile

import keras
import tensorflow as tf

from albert_keras.models.albert_classifier import AlbertClassifier
from albert_keras.models.albert_embedder import AlbertEmbedder
from albert_keras.models.albert_encoder import AlbertEncoder
from albert_keras.models.albert_multiple_choice import AlbertMultipleChoice
from albert_keras.models.albert_discriminator import AlbertDiscriminator
from albert_keras.models.albert_pretrainer import AlbertPretrainer
from albert_keras.models.albert_question_answerer import AlbertQuestionAnswerer
from albert_keras.models.albert_token_classifier import AlbertTokenClassifier
from albert_keras.export.export_config import QUANTIZE_MODES
from albert_keras.export.runtime import to_feed
from albert_keras.export.string_input import pack_one


# Model class -> (kind, output names).
KINDS = {
    AlbertEncoder: ("encoder", ("sequence_output", "pooled_output")),
    AlbertClassifier: ("classifier", ("logits",)),
    AlbertTokenClassifier: ("tagger", ("logits",)),
    AlbertQuestionAnswerer: ("qa", ("start_logits", "end_logits")),
    AlbertMultipleChoice: ("choice", ("logits",)),
    AlbertEmbedder: ("embedder", ("embeddings",)),
    AlbertPretrainer: ("mlm", ("mlm_logits", "sop_logits")),
    AlbertDiscriminator: ("discriminator", ("rtd_logits",)),
}

# Our encoder inputs under the TFLite Task Library's names.
INPUT_NAMES = {"ids": "token_ids", "mask": "padding_mask", "segment_ids": "segment_ids"}


class ExportError(ValueError):
    """A model that cannot be exported as asked (one-line message)."""


def model_kind(model):
    for cls, (kind, outputs) in KINDS.items():
        if type(model) is cls:
            return kind, outputs
    raise ExportError(f"cannot export a {type(model).__name__}; expected one of "
                      + ", ".join(c.__name__ for c in KINDS))


def rebuild(model, **encoder_options):
    """A float32 copy of ``model`` whose encoder takes ``encoder_options``
    (``mask_value``, ``quantize_aware``), with the weights copied by path.

    Copying by path lets a quantization-aware copy, which has range
    variables of its own, take a float model's weights.
    """
    config = model.get_config()
    encoder_config = config if isinstance(model, AlbertEncoder) else config["encoder"]["config"]
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


def prepare_for_export(model, mask_value=-120.0):
    """A float32 copy of ``model`` whose attention mask adds ``mask_value``.

    Training may leave a ``mixed_bfloat16`` policy, which TFLite should not
    see; and a bounded mask (-120 instead of -10000, as MobileBERT-EdgeTPU)
    lets full-int8 quantization keep the scores' resolution: a -10000 bias
    stretches the int8 range of the scores. ``exp(-120)`` is 0 in float32, so the float outputs are unchanged.
    """
    return rebuild(model, mask_value=float(mask_value))


def quantize_word_table(model):
    """Stores the token embedding of ``model``'s encoder as int8 with one
    scale per row (Keras' own ``Embedding.quantize``), in place.

    For ``int4``: the LiteRT quantizer quantizes the dense layers' weights
    but not a GATHER's table ("Unsupported op for ComputePrecision.FLOAT:
    GATHER"), and the word table is most of a small ALBERT's file. Only the
    token table: the position and segment tables are read as ``.embeddings``
    directly, which a quantized Embedding no longer holds in float.
    """
    if isinstance(model, AlbertPretrainer):
        # its MLM decoder reads the tied table as a matrix: it stays float
        return model
    encoder = model if isinstance(model, AlbertEncoder) else model.encoder
    encoder.embeddings.token_embedding.quantize("int8")
    return model


def _int4_dense_weights(blob):
    """``blob`` with every FULLY_CONNECTED weight in 4 bits by the LiteRT
    quantizer (dynamic: activations are quantized on the fly where the
    kernel supports it): one scale per block of 32 inputs, or one per
    output channel when some layer's input width is not a multiple of 32
    (the quantizer refuses such blocks)."""
    from litert_quantizer import Quantizer
    from litert_quantizer import qtyping
    from litert_quantizer import recipe_manager
    from litert_quantizer.recipe import QuantGranularity

    def run(granularity):
        recipe = recipe_manager.RecipeManager()
        recipe.add_dynamic_config(
            regex=".*", operation_name=qtyping.TFLOperationName.FULLY_CONNECTED, num_bits=4,
            granularity=granularity)
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


def serving_function(model, sequence_length=128, tokenizer=None, pair=False,
                     truncate="longest_first", num_choices=None, max_predictions=20,
                     special_ids=None):
    """The function the ``.tflite`` runs, with its named inputs and outputs.

    Ids-in: ``ids``, ``mask``, ``segment_ids`` (int32 ``[1, S]``; ``[1, C,
    S]`` for multiple choice; plus ``masked_positions`` ``[1, P]`` for the
    MLM). String-in (``tokenizer`` given): ``text`` (and ``text_pair``),
    scalar strings; the tokenizer and packer run inside the graph.
    """
    kind, output_names = model_kind(model)
    S = int(sequence_length)

    def run(ids, mask, segment_ids, extra=None):
        inputs = {"token_ids": ids, "padding_mask": mask, "segment_ids": segment_ids}
        if kind == "mlm":
            inputs["masked_positions"] = extra
        out = model(inputs, training=False)
        return {name: tf.cast(out[name], tf.float32) for name in output_names}

    if tokenizer is not None:
        if kind in ("choice", "mlm"):
            raise ExportError(f"--with-tokenizer does not support a {kind} model")
        if pair:
            @tf.function(input_signature=[tf.TensorSpec([], tf.string, name="text"),
                                          tf.TensorSpec([], tf.string, name="text_pair")])
            def serve(text, text_pair):
                ids, mask, segments = pack_one(tokenizer(text), tokenizer(text_pair), S, truncate,
                                                special_ids)
                return run(ids, mask, segments)
        else:
            @tf.function(input_signature=[tf.TensorSpec([], tf.string, name="text")])
            def serve(text):
                ids, mask, segments = pack_one(tokenizer(text), None, S, truncate, special_ids)
                return run(ids, mask, segments)
        return serve

    shape = [1, int(num_choices), S] if kind == "choice" else [1, S]
    if kind == "choice" and not num_choices:
        raise ExportError("a multiple-choice export needs the number of choices")
    if kind == "mlm":
        @tf.function(input_signature=[_int_spec(shape, "ids"), _int_spec(shape, "mask"),
                                      _int_spec(shape, "segment_ids"),
                                      _int_spec([1, max_predictions], "masked_positions")])
        def serve(ids, mask, segment_ids, masked_positions):
            return run(ids, mask, segment_ids, masked_positions)
        return serve

    @tf.function(input_signature=[_int_spec(shape, "ids"), _int_spec(shape, "mask"),
                                  _int_spec(shape, "segment_ids")])
    def serve(ids, mask, segment_ids):
        return run(ids, mask, segment_ids)
    return serve


def convert(model, serve, quantize="none", representative=None, tokenizer=None):
    """Converts ``serve`` (from ``serving_function``) to TFLite bytes.

    Args:
        model: the Keras model ``serve`` calls (its variables are tracked).
        serve: the serving ``tf.function``.
        quantize: ``none``, ``float16``, ``dynamic``, ``int8``, ``int4``
            (the dense layers' weights in 4 bits by the LiteRT quantizer;
            pass a model whose word table went through
            ``quantize_word_table``) or ``qat`` (a model with fake-quant
            ops, converted to int8 from its own ranges).
        representative: for ``int8``: a list of feed dicts (input name ->
            array) drawn from real data.
        tokenizer: the in-graph tokenizer layer (string-in), if any.
    """
    if quantize not in QUANTIZE_MODES:
        raise ExportError(f"quantize must be one of {QUANTIZE_MODES}, got {quantize!r}")
    if quantize == "int8" and not representative:
        raise ExportError("int8 needs representative examples (--representative DATA)")
    with tempfile.TemporaryDirectory() as folder:
        archive = keras.export.ExportArchive()
        archive.track(model)
        if tokenizer is not None:
            archive.track(tokenizer)
        archive.add_endpoint("serving_default", serve)
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        # Builtins only: no Python runtime here ships the Flex delegate.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = tokenizer is not None
        if quantize == "float16":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            converter.target_spec.supported_types = [tf.float16]
        elif quantize == "dynamic":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        elif quantize in ("int8", "qat"):
            # qat: the fake-quant ops give the dense layers' ranges; the
            # representative examples calibrate what they do not cover
            # (embedding tables, LayerNorm, softmax), so both are int8.
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
            if representative:
                feeds = list(representative)
                converter.representative_dataset = lambda: (
                    {k: to_feed(v) for k, v in feed.items()} for feed in feeds
                )
        try:
            blob = converter.convert()
        except Exception as e:  # the converter raises several types
            message = " ".join(str(e).split())
            if "Flex" in message or "Select TF" in message or "select TF" in message or \
                    "not supported by the TFLite" in message.lower():
                raise ExportError(
                    "the model needs TensorFlow ops outside TFLite's builtins (the Flex "
                    f"delegate), which LiteRT's Python runtime lacks: {message[:300]}"
                ) from None
            raise ExportError(f"TFLite conversion failed: {message[:300]}") from None
    if quantize == "int4":
        try:
            blob = _int4_dense_weights(blob)
        except Exception as e:  # the quantizer raises several types
            message = " ".join(str(e).split())
            raise ExportError(f"int4 quantization failed: {message[:300]}") from None
    if tokenizer is None:
        _refuse_custom_ops(blob)
    return blob


def _refuse_custom_ops(blob):
    from ai_edge_litert.interpreter import Interpreter

    try:
        Interpreter(model_content=blob).allocate_tensors()
    except RuntimeError as e:
        raise ExportError(f"the converted model does not run in LiteRT: {e}") from None
