"""HF transformers MobileBERT folders in and out.

Reads ``MobileBertModel``, ``MobileBertForPreTraining`` and
``MobileBertForMaskedLM`` folders, and every ``MobileBertFor<Task>`` class
as our task model with its labels; writes the same classes, which
transformers loads.
"""

import dataclasses
import json
import os

import numpy as np

from albert_keras.config_dicts import ConfigError
from albert_keras.convert import hf_heads
from albert_keras.convert.assign import assign_tensors
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import HF_GENERIC_KEYS
from albert_keras.convert.hf import read_hf_tensors
from albert_keras.convert.hf import write_hf_folder
from albert_keras.convert.weight_layout import hf_linear
from albert_keras.convert.weight_layout import hf_norm
from albert_keras.convert.weight_layout import model_variables
from albert_keras.models.backbone import backbone_of
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.models.mobilebert.mobilebert_encoder import MobileBertEncoder
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.models.task_models.hf_task_model import task_model_from_hf
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier

MODEL_TYPE = "mobilebert"
PREFIX = "mobilebert."
# HF config keys with no effect on the computation ours does
_INERT = {"true_hidden_size", "classifier_dropout"}
_DECODER = "cls.predictions.decoder.weight"
_DECODER_BIAS = "cls.predictions.decoder.bias"


def config_from_hf(data, source="config.json"):
    """A ``MobileBertConfig`` from an HF ``config.json`` dict."""
    if not isinstance(data, dict) or data.get("model_type") != MODEL_TYPE:
        raise ConfigError(f"{source}: not a MobileBERT config (model_type "
                          f"{data.get('model_type') if isinstance(data, dict) else None!r})")
    fields = {f.name for f in dataclasses.fields(MobileBertConfig)} - {"num_hidden_groups"}
    for key in data:
        if key not in fields and key not in HF_GENERIC_KEYS and key not in _INERT:
            raise ConfigError(f"{source}: unsupported MobileBERT config key {key!r}")
    kept = {k: v for k, v in data.items() if k in fields}
    if "layer_norm_eps" in kept:
        kept["layer_norm_eps"] = float(kept["layer_norm_eps"])
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob", "initializer_range"):
        if key in kept:
            kept[key] = float(kept[key])
    if kept.get("pad_token_id") is None:
        kept.pop("pad_token_id", None)
    return MobileBertConfig.from_dict(kept, source)


def config_to_hf(config):
    """HF's ``config.json`` dict of ``config`` (refused for shared blocks)."""
    if config.num_hidden_groups not in (None, config.num_hidden_layers):
        raise ConversionError(f"num_hidden_groups={config.num_hidden_groups}: HF's MobileBERT "
                              "has no cross-layer sharing; keep the model in our format")
    if (config.use_bottleneck and not config.use_bottleneck_attention
            and not config.key_query_shared_bottleneck
            and config.hidden_size != config.intra_bottleneck_size):
        raise ConversionError("attention on the block input at a bottlenecked width "
                              "(IB-BERT) has no HF MobileBERT equivalent")
    data = {k: v for k, v in config.to_dict().items() if k != "num_hidden_groups"}
    return {**data, "model_type": MODEL_TYPE, "true_hidden_size": config.true_hidden_size}


def hf_names(config):
    """Our stable name -> ``(HF tensor name, transform)`` (``"T"``: a torch
    ``[out, in]`` weight is our ``[in, out]`` kernel)."""
    names = {"embeddings/word": ("embeddings.word_embeddings.weight", None),
             "embeddings/position": ("embeddings.position_embeddings.weight", None),
             "embeddings/segment": ("embeddings.token_type_embeddings.weight", None)}
    names.update(hf_linear("embeddings.embedding_transformation", "embeddings/projection"))
    names.update(hf_norm("embeddings.LayerNorm", "embeddings/norm"))
    parts = {"query": "attention.self.query", "key": "attention.self.key",
             "value": "attention.self.value", "attention_output": "attention.output.dense",
             "output_ffn/intermediate": "intermediate.dense",
             "output_ffn/output": "output.dense",
             "output_bottleneck": "output.bottleneck.dense",
             "input_bottleneck/dense": "bottleneck.input.dense",
             "shared_bottleneck/dense": "bottleneck.attention.dense"}
    norms = {"attention_norm": "attention.output.LayerNorm", "output_ffn/norm": "output.LayerNorm",
             "output_norm": "output.bottleneck.LayerNorm",
             "input_bottleneck/norm": "bottleneck.input.LayerNorm",
             "shared_bottleneck/norm": "bottleneck.attention.LayerNorm"}
    for j in range(config.num_feedforward_networks - 1):
        parts.update({f"ffn_{j}/intermediate": f"ffn.{j}.intermediate.dense",
                      f"ffn_{j}/output": f"ffn.{j}.output.dense"})
        norms[f"ffn_{j}/norm"] = f"ffn.{j}.output.LayerNorm"
    for k in range(config.num_hidden_layers):
        for ours, theirs in parts.items():
            names.update(hf_linear(f"encoder.layer.{k}.{theirs}", f"block_{k}/{ours}"))
        for ours, theirs in norms.items():
            names.update(hf_norm(f"encoder.layer.{k}.{theirs}", f"block_{k}/{ours}"))
    names.update(hf_linear("pooler.dense", "pooler"))
    names.update(hf_linear("cls.predictions.transform.dense", "mlm/dense"))
    names.update(hf_norm("cls.predictions.transform.LayerNorm", "mlm/layer_norm"))
    names["mlm/output_bias"] = ("cls.predictions.bias", None)
    names["mlm/extra_output"] = ("cls.predictions.dense.weight", "T")
    names.update(hf_linear("cls.seq_relationship", "sop"))
    names.update(hf_linear("classifier", "classifier"))
    return names


