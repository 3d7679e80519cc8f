"""HF transformers ``config.json`` (``model_type`` ``albert`` or ``bert``).

Its ``"gelu"`` is the exact erf form. Keys that only HF's bookkeeping uses
are accepted; any other unknown key is an error that names it.
"""

import dataclasses

from albert_keras.config_dicts import ConfigError
from albert_keras.convert.hf import HF_GENERIC_KEYS
from albert_keras.models.albert.albert_config import AlbertConfig
from albert_keras.models.albert.tf1_config import INERT_FIELDS
from albert_keras.text.special_ids import CLS_ID
from albert_keras.text.special_ids import PAD_ID
from albert_keras.text.special_ids import SEP_ID

_DEFAULTS = AlbertConfig()

# HF keys that carry model hyperparameters we map one to one.
_HF_MODEL_FIELDS = {f.name for f in dataclasses.fields(AlbertConfig)} - {
    "sharing", "pooler_hidden_act"}
# Model-specific HF keys that do not change the encoder's computation.
_HF_ALBERT_KEYS = {"classifier_dropout_prob"}
_HF_BERT_KEYS = {"classifier_dropout", "use_cache", "is_decoder", "add_cross_attention"}
# ELECTRA's sequence-summary keys configure HF's classification head only.
_HF_ELECTRA_KEYS = _HF_BERT_KEYS | {"summary_type", "summary_use_proj", "summary_activation",
                                    "summary_last_dropout", "embedding_size"}
MODEL_TYPES = ("albert", "bert", "electra")


def from_hf_dict(data, source="config.json"):
    """Reads a HF transformers ``config.json`` (ALBERT, BERT or ELECTRA; the
    DeBERTa family reads ``deberta-v2``)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object")
    model_type = data.get("model_type")
    if model_type not in MODEL_TYPES:
        raise ConfigError(
            f"{source}: model_type must be one of {', '.join(MODEL_TYPES)}, got {model_type!r}"
        )
    known = {"albert": _HF_ALBERT_KEYS, "bert": _HF_BERT_KEYS,
             "electra": _HF_ELECTRA_KEYS}[model_type]
    out = {}
    for key, value in data.items():
        if key in _HF_MODEL_FIELDS:
            out[key] = value
        elif key in INERT_FIELDS:
            if value not in INERT_FIELDS[key]:
                raise ConfigError(
                    f"{source}: {key}={value!r} is not supported "
                    f"(only {INERT_FIELDS[key][0]!r})"
                )
        elif key == "position_embedding_type":
            if value != "absolute":
                raise ConfigError(
                    f"{source}: position_embedding_type={value!r} is not "
                    "supported (only 'absolute')"
                )
        elif key not in known and key not in HF_GENERIC_KEYS:
            raise ConfigError(f"{source}: unknown config key {key!r}")
    _fill_model_type(model_type, out, source)
    return AlbertConfig.from_dict(out, source)


def _fill_model_type(model_type, out, source):
    """Sharing, E and defaults that each HF model type implies."""
    if model_type == "albert":
        if out.get("embedding_size", 128) == out.get("hidden_size", 768):
            raise ConfigError(
                f"{source}: an HF ALBERT with embedding_size == hidden_size "
                "keeps an E->H projection that this model omits (as the "
                "original code does); it cannot be loaded exactly"
            )
        out["sharing"] = "all"
    elif model_type == "electra":
        # BERT's blocks; E may differ from H (HF then adds embeddings_project,
        # our E -> H projection). The defaults are ElectraConfig's.
        out.setdefault("embedding_size", 128)
        out.setdefault("hidden_size", 256)
        out.setdefault("num_hidden_layers", 12)
        out.setdefault("num_attention_heads", 4)
        out.setdefault("intermediate_size", 1024)
        out["num_hidden_groups"] = out["num_hidden_layers"]
        out["sharing"] = "none"
        out.setdefault("hidden_act", "gelu")
        out.setdefault("hidden_dropout_prob", 0.1)
        out.setdefault("attention_probs_dropout_prob", 0.1)
        out.setdefault("vocab_size", 30522)
    else:
        for key in ("embedding_size", "num_hidden_groups", "inner_group_num"):
            if key in out:
                raise ConfigError(f"{source}: unknown config key {key!r}")
        out["embedding_size"] = out.get("hidden_size", _DEFAULTS.hidden_size)
        out["num_hidden_groups"] = out.get(
            "num_hidden_layers", _DEFAULTS.num_hidden_layers
        )
        out["sharing"] = "none"
        out.setdefault("hidden_act", "gelu")
        out.setdefault("hidden_dropout_prob", 0.1)
        out.setdefault("attention_probs_dropout_prob", 0.1)
        out.setdefault("vocab_size", 30522)


def _check_expressible(config, model_type):
    """Refuses what HF ALBERT, BERT and ELECTRA have no field for, in one line."""
    if config.relative_options() is not None:
        raise ConfigError(f"relative_attention has no equivalent in HF {model_type}; "
                          "write model_type deberta-v2 or keep the model as .keras")
    if config.pooler_hidden_act != "tanh" or config.type_vocab_size == 0:
        raise ConfigError("HF ALBERT, BERT and ELECTRA have a tanh pooler and a segment "
                          f"table (pooler_hidden_act={config.pooler_hidden_act!r}, "
                          f"type_vocab_size={config.type_vocab_size}); keep the model "
                          "as .keras")
    if config.position_bias != "none":
        raise ConfigError(
            f"position_bias={config.position_bias!r} has no equivalent in HF "
            "transformers' ALBERT, BERT or ELECTRA; keep the model as .keras"
        )
    if model_type not in (None,) + MODEL_TYPES:
        raise ConfigError(f"model_type must be one of {', '.join(MODEL_TYPES)}")


def _common_fields(config):
    """The fields HF's ALBERT, BERT and ELECTRA configs share."""
    return {
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": config.hidden_act,
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "initializer_range": config.initializer_range,
        "layer_norm_eps": config.layer_norm_eps,
        "pad_token_id": PAD_ID,
    }


