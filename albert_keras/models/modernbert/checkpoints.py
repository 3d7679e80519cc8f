"""ModernBERT's HF folders (``model_type: modernbert``), both ways.

transformers 5 names the encoder's tensors ``embeddings.tok_embeddings``,
``embeddings.norm``, ``layers.{i}.attn_norm`` (none in layer 0),
``layers.{i}.attn.Wqkv`` / ``.attn.Wo``, ``layers.{i}.mlp_norm``,
``layers.{i}.mlp.Wi`` / ``.mlp.Wo`` and ``final_norm``, under ``model.`` in
its task classes; the prediction head is ``head.dense`` / ``head.norm``
(our encoder's ``pooler``, and the masked-LM head's transform), the tied
decoder's bias ``decoder.bias``, a sequence classifier's ``classifier``.
Linear weights are ``[out, in]`` (ours ``[in, out]``).

``ModernBertModel``, ``...ForMaskedLM`` and the task classes read and
write as our encoder, ``EncoderPretrainer`` (no sentence head) and task
models: the sentence and choice heads read the encoder's pooled output (the
prediction head on the first row, or on the mean of the real rows: HF's
``classifier_pooling`` ``cls`` or ``mean``, a field of our config too), the token
and span heads the prediction head on every row (``token_rows``); the span
head's ``classifier`` is our ``qa_outputs``.
"""

import os

import numpy as np

from albert_keras.convert import hf_heads
from albert_keras.convert.assign import assign_tensors
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import read_hf_config
from albert_keras.convert.hf import read_hf_tensors
from albert_keras.convert.hf import write_hf_folder
from albert_keras.convert.weight_layout import hf_linear
from albert_keras.convert.weight_layout import hf_norm
from albert_keras.convert.weight_layout import model_variables
from albert_keras.models.backbone import backbone_of
from albert_keras.models.encoder_settings import EncoderSettings
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig
from albert_keras.models.modernbert.modernbert_encoder import ModernBertEncoder
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.models.task_models.hf_task_model import task_model_from_hf

MODEL_TYPE = "modernbert"
PREFIX = "model."
_DECODER = "decoder.weight"  # tied to the token table
_HEAD = "classifier"  # every task head's tensor prefix in transformers' ModernBERT
_OWN_NAMES = ("head.", "decoder.", f"{_HEAD}.")  # outside the encoder's prefix

# HF fields that say nothing about the encoder's computation (ids, labels,
# bookkeeping and kernels' switches)
_IGNORED = {"model_type", "architectures", "transformers_version", "torch_dtype", "dtype",
            "bos_token_id", "eos_token_id", "cls_token_id", "sep_token_id",
            "tie_word_embeddings", "id2label", "label2id", "problem_type", "num_labels",
            "deterministic_flash_attn", "sparse_prediction", "sparse_pred_ignore_index",
            "initializer_cutoff_factor", "classifier_dropout", "reference_compile",
            "output_attentions", "output_hidden_states", "return_dict", "use_cache",
            "_attn_implementation", "chunk_size_feed_forward", "is_encoder_decoder",
            "sliding_window", "rope_scaling", "repad_logits_with_grad", "head_dim",
            # the published checkpoints' files (transformers 4) hold these too:
            # no position table is read, and the norms' epsilon is norm_eps
            "gradient_checkpointing", "position_embedding_type", "layer_norm_eps"}


def config_from_hf(data, source="config.json"):
    """Our config of an HF ``ModernBertConfig`` dict (transformers 5's
    ``rope_parameters`` per layer type, or the older ``global_rope_theta``
    and ``local_rope_theta``).

    Example:
    >>> config_from_hf({"hidden_size": 64, "num_attention_heads": 4,
    ...                 "num_hidden_layers": 2, "rope_parameters": {
    ...     "full_attention": {"rope_theta": 1e5}}}).global_rope_theta
    100000.0
    """
    fields = {k: v for k, v in data.items() if k not in _IGNORED and not k.startswith("_")}
    rope = fields.pop("rope_parameters", None) or {}
    for kind, name in (("full_attention", "global_rope_theta"),
                       ("sliding_attention", "local_rope_theta")):
        given = (rope.get(kind) or {})
        if given.get("rope_type", "default") != "default":
            raise ValueError(f"{source}: rope_parameters.{kind}: only the default rotary "
                             f"positions convert, not {given['rope_type']!r}")
        if "rope_theta" in given:
            fields[name] = float(given["rope_theta"])
    return ModernBertConfig.from_dict(fields, source)