def _build(config, tensors, dtype, data, source):
    """Our model for the heads the folder holds."""
    encoder = MobileBertEncoder(config, dtype=dtype)
    task_model = task_model_from_hf(data, tensors, encoder, source, dtype)
    if task_model is not None:
        return task_model
    if any(k.startswith("cls.predictions.") for k in tensors):
        return EncoderPretrainer(encoder, dtype=dtype,
                                sentence_order="cls.seq_relationship.weight" in tensors)
    if "classifier.weight" in tensors:  # a sequence classifier without ``architectures``
        return SequenceClassifier(encoder, int(np.shape(tensors["classifier.weight"])[0]),
                                dtype=dtype)
    return encoder


def _unused_by_hf(config):
    """Tensors transformers saves whether or not the model reads them:
    without trigram input and with ``embedding_size == hidden_size`` the
    embedding projection is built and skipped, and the decoder's extra
    columns are zero-wide."""
    if config.trigram_input or config.embedding_size != config.hidden_size:
        return {}
    width = config.hidden_size - config.embedding_size
    return {"embeddings.embedding_transformation.weight":
                np.zeros((config.hidden_size, config.embedding_size), np.float32),
            "embeddings.embedding_transformation.bias": np.zeros(config.hidden_size, np.float32),
            "cls.predictions.dense.weight": np.zeros((width, config.vocab_size), np.float32)}


def _ignored(folder, tensors):
    """Tensors present and not loaded: buffers and the tied decoder (checked
    equal to the word table)."""
    word = tensors.get("embeddings.word_embeddings.weight")
    if _DECODER in tensors and word is not None and not np.array_equal(tensors[_DECODER], word):
        raise ConversionError(f"{folder}: {_DECODER} differs from the word embeddings; an "
                              "untied decoder cannot be represented")
    bias = tensors.get("cls.predictions.bias")
    if _DECODER_BIAS in tensors and bias is not None and not np.array_equal(
            tensors[_DECODER_BIAS], bias):
        raise ConversionError(f"{folder}: {_DECODER_BIAS} differs from cls.predictions.bias")
    return {"embeddings.position_ids", _DECODER, _DECODER_BIAS}


def load_hf(folder, strict=True, dtype=None, only_encoder=None):
    """``(model, report)`` of an HF MobileBERT folder: the task model of a
    ``MobileBertFor<Task>`` folder (with its labels), an ``EncoderPretrainer``
    with the MLM head (and NSP as its sentence head, when present), else a
    ``MobileBertEncoder``; on ``MobileBertEncoder``. ``only_encoder``
    (``EncoderSettings``): the ``MobileBertEncoder`` alone, built with them
    (the heads' tensors are reported unused)."""
    path = os.path.join(folder, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConversionError(f"{path}: cannot read config: {e}") from None
    config = config_from_hf(data, path)
    tensors = {k[len(PREFIX):] if k.startswith(PREFIX) else k: v
               for k, v in read_hf_tensors(folder).items()}
    if only_encoder is None:
        model = _build(config, tensors, dtype, data, folder)
    else:
        model = only_encoder.build(MobileBertEncoder, config)
    ignored = _ignored(folder, tensors) | set(_unused_by_hf(config))
    names = {**hf_names(config), **hf_heads.head_names()}
    report = assign_tensors(model, tensors, names, folder, ignored=ignored, strict=strict)
    return model, report


def _architecture(model):
    if hasattr(model, "mlm_head"):
        return "MobileBertForPreTraining" if model.sop_head is not None else (
            "MobileBertForMaskedLM")
    if getattr(model, "hf_task", None):
        return hf_heads.architecture("MobileBert", model)
    return "MobileBertModel"


def save_hf(model, folder, overwrite=False, model_type=None):
    """Writes ``model`` as an HF MobileBERT folder (``config.json`` and
    ``model.safetensors``), under a temporary name then renamed."""
    if model_type not in (None, MODEL_TYPE):
        raise ConversionError(f"a MobileBERT model exports as model_type {MODEL_TYPE}, "
                              f"not {model_type}")
    config = model.config
    hf_config = config_to_hf(config)
    hf_config["architectures"] = [_architecture(model)]
    hf_config.update(hf_heads.label_fields(model))
    names = {**hf_names(config), **hf_heads.head_names()}
    pooled = hf_heads.keeps_pooler(model)  # HF's token and span heads have none
    tensors = {}
    for ours, variable in model_variables(model).items():
        if ours.startswith("pooler/") and not pooled:
            continue
        src, transform = names[ours]
        array = np.asarray(variable.numpy(), np.float32)
        key = src if src.startswith(("cls.",) + hf_heads.HEAD_PREFIXES) else PREFIX + src
        tensors[key] = np.ascontiguousarray(array.T if transform == "T" else array)
    for name, placeholder in _unused_by_hf(config).items():  # as transformers writes them
        if not name.startswith("cls.") or hasattr(model, "mlm_head"):
            tensors[name if name.startswith("cls.") else PREFIX + name] = placeholder
    if hasattr(model, "mlm_head"):  # HF's tied decoder, written as transformers writes it
        tensors[_DECODER] = tensors[PREFIX + "embeddings.word_embeddings.weight"].copy()
    return write_hf_folder(folder, tensors, hf_config, overwrite,
                           getattr(backbone_of(model), "tokenizer_asset", None))
