"""ALBERT's family in HF transformers folders: ALBERT, BERT, ELECTRA and
DeBERTa-v2/v3 (the layouts ``AlbertConfig`` holds) in and out.

Reads ``AlbertModel``, ``AlbertForPreTraining``, ``AlbertForMaskedLM``,
``BertModel``, ``BertForPreTraining``, ``ElectraModel``,
``ElectraForPreTraining`` (the discriminator), ``ElectraForMaskedLM``
(the generator), ``DebertaV2Model`` and ``DebertaV2ForMaskedLM`` (both head
layouts) folders, and every ``...For<Task>`` class as our task model
(prefix ``albert.`` / ``bert.`` / ``electra.`` / ``deberta.`` optional);
writes those. The generic reading
and writing of HF folders is ``albert_keras.convert.hf``'s; the name
tables are ``albert_keras.convert.weight_layout``'s.
"""

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
from albert_keras.models.albert.config_files import read_config_file
from albert_keras.models.albert.hf_config import to_hf_dict
from albert_keras.models.albert.weight_names import hf_albert_names
from albert_keras.models.albert.weight_names import hf_bert_names
from albert_keras.models.albert.weight_names import hf_electra_names
from albert_keras.models.backbone import backbone_of
from albert_keras.models.deberta.weight_names import hf_deberta_names
from albert_keras.models.encoder_pretrainer import EncoderPretrainer
from albert_keras.models.hf_task_model import task_model_from_hf
from albert_keras.models.sequence_classifier import SequenceClassifier
from albert_keras.models.token_discriminator import TokenDiscriminator

_HEAD_PREFIXES = ("predictions.", "sop_classifier.", "cls.", "generator_predictions.",
                  "generator_lm_head.", "discriminator_predictions.", "lm_predictions.")
# DeBERTa's sequence classifier keeps its ContextPooler and classifier
# outside the ``deberta.`` prefix (BERT's pooler is inside ``bert.``).
_DEBERTA_HEAD_PREFIXES = _HEAD_PREFIXES + ("pooler.", "classifier.")
_DEBERTA = "deberta-v2"
_NAMES = {"albert": hf_albert_names, "bert": hf_bert_names, "electra": hf_electra_names,
          _DEBERTA: hf_deberta_names}
_PREFIX = {"albert": "albert.", "bert": "bert.", "electra": "electra.", _DEBERTA: "deberta."}
# Present in HF files, never loaded: position-id buffers and the decoder,
# which is tied to the word embeddings (checked for equality below).
_TIED = {
    "albert": ("predictions.decoder.weight", "predictions.decoder.bias"),
    "bert": ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"),
    "electra": ("generator_lm_head.weight", None),
    _DEBERTA: ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"),
}
_OUTPUT_BIAS = {"albert": "predictions.bias", "bert": "cls.predictions.bias",
                "electra": "generator_lm_head.bias", _DEBERTA: "cls.predictions.bias"}
_ARCHITECTURES = {  # (encoder, with the MLM head, discriminator)
    "albert": ("AlbertModel", "AlbertForPreTraining", None),
    "bert": ("BertModel", "BertForPreTraining", None),
    "electra": ("ElectraModel", "ElectraForMaskedLM", "ElectraForPreTraining"),
    _DEBERTA: ("DebertaV2Model", "DebertaV2ForMaskedLM", None),
}
# DeBERTa-v3 discriminator checkpoints carry the replaced-token head
# (``mask_predictions``), which HF's DeBERTa skips too.
_DEBERTA_SKIPPED_PREFIX = "mask_predictions."

def _names(model_type, config, tensors):
    """The name table for a folder, with DeBERTa's head layout read from its tensors."""
    if model_type == _DEBERTA:
        legacy = not any(k.startswith("lm_predictions.") for k in tensors)
        return hf_deberta_names(config, legacy_head=legacy)
    return _NAMES[model_type](config)


def _build_model(config, tensors, dtype, data, source):
    """Our model for the heads the folder has."""
    model_type = data["model_type"]
    encoder = AlbertEncoder(config, dtype=dtype)
    task_model = task_model_from_hf(data, tensors, encoder, source, dtype)
    if task_model is not None:
        return task_model
    if any(k.startswith("discriminator_predictions.") for k in tensors):
        return TokenDiscriminator(encoder, dtype=dtype)
    if any(k.startswith(_HEAD_PREFIXES) for k in tensors):
        return EncoderPretrainer(encoder, dtype=dtype)
    if model_type == _DEBERTA and "classifier.weight" in tensors:
        # DebertaV2ForSequenceClassification without ``architectures``: ContextPooler = our pooler
        # (dense + gelu on the first token), then dropout and the classifier.
        classes = int(np.shape(tensors["classifier.weight"])[0])
        return SequenceClassifier(encoder, classes, dtype=dtype)
    return encoder


