"""``albert-keras export``: a model folder or ``.keras`` in, a validated
``.tflite`` and its JSON sidecar out.

Phases: load the model and what the folder knows (task, labels, sequence
length, tokenizer, data files) -> examples for validation (and for int8
calibration) -> convert -> run in LiteRT and compare with Keras -> write
``MODEL.tflite`` and ``MODEL.json`` under temporary names, then rename.
Nothing is written when validation fails.
"""

import dataclasses
import hashlib
import json
import logging
import os
import tempfile

import keras
import numpy as np

from albert_keras import __version__
from albert_keras.export.app_runtime import OUTPUT_DESCRIPTIONS
from albert_keras.export.app_runtime import check_app_model
from albert_keras.export.app_runtime import run_in_mediapipe
from albert_keras.export.converter import ExportError
from albert_keras.export.converter import convert
from albert_keras.export.converter import model_kind
from albert_keras.export.converter import prepare_for_export
from albert_keras.export.converter import serving_function
from albert_keras.export.examples import build_examples
from albert_keras.export.export_config import ExportConfig
from albert_keras.export.export_config import arg
from albert_keras.export.int8 import Int8Recipe
from albert_keras.export.int8 import check_float_layers
from albert_keras.export.lengths import check_lengths_request
from albert_keras.export.lengths import endpoints
from albert_keras.export.lengths import extra_lengths
from albert_keras.export.lengths import signature_name
from albert_keras.export.lengths import signatures
from albert_keras.export.metadata import ModelInfo
from albert_keras.export.metadata import metadata_schema
from albert_keras.export.metadata import signature_order
from albert_keras.export.metadata import with_metadata
from albert_keras.export.model_card import model_card
from albert_keras.export.source import default_spec
from albert_keras.export.source import load_source
from albert_keras.export.validation import validate
from albert_keras.export.web_corpus import corpus_record
from albert_keras.export.web_folder import MODEL_FILE
from albert_keras.export.web_folder import check_web_kind
from albert_keras.export.web_folder import check_web_request
from albert_keras.export.web_folder import write_web_folder
from albert_keras.families import family_of
from albert_keras.files import atomic_path
from albert_keras.files import atomic_write
from albert_keras.files import check_output
from albert_keras.options import check_options
from albert_keras.saving import save_model
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task import softmax
from albert_keras.text.truncation import DEFAULT_TRUNCATE
from albert_keras.training.strategy import where_it_runs

logger = logging.getLogger(__name__)

SIDECAR_FORMAT = "albert-keras-tflite/1"


# -- what the source is ------------------------------------------------------------------


# -- the export ---------------------------------------------------------------------------------


def export_tflite(source, out=None, config=None):
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
        out: the ``.tflite`` to write (the sidecar ``.json`` and the card
            ``.md`` go beside it); may be None with ``config.web``, whose
            folder then holds the only copy.
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
    _check_in_graph(job, c)
    if c.quantize == "int8":
        check_float_layers(c.int8_float_layers, job.model)
    logger.info(f"{where_it_runs(None, model=job.model)} (the Keras model it is validated "
                f"against; LiteRT runs on the CPU)")
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
    card_text = model_card(sidecar, os.path.basename(out or MODEL_FILE), job.kind)
    if out is not None:
        _write_files(out, paths, blob, sidecar, card_text)
    if c.web:  # the folder holds the only copy when no --out is given
        corpus = (corpus_record(job.model, job.tokenizer, c.web_corpus, job.sequence_length)
                  if c.web_corpus else None)
        write_web_folder(c.web, blob, sidecar, card_text, job.tokenizer, c.overwrite, corpus)
        logger.debug(f"wrote the web page folder {c.web}")  # the CLI says so after its summary
    return sidecar


def _write_files(out, paths, blob, sidecar, card_text):
    """The ``.tflite``, its sidecar and its card, each renamed into place."""
    # debug: the command line's own last line says what was written
    logger.debug(f"validated; writing {out} ({len(blob) / 1e6:.2f} MB), {paths['sidecar']} "
                 f"and {paths['card']}")
    # The model is renamed into place first: when that fails, the sidecar's
    # and the card's temporary files are removed too, so a failure leaves none.
    with atomic_write(paths["card"]) as card, atomic_write(paths["sidecar"]) as f, \
            atomic_path(out) as tmp:
        with open(tmp, "wb") as blob_file:
            blob_file.write(blob)
        json.dump(sidecar, f, indent=2, sort_keys=True)
        card.write(card_text)


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
    paths = _side_paths(out, c)
    for path in ([out, *paths.values()] if out is not None else []):
        # never over the source model (a folder's task.json, say), and an
        # existing side file is named as itself
        check_output(path, [source, c.tokenizer], c.overwrite)
    if c.quantize == "qat" and not origin.task_spec:
        raise ExportError(f"{source}: {arg('quantize')} qat fine-tunes with fake quantization, so it "
                          "needs a fine-tuned task folder (task.json and its training file)")
    _check_int8_request(c)
    check_lengths_request(c)
    check_web_request(c, out)
    if c.metadata:
        metadata_schema()  # the mediapipe extra: said now, not after converting
    if c.metadata and c.with_tokenizer:
        raise ExportError(f"{arg('metadata')} is for app runtimes, which tokenize themselves: "
                          f"it takes ids in, so drop {arg('with_tokenizer')}")
    return paths


