"""``albert-keras export``: a model folder or ``.keras`` in, a validated
``.tflite`` and its JSON sidecar out.

Phases: load the model and what the folder knows (task, labels, sequence
length, tokenizer, data files) -> examples for validation (and for int8
calibration) -> convert -> run in LiteRT and compare with Keras -> write
``MODEL.tflite`` and ``MODEL.json`` under temporary names, then rename.
Nothing is written when validation fails.
"""

import dataclasses
import json
import logging
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

from albert_keras import __version__
from albert_keras.config import DEFAULT_TRUNCATE
from albert_keras.export.app_runtime import OUTPUT_DESCRIPTIONS
from albert_keras.export.app_runtime import check_app_model
from albert_keras.export.app_runtime import run_in_mediapipe
from albert_keras.export.converter import ExportError
from albert_keras.export.converter import Signature
from albert_keras.export.converter import convert
from albert_keras.export.converter import model_kind
from albert_keras.export.converter import prepare_for_export
from albert_keras.export.converter import serving_function
from albert_keras.export.export_config import ExportConfig
from albert_keras.export.export_config import arg
from albert_keras.export.metadata import ModelInfo
from albert_keras.export.metadata import metadata_schema
from albert_keras.export.metadata import signature_order
from albert_keras.export.metadata import with_metadata
from albert_keras.export.model_card import model_card
from albert_keras.export.source import classifier_spec
from albert_keras.export.source import load_source
from albert_keras.export.validation import validate
from albert_keras.files import atomic_path
from albert_keras.files import atomic_write
from albert_keras.files import check_output
from albert_keras.files import sha256_file
from albert_keras.model_folder import ModelSource
from albert_keras.options import check_options
from albert_keras.saving import save_model
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import ValidationTexts
from albert_keras.tasks.task import softmax
from albert_keras.text.packer import SegmentPacker

logger = logging.getLogger(__name__)

SIDECAR_FORMAT = "albert-keras-tflite/1"


# -- what the source is ------------------------------------------------------------------


# -- examples -------------------------------------------------------------------------------


def _texts_from_file(path, spec, tokenizer, pair):
    """``ValidationTexts`` from a task file (through its task) or plain text."""
    if spec is not None:
        return get_task(spec.task).validation_texts(path, spec, tokenizer)
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if pair:
        split = [line.split("\t", 1) for line in lines]
        if any(len(s) != 2 for s in split):
            raise ExportError(f"{path}: with {arg('pair')} each line must be 'text<TAB>pair'")
        return ValidationTexts([s[0] for s in split], [s[1] for s in split])
    return ValidationTexts(lines)


class Examples:
    """Feeds for the ``.tflite`` and the matching Keras inputs (and the texts
    they were made from, when they were)."""

    def __init__(self, keras_inputs, feeds, labels=None, source="", texts=None):
        self.keras_inputs, self.feeds, self.labels, self.source = \
            keras_inputs, feeds, labels, source
        self.texts = texts

    def __len__(self):
        return len(self.feeds)


def build_examples(path, job, count, seed, string_in=False):
    """Up to ``count`` examples from ``path`` (random ids when it is None).

    Args:
        path: a task or text file, or None.
        job: the export's ``_Job`` (kind, spec, tokenizer, sequence length,
            pair, choices, model).
        count: the most examples.
        seed: the sample's (and the random ids') seed.
        string_in: feeds of texts (``text``, ``text_pair``) instead of ids.
    """
    rng = np.random.default_rng(seed)
    if path is None and string_in:
        raise ExportError(f"string-in validation needs texts: pass {arg('validation_data')}")
    x, found, row_texts = ((_random_ids(job, count, rng), None, None) if path is None
                           else _file_examples(path, job, count, rng))
    source = path or "random ids (no data given)"
    n = min(count, len(x["token_ids"]))
    x = {k: v[:n] for k, v in x.items()}
    if job.kind == "mlm":
        x["masked_positions"] = np.tile(np.minimum(np.arange(1, Signature.max_predictions + 1),
                                                   job.sequence_length - 1), (n, 1)).astype(np.int32)
    if string_in:
        feeds = [{"text": found.texts[i],
                  **({"text_pair": found.pairs[i]} if found.pairs else {})} for i in range(n)]
    else:
        names = {"token_ids": "ids", "padding_mask": "mask", "segment_ids": "segment_ids",
                 "masked_positions": "masked_positions"}
        feeds = [{names[k]: v[i:i + 1] for k, v in x.items()} for i in range(n)]
    labels = found.labels if found is not None else None
    return Examples(x, feeds, labels[:n] if labels is not None else None, source,
                    row_texts[:n] if row_texts is not None else None)


