"""ALBERT's family in HF transformers folders: ALBERT, BERT and ELECTRA
(the layouts ``AlbertConfig`` holds) in and out.

Reads ``AlbertModel``, ``AlbertForPreTraining``, ``AlbertForMaskedLM``,
``BertModel``, ``BertForPreTraining``, ``ElectraModel``,
``ElectraForPreTraining`` (the discriminator), ``ElectraForMaskedLM``
(the generator) folders, and every ``...For<Task>`` class as our task model
(prefix ``albert.`` / ``bert.`` / ``electra.`` optional); writes those.
Each ``model_type`` is an ``HfLayout``; DeBERTa's family, which runs this
encoder too, declares its own and reads and writes through
``load_hf_layouts`` and ``save_hf_layout``. The generic reading and writing
of HF folders is ``albert_keras.convert.hf``'s; the name tables are in
``weight_names``.
"""

import dataclasses
import os

import numpy as np

from albert_keras.convert import hf_heads
from albert_keras.convert.assign import assign_tensors
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import read_hf_config
from albert_keras.convert.hf import read_hf_tensors
from albert_keras.convert.hf import strip_prefix
from albert_keras.convert.hf import write_hf_folder
from albert_keras.convert.weight_layout import model_variables
from albert_keras.models.albert.albert_encoder import AlbertEncoder
from albert_keras.models.albert.hf_config import from_hf_dict
from albert_keras.models.albert.hf_config import to_hf_dict
from albert_keras.models.albert.weight_names import hf_albert_names
from albert_keras.models.albert.weight_names import hf_bert_names
from albert_keras.models.albert.weight_names import hf_electra_names
from albert_keras.models.backbone import backbone_of
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.models.pretrainers.token_discriminator import TokenDiscriminator
from albert_keras.models.task_models.hf_task_model import task_model_from_hf
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier

PRETRAINING_HEAD_PREFIXES = ("predictions.", "sop_classifier.", "cls.",
                             "generator_predictions.", "generator_lm_head.",
                             "discriminator_predictions.", "lm_predictions.")


@dataclasses.dataclass(frozen=True)
class HfLayout:
    """How one HF ``model_type`` holds ALBERT's encoder (DeBERTa's family
    declares its own in its folder).

    Args:
        model_type: HF's ``model_type``.
        prefix: the encoder tensors' prefix (``albert.``).
        names: ``names(config, tensors)``: canonical name -> (HF name,
            transform); ``tensors`` is the folder's when reading, None when
            writing.
        architectures: ``(encoder, with the MLM head, discriminator or None)``.
        class_prefix: HF's class prefix of the task classes (``Bert`` of
            ``BertForSequenceClassification``).
        tied: the decoder's ``(weight, bias)``, tied to the word table and
            the output bias (bias None: no copy).
        output_bias: the MLM head's bias.
        read_config: ``read_config(data, source)``: our config of the
            folder's ``config.json`` dict.
        write_config: ``write_config(config)``: the ``config.json`` dict.
        head_prefixes: tensor prefixes outside the encoder's.
        pooled: ``pooled(model)``: whether the written encoder has a pooler.
        skipped: ``skipped(config, tensors)``: tensors HF's own class leaves
            unused.
        headless_classifier: a folder with ``classifier.weight`` and no
            ``architectures`` is a sequence classifier (DeBERTa's).
        unlike_heads: ``{hf_task: what HF's class computes}`` for the task
            heads HF computes otherwise than ours (ELECTRA's sentence
            heads): written as ``bert`` instead, read as the encoder.
    """

    model_type: str
    prefix: str
    names: object
    architectures: tuple
    class_prefix: str
    tied: tuple
    output_bias: str
    read_config: object
    write_config: object
    head_prefixes: tuple = PRETRAINING_HEAD_PREFIXES
    pooled: object = hf_heads.keeps_pooler
    skipped: object = lambda config, tensors: set()
    headless_classifier: bool = False
    unlike_heads: dict = dataclasses.field(default_factory=dict)