def _check_in_graph(job, c):
    """A string-in file needs the tokenizer kind's in-graph form (checked
    once the source's tokenizer is read, before any conversion)."""
    if c.with_tokenizer and job.tokenizer is not None and not job.tokenizer.in_graph:
        raise ExportError(f"{job.origin.path}: its {job.tokenizer.kind} tokenizer has no "
                          f"in-graph form that TFLite runs: drop {arg('with_tokenizer')} and "
                          f"tokenize in the app")


def _side_paths(out, c):
    """The sidecar's and the card's paths beside ``out`` (none without it)."""
    if out is None:
        if not c.web:
            raise ExportError(f"nothing to write: give the .tflite to write ({arg('out')}), "
                              f"a web folder ({arg('web')}), or both")
        return {}
    if not out.endswith(".tflite"):
        raise ExportError(f"{out}: the output must end in .tflite")
    stem = out[: -len(".tflite")]
    return {"sidecar": stem + ".json", "card": stem + ".md"}


def _check_int8_request(c):
    """int8's own settings are refused with another mode (never silently
    dropped); the scope and the weights' scales apply to qat's int8 too."""
    defaults = ExportConfig()
    given = [name for name in ("int8_scope", "int8_float_layers", "int8_weights")
             if getattr(c, name) != getattr(defaults, name)]
    modes = ("int8", "qat") if given and given[0] != "int8_float_layers" else ("int8",)
    if given and c.quantize not in modes:
        raise ExportError(f"{arg(given[0])} applies to {arg('quantize')} "
                          f"{' and '.join(modes)} only, not {c.quantize}")


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
    lengths: list = dataclasses.field(default_factory=list)

    @property
    def source(self):
        """The folder or ``.keras`` file, as the user named it."""
        return self.origin.path


def _load(origin, c):
    source = origin.path
    model, spec, tokenizer, folder = load_source(origin, c.part, c.dimensions)
    if tokenizer is None:
        # the sidecar, the app and the validation ids all need the special ids
        # ([CLS], [SEP], padding), which only the tokenizer knows
        raise ExportError(f"{source}: the model carries no tokenizer and none lies beside it, "
                          "so its special ids ([CLS], [SEP], padding) are unknown: pass "
                          f"{arg('tokenizer')}")
    kind, output_names = model_kind(model)
    spec = spec or default_spec(model, source)
    S = int(c.sequence_length or (spec.sequence_length if spec else 128))
    if S > model.config.max_position_embeddings:
        raise ExportError(f"{arg('sequence_length')} {S} exceeds max_position_embeddings "
                          f"{model.config.max_position_embeddings}")
    pair = c.pair
    if pair is None:
        pair = bool(spec and (spec.text_pair_column or get_task(spec.task).always_pairs))
    num_choices = c.num_choices
    if kind.per_choice:
        num_choices = num_choices or (spec.num_choices if spec else None)
    if c.metadata:
        output_names = check_app_model(kind, output_names, pair, tokenizer)
    check_web_kind(c, kind)
    return _Job(origin, model, spec, tokenizer, folder, kind, output_names, S, pair, num_choices,
                extra_lengths(c, S, kind))


def _validation_path(job, c):
    return (c.validation_data or job.origin.data_file("eval")
            or job.origin.data_file("train") or c.representative)