def config_to_hf(config):
    """The HF ``config.json`` dict of our config (transformers 5's
    ``rope_parameters`` per layer type); a lite config (a factorized table,
    shared layers) has none."""
    if config.is_lite:
        raise ConversionError("a lite ModernBERT (embedding_size other than hidden_size, or "
                              "share_layers) has no transformers class; save it as .keras")
    data = config.to_dict()
    del data["embedding_size"], data["share_layers"]
    rope = {"full_attention": data.pop("global_rope_theta"),
            "sliding_attention": data.pop("local_rope_theta")}
    data["rope_parameters"] = {kind: {"rope_type": "default", "rope_theta": theta}
                               for kind, theta in rope.items()}
    return {**data, "model_type": MODEL_TYPE}


def hf_names(config):
    """``{our stable name: (HF tensor name, transform)}`` of every part:
    the encoder, its pooler (HF's prediction head), the masked-LM head and
    a classifier (``"T"``: a torch Linear weight, transposed)."""
    names = {"embeddings/tok_embeddings": ("embeddings.tok_embeddings.weight", None),
             **hf_norm("embeddings.norm", "embeddings/norm")}
    for i in range(config.num_hidden_layers):
        if i:
            names.update(hf_norm(f"layers.{i}.attn_norm", f"layer_{i}/attn_norm"))
        names.update(hf_norm(f"layers.{i}.mlp_norm", f"layer_{i}/mlp_norm"))
        for part in ("attn.Wqkv", "attn.Wo", "mlp.Wi", "mlp.Wo"):
            names.update(hf_linear(f"layers.{i}.{part}", f"layer_{i}/{part.replace('.', '/')}"))
    names.update(hf_norm("final_norm", "final_norm"))
    names.update(hf_linear("head.dense", "pooler/dense"))  # the masked LM's transform too
    names.update(hf_norm("head.norm", "pooler/norm"))
    names["mlm/output_bias"] = ("decoder.bias", None)
    return {**names, **hf_heads.head_names()}


def _read(folder):
    """``(config dict, our config, tensors without the encoder's prefix)``."""
    path = os.path.join(folder, "config.json")
    data = read_hf_config(path)
    try:
        config = config_from_hf(data, path)
    except ValueError as e:
        raise ConversionError(str(e)) from None
    task = hf_heads.HF_TASKS.get(hf_heads.folder_task(data))
    head = task.head if task else _HEAD
    tensors = {_ours(name, head): value for name, value in read_hf_tensors(folder).items()}
    return data, config, tensors


def _ours(name, head):
    """An HF tensor's name as our tables name it: the encoder's without its
    prefix; the task head's (ModernBERT names every head ``classifier``) as
    the head's canonical name ``head``."""
    name = name[len(PREFIX):] if name.startswith(PREFIX) else name
    return head + name[len(_HEAD):] if name.startswith(f"{_HEAD}.") else name


def _build(data, config, tensors, folder, dtype):
    """Our model for the class the folder holds."""
    task = hf_heads.folder_task(data)
    encoder = ModernBertEncoder(config, dtype=dtype)
    if task is not None:
        return task_model_from_hf(data, tensors, encoder, folder, dtype)
    if any(name.startswith("decoder.") for name in tensors) or \
            "ModernBertForMaskedLM" in (data.get("architectures") or ()):
        return EncoderPretrainer(encoder, sentence_order=False, dtype=dtype)
    return encoder


def _ignored(folder, tensors):
    """Present and not loaded: the tied decoder (checked equal to the table)."""
    table = tensors.get("embeddings.tok_embeddings.weight")
    if _DECODER in tensors and table is not None and not np.array_equal(tensors[_DECODER], table):
        raise ConversionError(f"{folder}: {_DECODER} differs from the token embeddings; an "
                              "untied decoder cannot be represented")
    return {_DECODER}