def _albert_layout(model_type, prefix, names_of, **fields):
    """The layout of one of ALBERT's own model types (a name table that does
    not depend on the folder's tensors; the config through ``hf_config``)."""
    return HfLayout(model_type=model_type, prefix=prefix,
                    names=lambda config, tensors=None: names_of(config),
                    read_config=from_hf_dict,
                    write_config=lambda config: to_hf_dict(config, model_type), **fields)


def _layouts():
    """ALBERT's, BERT's and ELECTRA's layouts, by ``model_type``."""
    return {layout.model_type: layout for layout in (
        _albert_layout("albert", "albert.", hf_albert_names,
                       architectures=("AlbertModel", "AlbertForPreTraining", None),
                       class_prefix="Albert",
                       tied=("predictions.decoder.weight", "predictions.decoder.bias"),
                       output_bias="predictions.bias"),
        _albert_layout("bert", "bert.", hf_bert_names,
                       architectures=("BertModel", "BertForPreTraining", None),
                       class_prefix="Bert",
                       tied=("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"),
                       output_bias="cls.predictions.bias"),
        _albert_layout("electra", "electra.", hf_electra_names,
                       architectures=("ElectraModel", "ElectraForMaskedLM",
                                      "ElectraForPreTraining"),
                       class_prefix="Electra",
                       # sentence heads with a GELU dense where our pooler has tanh
                       unlike_heads={"SequenceClassification": "ELECTRA's classification head",
                                     "MultipleChoice": "ELECTRA's sequence summary"},
                       tied=("generator_lm_head.weight", None),
                       output_bias="generator_lm_head.bias"),
    )}


LAYOUTS = _layouts()


def _build_model(layout, config, tensors, dtype, data, source):
    """Our model for the heads the folder has."""
    encoder = AlbertEncoder(config, dtype=dtype)
    task_model = task_model_from_hf(data, tensors, encoder, source, dtype,
                                    unlike=layout.unlike_heads)
    if task_model is not None:
        return task_model
    if any(k.startswith("discriminator_predictions.") for k in tensors):
        return TokenDiscriminator(encoder, dtype=dtype)
    if any(k.startswith(PRETRAINING_HEAD_PREFIXES) for k in tensors):
        return EncoderPretrainer(encoder, dtype=dtype)
    if layout.headless_classifier and "classifier.weight" in tensors:
        # a ...ForSequenceClassification without ``architectures``: the
        # pooler, then dropout and the classifier
        classes = int(np.shape(tensors["classifier.weight"])[0])
        return SequenceClassifier(encoder, classes, dtype=dtype)
    return encoder


def _check_tied(folder, layout, tensors):
    """The decoder copies must equal the word table and the output bias."""
    tied_weight, tied_bias = layout.tied
    word = tensors.get("embeddings.word_embeddings.weight")
    if tied_weight in tensors and word is not None:
        if not np.array_equal(tensors[tied_weight], word):
            raise ConversionError(
                f"{folder}: {tied_weight} differs from the word embeddings; "
                "an untied decoder cannot be represented"
            )
    bias = tensors.get(layout.output_bias)
    if tied_bias and tied_bias in tensors and bias is not None:
        if not np.array_equal(tensors[tied_bias], bias):
            raise ConversionError(f"{folder}: {tied_bias} differs from the output bias")
    ignored = {"embeddings.position_ids", "embeddings.token_type_ids", tied_weight,
               tied_bias} - {None}
    return ignored


def load_hf(folder, strict=True, dtype=None, only_encoder=None):
    """``albert_keras.convert.load_hf`` for ALBERT's family: the task model of
    a ``...For<Task>`` folder (sequence classification or regression, token
    classification, question answering, multiple choice; with its labels),
    an ``EncoderPretrainer`` when the folder has an MLM or SOP head (an
    ELECTRA generator), a ``TokenDiscriminator`` for an ELECTRA
    discriminator, else an ``AlbertEncoder``; with the report of what was
    loaded. ``only_encoder`` (``EncoderSettings``): the ``AlbertEncoder``
    alone, built with them (the heads' tensors are reported unused)."""
    return load_hf_layouts(LAYOUTS, folder, strict, dtype, only_encoder)