def _random_ids(job, count, rng):
    """Random packed ids of random lengths, ``[CLS]`` first (no data given)."""
    S = job.sequence_length
    shape = (count, job.num_choices, S) if job.kind == "choice" else (count, S)
    ids = rng.integers(5, job.model.config.vocab_size, shape).astype(np.int32)
    lengths = rng.integers(3, S + 1, shape[:-1])
    mask = (np.arange(S) < lengths[..., None]).astype(np.int32)
    special = job.tokenizer.special_ids
    ids = np.where(mask == 1, ids, special["pad"]).astype(np.int32)
    ids[..., 0] = special["cls"]
    return {"token_ids": ids, "padding_mask": mask, "segment_ids": np.zeros_like(ids)}


def _file_examples(path, job, count, rng):
    """``(x, found, row_texts)``: a sample of the file's rows, packed as the
    model reads them (``found`` keeps the sampled texts, pairs and labels)."""
    if job.tokenizer is None:
        raise ExportError(f"no tokenizer found for the validation texts: pass {arg('tokenizer')}")
    spec = job.spec.replace(sequence_length=job.sequence_length) if job.spec else None
    found = _texts_from_file(path, spec, job.tokenizer, job.pair)
    if found.x is not None:
        return found.x, found, None
    order = rng.permutation(len(found.texts))[:count]
    found = dataclasses.replace(
        found, texts=[found.texts[i] for i in order],
        pairs=[found.pairs[i] for i in order] if found.pairs else None,
        labels=[found.labels[i] for i in order] if found.labels is not None else None)
    layer = job.tokenizer.keras_layer()
    packer = SegmentPacker(job.sequence_length,
                          truncate=spec.truncate if spec else DEFAULT_TRUNCATE,
                          special_ids=job.tokenizer.special_ids)
    packed = packer(layer(tf.constant(found.texts)),
                    layer(tf.constant(found.pairs)) if found.pairs else None)
    return ({k: v.numpy() for k, v in packed.items()}, found,
            None if found.pairs else found.texts)


# -- the export ---------------------------------------------------------------------------------