def load_hf(folder, strict=True, dtype=None, only_encoder=None):
    """``(model, report)`` of an HF ModernBERT folder: a sequence classifier
    (with its labels), an ``EncoderPretrainer`` with the masked-LM head, or
    a ``ModernBertEncoder``. ``only_encoder`` (``EncoderSettings``): the
    encoder alone, built with them (the heads' tensors reported unused; HF's
    prediction head is its pooler)."""
    data, config, tensors = _read(folder)
    if only_encoder is None:
        model = _build(data, config, tensors, folder, dtype)
    else:
        model = only_encoder.build(ModernBertEncoder, config)
    report = assign_tensors(model, tensors, hf_names(config), folder,
                            ignored=_ignored(folder, tensors), strict=strict)
    return model, report


def load_hf_encoder(folder, dtype=None, output_hidden_states=False):
    """Our ``ModernBertEncoder`` with an HF ModernBERT folder's weights (the
    prediction head as its pooler, where the folder has one).

    Example:
    >>> encoder = load_hf_encoder("answerdotai/ModernBERT-base")  # doctest: +SKIP
    """
    settings = EncoderSettings(dtype=dtype, output_hidden_states=output_hidden_states)
    return load_hf(folder, strict=False, only_encoder=settings)[0]


def _architecture(model):
    """HF's class of ``model`` (a one-line error for what has none)."""
    if hasattr(model, "mlm_head"):
        if getattr(model, "sop_head", None) is not None:
            raise ConversionError("ModernBERT has no sentence-order head in transformers; "
                                  "pretrain with --objective mlm")
        return "ModernBertForMaskedLM"
    if getattr(model, "hf_task", None) is None:
        return "ModernBertModel"
    return hf_heads.architecture("ModernBert", model)


def _token_ids(encoder):
    """The special ids transformers' config names, from the tokenizer the
    model carries (ModernBERT's: [CLS] is also its bos, [SEP] its eos)."""
    tokenizer = encoder.tokenizer
    if tokenizer is None:
        return {}
    ids = tokenizer.special_ids
    return {"cls_token_id": ids["cls"], "bos_token_id": ids["cls"], "sep_token_id": ids["sep"],
            "eos_token_id": ids["sep"], "pad_token_id": ids["pad"]}


def save_hf(model, folder, overwrite=False, model_type=None):
    """Writes ``model`` as an HF ModernBERT folder (``config.json``,
    ``model.safetensors`` and the tokenizer), under a temporary name then
    renamed."""
    if model_type not in (None, MODEL_TYPE):
        raise ConversionError(f"a ModernBERT model exports as model_type {MODEL_TYPE}, "
                              f"not {model_type}")
    architecture = _architecture(model)
    config = backbone_of(model).config
    hf_config = {**config_to_hf(config), "architectures": [architecture],
                 **hf_heads.label_fields(model), **_token_ids(backbone_of(model))}
    names = hf_names(config)
    prefix = "" if architecture == "ModernBertModel" else PREFIX
    tensors = {}
    for ours, variable in model_variables(model).items():
        if ours.startswith("pooler/") and architecture == "ModernBertModel":
            continue  # HF's encoder alone has no prediction head
        src, transform = names[ours]
        array = np.asarray(variable.numpy(), np.float32)
        head = src.partition(".")[0]
        if head in hf_heads.HEAD_NAMES:  # ModernBERT names every head "classifier"
            src = _HEAD + src[len(head):]
        key = src if src.startswith(_OWN_NAMES) else prefix + src
        tensors[key] = np.ascontiguousarray(array.T if transform == "T" else array)
    if architecture == "ModernBertForMaskedLM":  # the tied decoder, as transformers writes it
        tensors[_DECODER] = tensors[PREFIX + "embeddings.tok_embeddings.weight"].copy()
    return write_hf_folder(folder, tensors, hf_config, overwrite,
                           getattr(backbone_of(model), "tokenizer_asset", None))
