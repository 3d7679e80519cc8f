"""``albert-keras export``: a model folder or ``.keras`` in, a validated
``.tflite`` and its JSON sidecar out.

Phases: load the model and what the folder knows (task, labels, sequence
length, tokenizer, data files) -> examples for validation (and for int8
calibration) -> convert -> run in LiteRT and compare with Keras -> write
``MODEL.tflite`` and ``MODEL.json`` under temporary names, then rename.
Nothing is written when validation fails.
"""

import logging
import json
import os

import numpy as np
import tensorflow as tf

from albert_keras.config import CLS_ID
from albert_keras.config import MASK_ID
from albert_keras.config import PAD_ID
from albert_keras.config import SEP_ID
from albert_keras.config import UNK_ID
from albert_keras.export.converter import ExportError
from albert_keras.export.converter import convert
from albert_keras.export.converter import model_kind
from albert_keras.export.converter import prepare_for_export
from albert_keras.export.converter import serving_function
from albert_keras.export.validation import validate
from albert_keras.saving import load_model
from albert_keras.files import atomic_path
from albert_keras.files import atomic_write
from albert_keras.files import sha256_file
from albert_keras.text.packer import AlbertPacker
from albert_keras.text.sentencepiece_tokenizer import SentencePieceTokenizer

logger = logging.getLogger(__name__)

SIDECAR_FORMAT = "albert-keras-tflite/1"
PARTS = {"auto": None, "encoder": "encoder.keras", "mlm": "pretrainer.keras",
         "model": "model.keras"}


# -- what the source is ------------------------------------------------------------------


def load_source(source, part="auto", tokenizer=None):
    """``(model, spec, spm_path, folder)`` for a folder or a ``.keras`` file.

    ``spec`` is the fine-tuned folder's ``task.json`` (or ``{}``).
    """
    folder = source if os.path.isdir(source) else os.path.dirname(os.path.abspath(source))
    spec = {}
    if os.path.isdir(source):
        name = PARTS.get(part)
        if name is None and part != "auto":
            raise ExportError(f"--part must be one of {', '.join(PARTS)}")
        if name is None:
            name = "model.keras" if os.path.isfile(os.path.join(source, "model.keras")) \
                else "encoder.keras"
        path = os.path.join(source, name)
        task_path = os.path.join(source, "task.json")
        if name == "model.keras" and os.path.isfile(task_path):
            with open(task_path, encoding="utf-8") as f:
                spec = json.load(f)
    else:
        path = source
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such model file")
    spm = tokenizer or os.path.join(folder, "spm.model")
    return load_model(path), spec, spm if os.path.isfile(spm) else None, folder


