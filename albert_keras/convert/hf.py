"""HF transformers folders (``config.json`` + safetensors) in and out.

Reads ``AlbertModel``, ``AlbertForPreTraining``, ``AlbertForMaskedLM``,
``BertModel``, ``BertForPreTraining``, ``ElectraModel``,
``ElectraForPreTraining`` (the discriminator) and ``ElectraForMaskedLM``
(the generator) folders (prefix ``albert.`` / ``bert.`` / ``electra.``
optional) and writes a folder that ``transformers`` loads.
"""

import json
import os

import numpy as np

from albert_keras.convert.assign import ConversionError
from albert_keras.convert.assign import assign_tensors
from albert_keras.convert.config_files import read_config_file
from albert_keras.convert.hf_config import to_hf_dict
from albert_keras.convert.weight_layout import hf_albert_names
from albert_keras.convert.weight_layout import hf_bert_names
from albert_keras.convert.weight_layout import hf_electra_names
from albert_keras.convert.weight_layout import model_variables
from albert_keras.files import write_json
from albert_keras.files import writing_folder

_HEAD_PREFIXES = ("predictions.", "sop_classifier.", "cls.", "generator_predictions.",
                  "generator_lm_head.", "discriminator_predictions.")
_NAMES = {"albert": hf_albert_names, "bert": hf_bert_names, "electra": hf_electra_names}
# Present in HF files, never loaded: position-id buffers and the decoder,
# which is tied to the word embeddings (checked for equality below).
_TIED = {
    "albert": ("predictions.decoder.weight", "predictions.decoder.bias"),
    "bert": ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"),
    "electra": ("generator_lm_head.weight", None),
}
_OUTPUT_BIAS = {"albert": "predictions.bias", "bert": "cls.predictions.bias",
                "electra": "generator_lm_head.bias"}
_ARCHITECTURES = {  # (encoder, with the MLM head, discriminator)
    "albert": ("AlbertModel", "AlbertForPreTraining", None),
    "bert": ("BertModel", "BertForPreTraining", None),
    "electra": ("ElectraModel", "ElectraForMaskedLM", "ElectraForPreTraining"),
}


def is_hf_folder(path):
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "config.json"))


# -- reading -----------------------------------------------------------------------


def _read_safetensors(path):
    from safetensors import SafetensorError
    from safetensors import safe_open

    def read(framework, convert):
        try:
            with safe_open(path, framework=framework) as f:
                return {key: convert(f.get_tensor(key)) for key in f.keys()}
        except SafetensorError as e:
            # a truncated download or another format under the same name
            raise ConversionError(f"{path}: not a complete safetensors file ({e}); "
                                  "download it again") from None

    try:
        return read("np", lambda x: x)
    except ConversionError:
        raise
    except (TypeError, ValueError) as e:
        # numpy has no bfloat16: read such files through torch, if installed.
        try:
            import torch  # noqa: F401
        except ImportError:
            raise ConversionError(f"{path}: cannot read with numpy ({e})") from None
    return read("pt", lambda x: x.float().numpy())


def _read_torch_bin(path):
    try:
        import torch
    except ImportError:
        raise ConversionError(
            f"{path}: reading pytorch_model.bin needs torch; convert it to "
            "safetensors or install torch"
        ) from None
    # weights_only: never unpickle arbitrary objects from a stranger's file.
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many types for a bad file
        raise ConversionError(f"{path}: cannot read: {e}") from None
    return {k: v.float().numpy() for k, v in state.items()}


def read_hf_tensors(folder):
    """All tensors of an HF folder (single or sharded safetensors, or .bin)."""
    single = os.path.join(folder, "model.safetensors")
    index = os.path.join(folder, "model.safetensors.index.json")
    binary = os.path.join(folder, "pytorch_model.bin")
    if os.path.isfile(single):
        return _read_safetensors(single)
    if os.path.isfile(index):
        with open(index, encoding="utf-8") as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        out = {}
        for shard in shards:
            out.update(_read_safetensors(os.path.join(folder, shard)))
        return out
    if os.path.isfile(binary):
        return _read_torch_bin(binary)
    raise ConversionError(
        f"{folder}: no model.safetensors, model.safetensors.index.json or "
        "pytorch_model.bin"
    )