def load_hf_layouts(layouts, folder, strict=True, dtype=None, only_encoder=None):
    """``load_hf`` for a folder of one of ``layouts`` (``model_type`` ->
    ``HfLayout``): every family that runs ``AlbertEncoder`` reads through it."""
    config_path = os.path.join(folder, "config.json")
    data = read_hf_config(config_path)
    layout = layouts.get(data["model_type"])
    if layout is None:
        raise ConversionError(f"{config_path}: model_type must be one of "
                              f"{', '.join(layouts)}, got {data['model_type']!r}")
    config = layout.read_config(data, config_path)
    tensors = strip_prefix(read_hf_tensors(folder), layout.prefix)
    if only_encoder is None:
        model = _build_model(layout, config, tensors, dtype, data, folder)
    else:
        model = only_encoder.build(AlbertEncoder, config)
    ignored = _check_tied(folder, layout, tensors) | layout.skipped(config, tensors)
    names = {**layout.names(config, tensors), **hf_heads.head_names()}
    report = assign_tensors(model, tensors, names, folder, ignored=ignored, strict=strict)
    return model, report


def _architecture(model, layout):
    """``(architecture, prefix for encoder tensors)`` of the HF folder."""
    plain, with_mlm, discriminator = layout.architectures
    if hasattr(model, "rtd_head"):
        if discriminator is None:
            raise ConversionError(f"a discriminator exports to ELECTRA, not {layout.model_type}")
        return discriminator, layout.prefix
    if hasattr(model, "mlm_head"):
        return with_mlm, layout.prefix
    if getattr(model, "hf_task", None):
        return (hf_heads.architecture(layout.class_prefix, model, layout.unlike_heads),
                layout.prefix)
    return plain, ""


def _hf_tensors(model, names, layout, prefix):
    heads = layout.head_prefixes + hf_heads.HEAD_PREFIXES
    pooled = layout.pooled(model)
    tensors = {}
    for canonical, variable in model_variables(model).items():
        if canonical not in names:  # ELECTRA has no pooler and no SOP head
            continue
        if canonical.startswith("pooler/") and not pooled:
            continue
        src, transform = names[canonical]
        array = np.asarray(variable.numpy(), dtype=np.float32)
        if transform == "T":
            array = array.T
        key = src if src.startswith(heads) else prefix + src
        tensors[key] = np.ascontiguousarray(array)
    return tensors


def save_hf(model, folder, overwrite=False, model_type=None):
    """Writes ``model`` as an HF folder (``config.json`` + ``model.safetensors``).

    ALBERT layouts become ``AlbertForPreTraining`` (or ``AlbertModel`` for an
    encoder); a BERT layout (no sharing, E = H) becomes ``BertForPreTraining``
    / ``BertModel``; ``model_type="electra"`` (the default for an
    ``TokenDiscriminator``) gives ``ElectraModel``, ``ElectraForMaskedLM``
    (with the MLM head; the SOP head has no place there) or
    ``ElectraForPreTraining``; a task model its ``...For<Task>`` class.
    ``attention``/``ffn`` sharing has no HF equivalent and is refused. The
    folder is written under a temporary name and renamed.
    """
    if model_type is None and hasattr(model, "rtd_head"):
        model_type = "electra"
    if model_type is not None and model_type not in LAYOUTS:
        raise ConversionError(f"model_type must be one of {', '.join(LAYOUTS)} for an "
                              f"ALBERT-family model, got {model_type!r}")
    hf_config = to_hf_dict(model.config, model_type)  # raises for layouts HF cannot hold
    return save_hf_layout(LAYOUTS[hf_config["model_type"]], model, folder, overwrite)


def save_hf_layout(layout, model, folder, overwrite=False):
    """Writes ``model`` (on ``AlbertEncoder``) in ``layout``."""
    hf_config = layout.write_config(model.config)
    arch, prefix = _architecture(model, layout)
    hf_config["architectures"] = [arch]
    hf_config.update(hf_heads.label_fields(model))
    names = {**layout.names(model.config), **hf_heads.head_names()}
    tensors = _hf_tensors(model, names, layout, prefix)
    return write_hf_folder(folder, tensors, hf_config, overwrite,
                           getattr(backbone_of(model), "tokenizer_asset", None))