def export_tflite(source, out, config=None):
    """Converts, validates and writes; returns the sidecar dict.

    With ``quantize="qat"`` the (fine-tuned) model is first fine-tuned for
    ``qat_epochs`` with fake quantization on ``qat_data`` (default: its own
    training file), then converted to int8 with the learned ranges; it is
    validated against that quantization-aware Keras model. With ``metadata``
    the file also carries what MediaPipe Tasks and the TFLite Task Library
    read (``albert_keras.export.metadata``), and MediaPipe runs it before it
    is written (this needs the ``mediapipe`` extra, checked before any
    work). A model card (``MODEL.md``) goes beside it.

    Args:
        source: a model folder or ``.keras`` file, or a model object (a
            ``TextClassifier``, ``TextEmbedder`` or one of our Keras models).
        out: the ``.tflite`` to write (the sidecar ``.json`` goes beside it).
        config: an ``ExportConfig``.

    Example:
    >>> export_tflite("runs/classifier", "model.tflite",
    ...               ExportConfig(quantize="dynamic"))  # doctest: +SKIP
    """
    c = config or ExportConfig()
    if not isinstance(source, (str, os.PathLike)):  # a model object: saved, then read
        with tempfile.TemporaryDirectory() as tmp:
            seen = getattr(source, "write_seen_rows", None)
            if c.validation_data is None and seen is not None:
                # validated on the texts the object was trained on, not on random ids
                rows = seen(os.path.join(tmp, "seen_rows.csv"))
                c = dataclasses.replace(c, validation_data=rows)
            return export_tflite(_saved_object(source, tmp), out, c)
    origin = ModelSource(os.fspath(source), c.tokenizer)  # each of its files read once
    paths = _check_request(origin, out, c)
    job = _load(origin, c)
    checks, calibration = _examples(job, c)
    if c.quantize == "qat":
        from albert_keras.export.qat import qat_finetune

        job.model = qat_finetune(job.model, job.spec,
                                 c.qat_data or job.origin.data_file("train"), job.tokenizer,
                                 epochs=c.qat_epochs, learning_rate=c.qat_learning_rate,
                                 seed=c.seed)
    blob, exported, reference = _convert(job, c, calibration)
    report = _validate(job, c, blob, reference, checks)
    if c.metadata:
        blob, report["mediapipe"] = _add_metadata(job, c, blob, checks)
    sidecar = _sidecar(job, c, exported, blob, report)
    logger.info(f"validated; writing {out} ({len(blob) / 1e6:.2f} MB), {paths['sidecar']} "
                f"and {paths['card']}")
    # The model is renamed into place first: when that fails, the sidecar's
    # and the card's temporary files are removed too, so a failure leaves none.
    with atomic_write(paths["card"]) as card, atomic_write(paths["sidecar"]) as f, \
            atomic_path(out) as tmp:
        with open(tmp, "wb") as blob_file:
            blob_file.write(blob)
        sidecar["sha256"] = sha256_file(tmp)
        json.dump(sidecar, f, indent=2, sort_keys=True)
        card.write(model_card(sidecar, os.path.basename(out)))
    return sidecar


def _saved_object(model, folder):
    """Where ``model`` (a Python task object, or one of our Keras models) was
    written under ``folder``: a task object's ``save_to_preset`` folder, else
    a ``.keras`` file; named after the model, which the sidecar and the
    model card then name."""
    name = getattr(model, "name", None) or "model"
    if hasattr(model, "save_to_preset"):
        return model.save_to_preset(os.path.join(folder, name))
    inner = getattr(model, "embedder", None) or model
    if not isinstance(inner, keras.Model):
        raise ExportError(f"cannot export a {type(model).__name__}: give a model folder, a "
                          ".keras file, a task object or one of albert-keras' Keras models")
    path = os.path.join(folder, f"{name}.keras")
    save_model(inner, path)
    return path


def _check_request(origin, out, c):
    """Everything that can be refused before any work; the side files' paths."""
    source = origin.path
    check_options(c)
    if keras.backend.backend() != "tensorflow":
        raise ExportError(f"the TFLite export runs on Keras' TensorFlow backend; this process "
                          f"runs {keras.backend.backend()} (set KERAS_BACKEND=tensorflow)")
    if not out.endswith(".tflite"):
        raise ExportError(f"{out}: the output must end in .tflite")
    stem = out[: -len(".tflite")]
    paths = {"sidecar": stem + ".json", "card": stem + ".md"}
    for path in (out, *paths.values()):
        # never over the source model (a folder's task.json, say), and an
        # existing side file is named as itself
        check_output(path, [source, c.tokenizer], c.overwrite)
    if c.quantize == "qat" and not origin.task_spec:
        raise ExportError(f"{source}: {arg('quantize')} qat fine-tunes with fake quantization, so it "
                          "needs a fine-tuned task folder (task.json and its training file)")
    if c.metadata:
        metadata_schema()  # the mediapipe extra: said now, not after converting
    if c.metadata and c.with_tokenizer:
        raise ExportError(f"{arg('metadata')} is for app runtimes, which tokenize themselves: "
                          f"it takes ids in, so drop {arg('with_tokenizer')}")
    return paths


