"""HF transformers folders (``config.json`` + safetensors): the generic part.

Reads an HF folder's tensors (single or sharded safetensors, or a
``pytorch_model.bin`` read with ``weights_only``) and its ``model_type``,
writes a folder transformers loads, and hands each folder or model to its
family's checkpoint module (``Family.checkpoints``), which knows the
family's tensor names and heads. This module imports no model.
"""

import json
import os

from albert_keras.convert import hf_heads
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.families import family_for_hf
from albert_keras.families import family_of
from albert_keras.files import write_json
from albert_keras.files import writing_folder

# Keys PretrainedConfig writes for every model (labels, generation,
# bookkeeping); every family's config reader accepts them.
HF_GENERIC_KEYS = frozenset({
    "_name_or_path",
    "architectures",
    "model_type",
    "transformers_version",
    "torch_dtype",
    "dtype",
    "pad_token_id",
    "bos_token_id",
    "eos_token_id",
    "sep_token_id",
    "decoder_start_token_id",
    "id2label",
    "label2id",
    "num_labels",
    "problem_type",
    "finetuning_task",
    "output_hidden_states",
    "output_attentions",
    "return_dict",
    "tie_word_embeddings",
    "is_encoder_decoder",
    "chunk_size_feed_forward",
    "gradient_checkpointing",
    "tokenizer_class",
    "prefix",
    "task_specific_params",
    "use_return_dict",
    "pruned_heads",
    "torchscript",
    "tf_legacy_loss",
    "use_bfloat16",
    "cross_attention_hidden_size",
    "add_cross_attention",
    "is_decoder",
    "_attn_implementation_autoset",
    "_attn_implementation",
    "use_cache",
})


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


def strip_prefix(tensors, prefix):
    """``tensors`` with ``prefix`` taken off the names that have it."""
    out = {}
    for key, value in tensors.items():
        if key.startswith(prefix):
            key = key[len(prefix) :]
        out[key] = value
    return out


def load_hf(folder, strict=True, dtype=None, only_encoder=None):
    """Builds our model from an HF folder, through its family's reader.

    Args:
        folder: holds ``config.json`` and the weights.
        strict: unexpected tensors (e.g. a fine-tuned head) are errors.
        dtype: a dtype policy for the built model.
        only_encoder: an ``EncoderSettings``: build the encoder alone, once,
            with the run's settings (a head's tensors are then unused).

    Returns:
        ``(model, report)``: the family's model for the heads the folder
        holds (a pretrainer with an MLM head, a classifier, an encoder...);
        the report says which tensor groups were loaded and which were left
        at initial values.

    Example:
    >>> model, report = load_hf("albert-base-v2/")  # doctest: +SKIP
    """
    config_path = os.path.join(folder, "config.json")
    family = family_for_hf(hf_model_type(config_path), config_path)
    return family.checkpoint_module().load_hf(folder, strict=strict, dtype=dtype,
                                              only_encoder=only_encoder)


def read_hf_config(config_path):
    """An HF ``config.json`` as a dict with a ``model_type``, or a one-line error."""
    try:
        with open(config_path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConversionError(f"{config_path}: cannot read config: {e}") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise ConversionError(f"{config_path}: no model_type (not an HF config.json)")
    return data


def hf_model_type(config_path):
    """The ``model_type`` of an HF ``config.json``, or a one-line error."""
    return read_hf_config(config_path)["model_type"]


def hf_task_spec(folder):
    """The ``task.json`` dict of an HF ``...For<Task>`` folder, read from its
    ``config.json`` alone (no weights); ``{}`` for any other folder."""
    if not is_hf_folder(folder):
        return {}
    path = os.path.join(folder, "config.json")
    try:
        data = read_hf_config(path)
    except ConversionError:  # not HF's (a keras-hub preset's config.json): no HF task
        return {}
    return hf_heads.task_spec(data, path)


# -- writing -----------------------------------------------------------------------


def save_hf(model, folder, overwrite=False, model_type=None):
    """Writes ``model`` as an HF folder that transformers loads, through its
    family's writer: an encoder as ``...Model``, a pretrainer as
    ``...ForPreTraining`` (or ``...ForMaskedLM``), a task model as its
    ``...For<Task>`` class with its labels. ``model_type`` picks among the
    HF types a family writes (ALBERT's: ``albert``, ``bert``, ``electra``,
    ``deberta-v2``; default: the layout's). The folder is written under a
    temporary name and renamed.

    Example:
    >>> save_hf(model, "hf/")  # doctest: +SKIP
    """
    module = family_of(model.config).checkpoint_module()
    return module.save_hf(model, folder, overwrite=overwrite, model_type=model_type)


def write_hf_folder(folder, tensors, hf_config, overwrite=False, tokenizer_asset=None):
    """``model.safetensors`` and ``config.json`` in ``folder``, and the
    tokenizer (a ``TokenizerAsset``, or None) in transformers' form, written
    under a temporary name and renamed (every family's HF writer ends here)."""
    from safetensors.numpy import save_file

    from albert_keras.convert.hf_tokenizer import write_hf_tokenizer

    if os.path.exists(folder) and not overwrite:
        raise FileExistsError(f"{folder} exists; pass overwrite=True / --overwrite")
    with writing_folder(folder) as tmp:
        save_file(tensors, os.path.join(tmp, "model.safetensors"), {"format": "pt"})
        write_json(os.path.join(tmp, "config.json"), hf_config)
        if tokenizer_asset is not None:
            write_hf_tokenizer(tmp, tokenizer_asset,
                               token_types=bool(hf_config.get("type_vocab_size")))
    return folder