def _strip_prefix(tensors, prefix):
    out = {}
    for key, value in tensors.items():
        if key.startswith(prefix):
            key = key[len(prefix) :]
        out[key] = value
    return out


def load_hf(folder, strict=True, dtype=None):
    """Builds our model from an HF folder.

    Args:
        folder: holds ``config.json`` and the weights.
        strict: unexpected tensors (e.g. a fine-tuned classifier) are errors.
        dtype: a dtype policy for the built model.

    Returns:
        ``(model, report)``: an ``AlbertPretrainer`` when the folder has an
        MLM or SOP head (an ELECTRA generator), an ``AlbertDiscriminator``
        for an ELECTRA discriminator, else an ``AlbertEncoder``; the report
        says which tensor groups were loaded and which were left at initial
        values.

    Example:
    >>> model, report = load_hf("albert-base-v2/")  # doctest: +SKIP
    """
    from albert_keras.models.albert_discriminator import AlbertDiscriminator
    from albert_keras.models.albert_encoder import AlbertEncoder
    from albert_keras.models.albert_pretrainer import AlbertPretrainer

    config_path = os.path.join(folder, "config.json")
    config = read_config_file(config_path, dialect="hf")
    with open(config_path, encoding="utf-8") as f:
        model_type = json.load(f)["model_type"]
    tensors = _strip_prefix(read_hf_tensors(folder), f"{model_type}.")
    names = _NAMES[model_type](config)

    has_heads = any(k.startswith(_HEAD_PREFIXES) for k in tensors)
    encoder = AlbertEncoder(config, dtype=dtype)
    if any(k.startswith("discriminator_predictions.") for k in tensors):
        model = AlbertDiscriminator(encoder, dtype=dtype)
    elif has_heads:
        model = AlbertPretrainer(encoder, dtype=dtype)
    else:
        model = encoder

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
    report = assign_tensors(
        model, tensors, names, folder, ignored=ignored, strict=strict
    )
    return model, report


# -- writing -----------------------------------------------------------------------


def save_hf(model, folder, overwrite=False, model_type=None):
    """Writes ``model`` as an HF folder (``config.json`` + ``model.safetensors``).

    ALBERT layouts become ``AlbertForPreTraining`` (or ``AlbertModel`` for an
    encoder); a BERT layout (no sharing, E = H) becomes ``BertForPreTraining``
    / ``BertModel``; ``model_type="electra"`` (the default for an
    ``AlbertDiscriminator``) gives ``ElectraModel``, ``ElectraForMaskedLM``
    (with the MLM head; the SOP head has no place there) or
    ``ElectraForPreTraining``. ``attention``/``ffn`` sharing has no HF
    equivalent and is refused. The folder is written under a temporary name
    and renamed.
    """
    from safetensors.numpy import save_file

    config = model.config
    if model_type is None and hasattr(model, "rtd_head"):
        model_type = "electra"
    hf_config = to_hf_dict(config, model_type)  # raises for layouts HF cannot hold
    model_type = hf_config["model_type"]
    plain, with_mlm, discriminator = _ARCHITECTURES[model_type]
    if hasattr(model, "rtd_head"):
        if discriminator is None:
            raise ConversionError(f"a discriminator exports to ELECTRA, not {model_type}")
        arch, prefix = discriminator, f"{model_type}."
    elif hasattr(model, "mlm_head"):
        arch, prefix = with_mlm, f"{model_type}."
    else:
        arch, prefix = plain, ""
    hf_config["architectures"] = [arch]
    names = _NAMES[model_type](config)

    tensors = {}
    for canonical, variable in model_variables(model).items():
        if canonical not in names:  # ELECTRA has no pooler and no SOP head
            continue
        src, transform = names[canonical]
        array = np.asarray(variable.numpy(), dtype=np.float32)
        if transform == "T":
            array = array.T
        key = src if src.startswith(_HEAD_PREFIXES) else prefix + src
        tensors[key] = np.ascontiguousarray(array)

    if os.path.exists(folder) and not overwrite:
        raise FileExistsError(f"{folder} exists; pass overwrite=True / --overwrite")
    with writing_folder(folder) as tmp:
        save_file(tensors, os.path.join(tmp, "model.safetensors"), {"format": "pt"})
        write_json(os.path.join(tmp, "config.json"), hf_config)
    return folder