@dataclasses.dataclass
class _Job:
    """What the export works on, read once from the source."""

    origin: ModelSource
    model: object
    spec: object
    tokenizer: object
    folder: str
    kind: str
    output_names: tuple
    sequence_length: int
    pair: bool
    num_choices: int

    @property
    def source(self):
        """The folder or ``.keras`` file, as the user named it."""
        return self.origin.path


def _load(origin, c):
    source = origin.path
    model, spec, tokenizer, folder = load_source(origin, c.part)
    if tokenizer is None:
        # the sidecar, the app and the validation ids all need the special ids
        # ([CLS], [SEP], padding), which only the tokenizer knows
        raise ExportError(f"{source}: the model carries no tokenizer and none lies beside it, "
                          "so its special ids ([CLS], [SEP], padding) are unknown: pass "
                          f"{arg('tokenizer')}")
    kind, output_names = model_kind(model)
    spec = spec or classifier_spec(kind, model, source)
    S = int(c.sequence_length or (spec.sequence_length if spec else 128))
    if S > model.config.max_position_embeddings:
        raise ExportError(f"{arg('sequence_length')} {S} exceeds max_position_embeddings "
                          f"{model.config.max_position_embeddings}")
    pair = c.pair
    if pair is None:
        pair = bool(spec and (spec.text_pair_column or get_task(spec.task).always_pairs))
    num_choices = c.num_choices
    if kind == "choice":
        num_choices = num_choices or (spec.num_choices if spec else None)
    if c.metadata:
        output_names = check_app_model(kind, output_names, pair, tokenizer)
    return _Job(origin, model, spec, tokenizer, folder, kind, output_names, S, pair, num_choices)


def _examples(job, c):
    """The validation examples, and the calibration examples of int8 modes."""
    validation_path = (c.validation_data or job.origin.data_file("eval")
                       or job.origin.data_file("train") or c.representative)
    calibration_path = c.representative or job.origin.data_file("train")
    checks = build_examples(validation_path, job, c.examples, c.seed, c.with_tokenizer)
    calibration = None
    if c.quantize in ("int8", "qat"):
        if calibration_path is None:
            raise ExportError("int8 needs representative examples from real data: "
                              "pass --representative FILE")
        calibration = build_examples(calibration_path, job, c.calibration_examples,
                                     c.seed + 1, c.with_tokenizer)
    return checks, calibration


def _convert(job, c, calibration):
    """``(blob, the exported Keras model, the float Keras reference)``."""
    exported = prepare_for_export(job.model, c.mask_value)
    # Keras' own numbers: the same weights in float32, with the mask it was
    # trained with and every row of the last block computed.
    reference = prepare_for_export(job.model, _encoder(job.model).mask_value, cls_only=False)
    layer = job.tokenizer.keras_layer() if c.with_tokenizer else None
    serve = serving_function(
        exported, job.sequence_length, tokenizer=layer, pair=job.pair,
        truncate=job.spec.truncate if job.spec else DEFAULT_TRUNCATE,
        num_choices=job.num_choices,
        special_ids=job.tokenizer.special_ids if job.tokenizer else None,
        probabilities=c.metadata and job.kind == "classifier")
    logger.info(f"converting the {job.kind} ({c.quantize}, sequence {job.sequence_length}"
                + (", string-in" if c.with_tokenizer else "") + ") ...")
    blob = convert(exported, serve, c.quantize,
                   representative=calibration.feeds if calibration else None, tokenizer=layer,
                   int8_scope=c.int8_scope)
    return blob, exported, reference


def reference_outputs(reference, keras_inputs, output_names):
    """Keras' outputs per example, under the exported names (a classifier
    exported with probabilities: the softmax of its logits)."""
    outputs = reference.predict(dict(keras_inputs), batch_size=16, verbose=0)
    if "probability" in output_names:
        outputs = {"probability": softmax(np.asarray(outputs["logits"], np.float32))}
    n = len(next(iter(outputs.values())))
    return [{name: np.asarray(outputs[name][i:i + 1], np.float32) for name in output_names}
            for i in range(n)]