def _data_file(folder, key):
    path = os.path.join(folder, "train_config.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        value = json.load(f).get(key)
    return value if value and os.path.isfile(value) else None


# -- examples -------------------------------------------------------------------------------


def _texts_from_file(path, spec, pair):
    """``(texts, pairs, labels, ids_inputs)`` from a task file or plain text.

    ``ids_inputs`` is set for tasks whose features are not one text
    (multiple choice), else None.
    """
    from albert_keras.tasks import readers

    task = spec.get("task")
    if task == "classify":
        ex = readers.read_text_table(path, spec["text_column"], spec.get("text_pair_column"),
                                     spec["label_column"], require_labels=False)
        labels = None
        if ex.labels is not None and not spec["regression"]:
            labels = readers.label_ids(path, ex, spec["labels"])
        return ex.texts, ex.pairs, labels, None
    if task == "tag":
        return [" ".join(s[0]) for s in readers.read_conll(path, require_tags=False)], \
            None, None, None
    if task == "qa":
        ex = readers.read_squad(path, require_answers=False)
        return [e.question for e in ex], [e.context for e in ex], None, None
    if task == "choice":
        return None, None, None, path
    with open(path, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    if pair:
        split = [line.split("\t", 1) for line in lines]
        if any(len(s) != 2 for s in split):
            raise ExportError(f"{path}: with --pair each line must be 'text<TAB>pair'")
        return [s[0] for s in split], [s[1] for s in split], None, None
    return lines, None, None, None


class Examples:
    """Feeds for the ``.tflite`` and the matching Keras inputs."""

    def __init__(self, keras_inputs, feeds, labels=None, source=""):
        self.keras_inputs, self.feeds, self.labels, self.source = \
            keras_inputs, feeds, labels, source

    def __len__(self):
        return len(self.feeds)


def build_examples(path, spec, kind, spm, sequence_length, string_in, pair, count, seed,
                   vocab_size, num_choices=None, max_predictions=20):
    """Up to ``count`` examples from ``path`` (random ids when it is None)."""
    rng = np.random.default_rng(seed)
    S = sequence_length
    labels = None
    if path is None:
        if string_in:
            raise ExportError("string-in validation needs texts: pass --validation-data")
        shape = (count, num_choices, S) if kind == "choice" else (count, S)
        ids = rng.integers(5, vocab_size, shape).astype(np.int32)
        lengths = rng.integers(3, S + 1, shape[:-1])
        mask = (np.arange(S) < lengths[..., None]).astype(np.int32)
        ids = np.where(mask == 1, ids, PAD_ID).astype(np.int32)
        ids[..., 0] = CLS_ID
        x = {"token_ids": ids, "padding_mask": mask, "segment_ids": np.zeros_like(ids)}
        source = "random ids (no data given)"
    else:
        texts, pairs, labels, choice_path = _texts_from_file(path, spec, pair)
        if choice_path is not None:
            from albert_keras.tasks.encoding import PieceEncoder
            from albert_keras.tasks.finetune import load_task_data

            data = load_task_data(choice_path, {**spec, "sequence_length": S}, PieceEncoder(spm),
                                  require_labels=False)
            x = data.x
            texts = None
        else:
            if spm is None:
                raise ExportError("no tokenizer found for the validation texts: pass --tokenizer")
            order = rng.permutation(len(texts))[:count]
            texts = [texts[i] for i in order]
            pairs = [pairs[i] for i in order] if pairs else None
            labels = [labels[i] for i in order] if labels is not None else None
            tokenizer = SentencePieceTokenizer(spm)
            packer = AlbertPacker(S, truncate=spec.get("truncate", "longest_first"))
            packed = packer(tokenizer(tf.constant(texts)),
                            tokenizer(tf.constant(pairs)) if pairs else None)
            x = {k: v.numpy() for k, v in packed.items()}
        source = path
    n = min(count, len(x["token_ids"]))
    x = {k: v[:n] for k, v in x.items()}
    if kind == "mlm":
        x["masked_positions"] = np.tile(
            np.minimum(np.arange(1, max_predictions + 1), S - 1), (n, 1)).astype(np.int32)
    if string_in:
        feeds = [{"text": texts[i], **({"text_pair": pairs[i]} if pairs else {})}
                 for i in range(n)]
    else:
        names = {"token_ids": "ids", "padding_mask": "mask", "segment_ids": "segment_ids",
                 "masked_positions": "masked_positions"}
        feeds = [{names[k]: v[i:i + 1] for k, v in x.items()} for i in range(n)]
    return Examples(x, feeds, labels[:n] if labels is not None else None, source)


# -- the export ---------------------------------------------------------------------------------


def export_tflite(source, out, quantize="none", sequence_length=None, with_tokenizer=False,
                  pair=None, representative=None, validation_data=None, examples=32,
                  calibration_examples=100, tolerance=None, min_cosine=None, min_agreement=None,
                  mask_value=-120.0, part="auto", tokenizer=None, num_choices=None, seed=0,
                  qat_data=None, qat_epochs=1, qat_learning_rate=1e-5, overwrite=False):
    """Converts, validates and writes; returns the sidecar dict.

    With ``quantize="qat"`` the (fine-tuned) model is first fine-tuned for
    ``qat_epochs`` with fake quantization on ``qat_data`` (default: its own
    training file), then converted to int8 with the learned ranges; it is
    validated against that quantization-aware Keras model.

    Example:
    >>> export_tflite("runs/classifier", "model.tflite", quantize="dynamic")  # doctest: +SKIP
    """
    from albert_keras.export import validation as v

    if not out.endswith(".tflite"):
        raise ExportError(f"{out}: the output must end in .tflite")
    sidecar_path = out[: -len(".tflite")] + ".json"
    if not overwrite and (os.path.exists(out) or os.path.exists(sidecar_path)):
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")

    # -- source ----------------------------------------------------------------------------
    model, spec, spm, folder = load_source(source, part, tokenizer)
    kind, output_names = model_kind(model)
    config = model.config
    S = int(sequence_length or spec.get("sequence_length") or 128)
    if S > config.max_position_embeddings:
        raise ExportError(f"--seq-len {S} exceeds max_position_embeddings "
                          f"{config.max_position_embeddings}")
    if pair is None:
        pair = bool(spec.get("text_pair_column")) or spec.get("task") == "qa"
    if kind == "choice":
        num_choices = num_choices or spec.get("num_choices")
    if with_tokenizer and spm is None:
        raise ExportError("--with-tokenizer needs the SentencePiece model: pass --tokenizer")

    # -- examples ----------------------------------------------------------------------------
    validation_path = validation_data or _data_file(folder, "eval") or _data_file(folder, "train")
    calibration_path = representative or _data_file(folder, "train")
    common = dict(spec=spec, kind=kind, spm=spm, sequence_length=S, string_in=with_tokenizer,
                  pair=pair, vocab_size=config.vocab_size, num_choices=num_choices)
    checks = build_examples(validation_path, count=examples, seed=seed, **common)
    calibration = None
    if quantize in ("int8", "qat"):
        if calibration_path is None:
            raise ExportError("int8 needs representative examples from real data: "
                              "pass --representative FILE")
        calibration = build_examples(calibration_path, count=calibration_examples,
                                     seed=seed + 1, **common)

    # -- quantization-aware training ----------------------------------------------------------
    if quantize == "qat":
        from albert_keras.export.qat import qat_finetune

        model = qat_finetune(model, spec, qat_data or _data_file(folder, "train"), spm,
                             epochs=qat_epochs, learning_rate=qat_learning_rate, seed=seed)

    # -- convert ---------------------------------------------------------------------------------
    exported = prepare_for_export(model, mask_value)
    # Keras' own numbers: the same weights in float32, with the mask it was
    # trained with.
    reference = prepare_for_export(model, _encoder(model).mask_value)
    layer = SentencePieceTokenizer(spm) if with_tokenizer else None
    serve = serving_function(exported, S, tokenizer=layer, pair=pair,
                             truncate=spec.get("truncate", "longest_first"),
                             num_choices=num_choices)
    logger.info(f"converting the {kind} ({quantize}, sequence {S}"
        + (", string-in" if with_tokenizer else "") + ") ...")
    blob = convert(exported, serve, quantize,
                   representative=calibration.feeds if calibration else None, tokenizer=layer)

    # -- validate ------------------------------------------------------------------------------
    expected = []
    batch = {k: v for k, v in checks.keras_inputs.items()}
    outputs = reference.predict(batch, batch_size=16, verbose=0)
    for i in range(len(checks)):
        expected.append({name: np.asarray(outputs[name][i:i + 1], np.float32)
                         for name in output_names})
    report = validate(
        blob, checks.feeds, expected, quantize, tolerance=tolerance,
        min_cosine=v.DEFAULT_MIN_COSINE if min_cosine is None else min_cosine,
        min_agreement=v.DEFAULT_MIN_AGREEMENT if min_agreement is None else min_agreement,
        labels=checks.labels,
    )
    report["data"] = checks.source
    if quantize in ("int8", "qat"):
        from albert_keras.export.runtime import float_ops

        # Gathers of the embedding tables and the int32 inputs stay as they
        # are; ops without int8 kernels (or fed float by them) stay float.
        report["float_ops"] = float_ops(blob)

    # -- write ---------------------------------------------------------------------------------
    sidecar = {
        "format": SIDECAR_FORMAT,
        "kind": kind,
        "task": spec.get("task"),
        "labels": spec.get("labels") or [],
        "sequence_length": S,
        "quantize": quantize,
        "string_in": bool(with_tokenizer),
        "inputs": (["text"] + (["text_pair"] if pair else [])) if with_tokenizer else
                  (["ids", "mask", "segment_ids"] + (["masked_positions"] if kind == "mlm" else [])),
        "outputs": list(output_names),
        "special_ids": {"pad": PAD_ID, "unk": UNK_ID, "cls": CLS_ID, "sep": SEP_ID, "mask": MASK_ID},
        "truncate": spec.get("truncate", "longest_first"),
        "mask_value": mask_value,
        "num_choices": num_choices,
        "size_bytes": len(blob),
        "validation": report,
        "source": os.path.abspath(source),
    }
    with atomic_path(out) as tmp, atomic_write(sidecar_path) as f:
        with open(tmp, "wb") as blob_file:
            blob_file.write(blob)
        sidecar["sha256"] = sha256_file(tmp)
        json.dump(sidecar, f, indent=2, sort_keys=True)
    return sidecar


def _encoder(model):
    return model if hasattr(model, "mask_value") else model.encoder