def _albert_dict(config, common):
    groups = config.groups_for_export("HF transformers")
    if not config.has_embedding_projection:
        raise ConfigError(
            "HF ALBERT always has an E->H projection; a model with "
            "embedding_size == hidden_size and this sharing cannot be exported"
        )
    return {
        "architectures": ["AlbertForPreTraining"],
        "model_type": "albert",
        **common,
        "embedding_size": config.embedding_size,
        "num_hidden_groups": groups,
        "inner_group_num": config.inner_group_num,
        "classifier_dropout_prob": 0.1,
        "bos_token_id": CLS_ID,
        "eos_token_id": SEP_ID,
    }


def to_hf_dict(config, model_type=None):
    """Writes a HF ``config.json``.

    Args:
        config: our ``AlbertConfig``.
        model_type: ``bert``, ``albert`` or ``electra`` (default: ``bert``
            when the layout is BERT's, else ``albert``). ELECTRA takes any
            unshared layout, with or without an E -> H projection.
    """
    _check_expressible(config, model_type)
    common = _common_fields(config)
    if model_type == "electra":
        if config.sharing != "none" or config.inner_group_num != 1:
            raise ConfigError("ELECTRA shares no weights across layers; this model does "
                              f"(sharing={config.sharing!r})")
        return {"architectures": ["ElectraModel"], "model_type": "electra", **common,
                "embedding_size": config.embedding_size}
    if model_type == "bert" and not config.is_bert_layout:
        raise ConfigError("a BERT checkpoint needs no sharing and embedding_size == "
                          "hidden_size")
    if config.is_bert_layout and model_type != "albert":
        return {"architectures": ["BertForPreTraining"], "model_type": "bert", **common}
    return _albert_dict(config, common)