def _check_tied(folder, model_type, tensors):
    """The decoder copies must equal the word table and the output bias."""
    tied_weight, tied_bias = _TIED[model_type]
    word = tensors.get("embeddings.word_embeddings.weight")
    if tied_weight in tensors and word is not None:
        if not np.array_equal(tensors[tied_weight], word):
            raise ConversionError(
                f"{folder}: {tied_weight} differs from the word embeddings; "
                "an untied decoder cannot be represented"
            )
    bias = tensors.get(_OUTPUT_BIAS[model_type])
    if tied_bias and tied_bias in tensors and bias is not None:
        if not np.array_equal(tensors[tied_bias], bias):
            raise ConversionError(f"{folder}: {tied_bias} differs from the output bias")
    ignored = {"embeddings.position_ids", "embeddings.token_type_ids", tied_weight,
               tied_bias} - {None}
    return ignored


def _skipped_by_hf(model_type, config, tensors):
    """Tensors HF's own DeBERTa leaves unused: ``mask_predictions``, and the
    relative table's LayerNorm when there is no relative attention."""
    if model_type != _DEBERTA:
        return set()
    out = {k for k in tensors if k.startswith(_DEBERTA_SKIPPED_PREFIX)}
    if not config.relative_attention:
        out |= {"encoder.LayerNorm.weight", "encoder.LayerNorm.bias"}
    return out


def load_hf(folder, strict=True, dtype=None, only_encoder=None):
    """``albert_keras.convert.load_hf`` for ALBERT's family: the task model of
    a ``...For<Task>`` folder (sequence classification or regression, token
    classification, question answering, multiple choice; with its labels),
    an ``EncoderPretrainer`` when the folder has an MLM or SOP head (an
    ELECTRA generator, a DeBERTa masked LM in either head layout), a
    ``TokenDiscriminator`` for an ELECTRA discriminator, else an
    ``AlbertEncoder``; with the report of what was loaded. ``only_encoder``
    (``EncoderSettings``): the ``AlbertEncoder`` alone, built with them (the
    heads' tensors are reported unused)."""
    config_path = os.path.join(folder, "config.json")
    data = read_hf_config(config_path)
    model_type = data["model_type"]
    config = read_config_file(config_path, dialect="hf")
    tensors = strip_prefix(read_hf_tensors(folder), _PREFIX[model_type])
    if only_encoder is None:
        model = _build_model(config, tensors, dtype, data, folder)
    else:
        model = only_encoder.build(AlbertEncoder, config)
    ignored = _check_tied(folder, model_type, tensors)
    ignored |= _skipped_by_hf(model_type, config, tensors)
    names = {**_names(model_type, config, tensors), **hf_heads.head_names()}
    report = assign_tensors(model, tensors, names, folder, ignored=ignored, strict=strict)
    return model, report


def _architecture(model, model_type):
    """``(architecture, prefix for encoder tensors)`` of the HF folder."""
    plain, with_mlm, discriminator = _ARCHITECTURES[model_type]
    prefix = _PREFIX[model_type]
    if hasattr(model, "rtd_head"):
        if discriminator is None:
            raise ConversionError(f"a discriminator exports to ELECTRA, not {model_type}")
        return discriminator, prefix
    if hasattr(model, "mlm_head"):
        return with_mlm, prefix
    if getattr(model, "hf_task", None):
        return hf_heads.architecture(model_type, model), prefix
    return plain, ""


def _hf_tensors(model, names, model_type, prefix):
    heads = (_DEBERTA_HEAD_PREFIXES if model_type == _DEBERTA else _HEAD_PREFIXES) + (
        hf_heads.HEAD_PREFIXES)
    # HF's encoder has a pooler only where its head reads one (and DeBERTa's
    # pooler is the head's own ContextPooler)
    pooled = (hf_heads.reads_pooler if model_type == _DEBERTA else hf_heads.keeps_pooler)(model)
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
    ``ElectraForPreTraining``. A DeBERTa layout (relative attention, no
    sharing, E = H) gives ``DebertaV2Model``, ``DebertaV2ForMaskedLM``
    (HF's default head layout) or, for a classifier,
    ``DebertaV2ForSequenceClassification``. ``attention``/``ffn`` sharing
    has no HF equivalent and is refused. The folder is written under a
    temporary name and renamed.
    """
    config = model.config
    if model_type is None and hasattr(model, "rtd_head"):
        model_type = "electra"
    hf_config = to_hf_dict(config, model_type)  # raises for layouts HF cannot hold
    model_type = hf_config["model_type"]
    arch, prefix = _architecture(model, model_type)
    hf_config["architectures"] = [arch]
    hf_config.update(hf_heads.label_fields(model))
    names = {**_NAMES[model_type](config), **hf_heads.head_names()}
    tensors = _hf_tensors(model, names, model_type, prefix)
    return write_hf_folder(folder, tensors, hf_config, overwrite,
                           getattr(backbone_of(model), "tokenizer_asset", None))