def _examples(job, c):
    """The validation examples, and the calibration examples of int8 modes."""
    calibration_path = c.representative or job.origin.data_file("train")
    checks = build_examples(_validation_path(job, c), job, c.examples, c.seed, c.with_tokenizer)
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
    serve = endpoints(lambda length: serving_function(
        exported, length, tokenizer=layer, pair=job.pair,
        truncate=job.spec.truncate if job.spec else DEFAULT_TRUNCATE,
        num_choices=job.num_choices,
        special_ids=job.tokenizer.special_ids if job.tokenizer else None,
        probabilities=c.metadata and job.kind.probabilities), job.sequence_length, job.lengths)
    logger.info(f"converting the {job.kind} ({c.quantize}, sequence "
                f"{', '.join(map(str, [*job.lengths, job.sequence_length]))}"
                + (", string-in" if c.with_tokenizer else "") + ") ...")
    blob = convert(exported, serve, c.quantize,
                   representative=calibration.feeds if calibration else None, tokenizer=layer,
                   int8=Int8Recipe(c.int8_scope, c.int8_float_layers, c.int8_weights))
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
                                                 "max_probability_diff", "max_accuracy_drop",
                                                 "max_score_error")
             if getattr(c, name) is not None}
    bounds = v.Bounds(**given)
    report = validate(blob, checks.feeds, expected, c.quantize, bounds,
                      labels=checks.labels, kind=job.kind)
    if job.lengths:
        report["lengths"] = {str(n): _validate_length(job, c, blob, reference, bounds, n)
                             for n in job.lengths}
    # a file name, not a path: nothing shipped names the exporting machine
    report["data"] = os.path.basename(checks.source) if os.path.sep in checks.source \
        else checks.source
    if c.quantize in ("int8", "qat"):
        from albert_keras.export.runtime import float_ops

        # Gathers of the embedding tables and the int32 inputs stay as they
        # are; ops without int8 kernels (or fed float by them) stay float.
        report["float_ops"] = float_ops(blob)
    return report


def _validate_length(job, c, blob, reference, bounds, length):  # noqa: PLR0913 (the export's parts and one length)
    """One shorter signature's report: the validation texts packed at
    ``length`` (cut to it, as the app cuts them), against Keras on the same ids."""
    logger.info(f"validating signature {signature_name(length)} ...")
    short = dataclasses.replace(job, sequence_length=length)
    checks = build_examples(_validation_path(job, c), short, c.examples, c.seed)
    expected = reference_outputs(reference, checks.keras_inputs, job.output_names)
    report = validate(blob, checks.feeds, expected, c.quantize, bounds, labels=checks.labels,
                      kind=job.kind, signature=signature_name(length))
    return {key: report[key] for key in ("examples", "outputs", "median_ms")}


def _add_metadata(job, c, blob, checks):
    """The blob with app-runtime metadata, and MediaPipe's own check of it."""
    info = ModelInfo(name=_model_name(job), description=_description(job),
                     version=__version__)
    labels = list(job.spec.labels) if job.kind.named_labels and job.spec else None
    blob = with_metadata(blob, info, job.tokenizer, OUTPUT_DESCRIPTIONS, labels=labels)
    return blob, run_in_mediapipe(blob, job, c, checks)


def _sidecar(job, c, exported, blob, report):
    spec, tokenizer = job.spec, job.tokenizer
    tensor_order = signature_order(blob)
    return {
        "format": SIDECAR_FORMAT,
        "kind": job.kind.name,
        "task": spec.task if spec else None,
        "labels": list(spec.labels or []) if spec else [],
        "sequence_length": job.sequence_length,
        # {signature: its input length}: an app runs the shortest that holds a text
        "signatures": signatures(job.sequence_length, job.lengths),
        "quantize": c.quantize,
        "int8": _int8_record(c, blob),
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
        "family": family_of(_encoder(exported).config).name,  # the model card names it
        "num_choices": job.num_choices,
        "size_bytes": len(blob),
        "sha256": hashlib.sha256(blob).hexdigest(),
        "validation": report,
        # the model's name, not its path: nothing shipped names the exporting machine
        "source": _model_name(job),
        "base_model": _base_model(job),
    }


def _int8_record(c, blob):
    """int8's settings, and the layers whose weights stayed float."""
    if c.quantize != "int8":
        return None
    from albert_keras.export.runtime import float_weight_layers

    return {"scope": c.int8_scope, "float_layers": c.int8_float_layers,
            "weights": c.int8_weights, "float_weight_layers": float_weight_layers(blob)}


def _base_model(job):
    """The name of the checkpoint a fine-tuned folder started from (its
    ``train_config.json``'s ``init``), or None."""
    init = job.origin.train_config.get("init")
    return os.path.basename(os.path.normpath(init)) if isinstance(init, str) and init else None


def _model_name(job):
    return os.path.basename(os.path.normpath(job.source)) or "model"


def _description(job):
    labels = f" into {', '.join(job.spec.labels)}" if job.kind.named_labels and \
        job.spec and job.spec.labels and len(job.spec.labels) <= 10 else ""
    family = family_of(_encoder(job.model).config).name
    return (f"{job.kind.summary}{labels}. An encoder of the {family} family exported by "
            "albert-keras.")


def _encoder(model):
    return model if hasattr(model, "mask_value") else model.encoder