def _validate(job, c, blob, reference, checks):
    from albert_keras.export import validation as v

    logger.info(f"validating {len(checks)} examples in LiteRT against Keras ...")
    expected = reference_outputs(reference, checks.keras_inputs, job.output_names)
    given = {name: getattr(c, name) for name in ("tolerance", "min_cosine", "min_agreement",
                                                 "max_probability_diff", "max_accuracy_drop")
             if getattr(c, name) is not None}
    report = validate(blob, checks.feeds, expected, c.quantize, v.Bounds(**given),
                      labels=checks.labels, kind=job.kind)
    # a file name, not a path: nothing shipped names the exporting machine
    report["data"] = os.path.basename(checks.source) if os.path.sep in checks.source \
        else checks.source
    if c.quantize in ("int8", "qat"):
        from albert_keras.export.runtime import float_ops

        # Gathers of the embedding tables and the int32 inputs stay as they
        # are; ops without int8 kernels (or fed float by them) stay float.
        report["float_ops"] = float_ops(blob)
    return report


def _add_metadata(job, c, blob, checks):
    """The blob with app-runtime metadata, and MediaPipe's own check of it."""
    info = ModelInfo(name=_model_name(job), description=_description(job),
                     version=__version__)
    labels = list(job.spec.labels) if job.kind == "classifier" and job.spec else None
    blob = with_metadata(blob, info, job.tokenizer, OUTPUT_DESCRIPTIONS, labels=labels)
    return blob, run_in_mediapipe(blob, job, c, checks)


def _sidecar(job, c, exported, blob, report):
    spec, tokenizer = job.spec, job.tokenizer
    tensor_order = signature_order(blob)
    return {
        "format": SIDECAR_FORMAT,
        "kind": job.kind,
        "task": spec.task if spec else None,
        "labels": list(spec.labels or []) if spec else [],
        "sequence_length": job.sequence_length,
        "quantize": c.quantize,
        "string_in": bool(c.with_tokenizer),
        "metadata": bool(c.metadata),
        # in the order of the file's input and output tensors, which is what
        # a runtime that binds by position (LiteRT.js, a C API) lists: ids,
        # segment_ids, mask, not the order the signature was written in
        "inputs": list(tensor_order[0]),
        "outputs": list(tensor_order[1]),
        "special_ids": tokenizer.special_ids,
        "tokenizer": tokenizer.kind,
        "truncate": job.spec.truncate if job.spec else DEFAULT_TRUNCATE,
        "mask_value": c.mask_value,
        # the last block computed only the [CLS] row (pooled-output models)
        "cls_only": bool(_encoder(exported).cls_only),
        "num_choices": job.num_choices,
        "size_bytes": len(blob),
        "validation": report,
        # the model's name, not its path: nothing shipped names the exporting machine
        "source": _model_name(job),
        "base_model": _base_model(job),
    }


def _base_model(job):
    """The name of the checkpoint a fine-tuned folder started from (its
    ``train_config.json``'s ``init``), or None."""
    init = job.origin.train_config.get("init")
    return os.path.basename(os.path.normpath(init)) if isinstance(init, str) and init else None


def _model_name(job):
    return os.path.basename(os.path.normpath(job.source)) or "model"


def _description(job):
    what = {"classifier": "Classifies a text", "embedder": "Embeds a text",
            "qa": "Finds the answer to a question in a text"}[job.kind]
    labels = f" into {', '.join(job.spec.labels)}" if job.kind == "classifier" and \
        job.spec and job.spec.labels and len(job.spec.labels) <= 10 else ""
    return f"{what}{labels}. An ALBERT-family encoder exported by albert-keras."


def _encoder(model):
    return model if hasattr(model, "mask_value") else model.encoder
