"""HF transformers ``config.json`` of ``model_type`` ``deberta-v2`` (v2 and v3).

DeBERTa's relative-attention fields keep HF's names in ``DebertaConfig``;
the rest is BERT's layout (no sharing, E = H). What this model cannot hold
exactly is refused with the field named: the convolution after the first
layer (``conv_kernel_size``), an embedding width other than the hidden width
(HF projects before the LayerNorm, without a bias), a pooler of another
width, a head size other than ``hidden_size / heads``.
"""

import dataclasses

from albert_keras.config_dicts import ConfigError
from albert_keras.models.albert.albert_config import AlbertConfig
from albert_keras.models.deberta.deberta_config import DebertaConfig
from albert_keras.text.special_ids import PAD_ID

MODEL_TYPE = "deberta-v2"

# Fields copied as they are (HF and ours share the names).
_SAME = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
         "intermediate_size", "hidden_act", "hidden_dropout_prob",
         "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
         "initializer_range", "layer_norm_eps", "relative_attention",
         "max_relative_positions", "position_buckets", "share_att_key",
         "position_biased_input", "pooler_hidden_act")
# DebertaV2Config's defaults where they differ from AlbertConfig's.
_HF_DEFAULTS = {"vocab_size": 128100, "hidden_size": 1536, "num_hidden_layers": 24,
                "num_attention_heads": 24, "intermediate_size": 6144, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
                "type_vocab_size": 0, "layer_norm_eps": 1e-7, "relative_attention": False,
                "position_biased_input": True, "pooler_hidden_act": "gelu"}
# Keys that do not change the encoder: the classifier's dropout, the head
# layout (read from the tensors), the convolution's settings when it is off.
_INERT = {"pooler_dropout", "legacy", "conv_act", "conv_groups", "classifier_dropout",
          "z_steps"}


def _pos_att_type(value, source):
    if value is None:
        return ""
    if isinstance(value, str):
        value = value.split("|")
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise ConfigError(f"{source}: pos_att_type must be a list such as ['p2c', 'c2p'], "
                          f"got {value!r}")
    return "|".join(t.strip().lower() for t in value if t.strip())


def _norm_rel_ebd(value, source):
    terms = [t.strip() for t in str(value).lower().split("|") if t.strip()]
    if set(terms) - {"none", "layer_norm"}:
        raise ConfigError(f"{source}: norm_rel_ebd={value!r} is not supported "
                          "(only 'none' or 'layer_norm')")
    return "layer_norm" if "layer_norm" in terms else "none"


def _refuse_layouts(data, source):
    """Fields whose values this model cannot hold exactly."""
    hidden = data.get("hidden_size", _HF_DEFAULTS["hidden_size"])
    heads = data.get("num_attention_heads", _HF_DEFAULTS["num_attention_heads"])
    if data.get("conv_kernel_size", 0):
        raise ConfigError(f"{source}: conv_kernel_size={data['conv_kernel_size']!r} "
                          "(DeBERTa-v2's convolution after the first layer) is not "
                          "supported")
    for key, expected in (("embedding_size", hidden), ("pooler_hidden_size", hidden),
                          ("attention_head_size", hidden // max(heads, 1))):
        if key in data and data[key] != expected:
            raise ConfigError(f"{source}: {key}={data[key]!r} is not supported "
                              f"(only {expected}, the model's own width)")
    if data.get("z_steps", 0) not in (0, 1):
        raise ConfigError(f"{source}: z_steps={data['z_steps']!r} is not supported")


def from_deberta_dict(data, source, generic_keys):
    """Reads an HF DeBERTa-v2/v3 ``config.json`` into a ``DebertaConfig``.

    Args:
        data: the parsed JSON object.
        source: the file, for messages.
        generic_keys: keys every HF config may carry (bookkeeping, labels).
    """
    _refuse_layouts(data, source)
    out = {key: data.get(key, _HF_DEFAULTS.get(key)) for key in _SAME
           if key in data or key in _HF_DEFAULTS}
    out["pos_att_type"] = _pos_att_type(data.get("pos_att_type"), source)
    out["norm_rel_ebd"] = _norm_rel_ebd(data.get("norm_rel_ebd", "none"), source)
    known = set(_SAME) | _INERT | {"pos_att_type", "norm_rel_ebd", "conv_kernel_size",
                                   "embedding_size", "pooler_hidden_size",
                                   "attention_head_size"}
    for key in data:
        if key not in known and key not in generic_keys:
            raise ConfigError(f"{source}: unknown config key {key!r}")
    if not out.get("relative_attention"):
        if out["pos_att_type"]:
            # HF still divides the scores by sqrt(d * (1 + len(pos_att_type))).
            raise ConfigError(f"{source}: relative_attention=false with pos_att_type="
                              f"{data.get('pos_att_type')!r} is not supported (HF then "
                              "scales the scores for terms it does not compute)")
        # HF builds no relative table then; its other relative fields are inert.
        for key in ("max_relative_positions", "position_buckets", "share_att_key"):
            out.pop(key, None)
        out["pos_att_type"], out["norm_rel_ebd"] = "c2p|p2c", "none"
    out.update(embedding_size=out["hidden_size"], num_hidden_groups=out["num_hidden_layers"],
               sharing="none")
    albert = {f.name for f in dataclasses.fields(AlbertConfig)}
    return DebertaConfig.extending(
        AlbertConfig.from_dict({k: v for k, v in out.items() if k in albert}, source), source,
        **{k: v for k, v in out.items() if k not in albert})


def to_deberta_dict(config):
    """Writes an HF ``DebertaV2Config`` dict for a DeBERTa-layout config."""
    if not config.is_bert_layout:
        raise ConfigError("HF DeBERTa shares no weights across layers and has "
                          "embedding_size == hidden_size; this model does not fit "
                          f"(sharing={config.sharing!r}, embedding_size="
                          f"{config.embedding_size}); keep it as .keras")
    if config.position_bias != "none":
        raise ConfigError(f"position_bias={config.position_bias!r} has no equivalent "
                          "in HF DeBERTa; keep the model as .keras")
    out = {key: getattr(config, key) for key in _SAME}
    out.update({
        "architectures": ["DebertaV2Model"],
        "model_type": MODEL_TYPE,
        "pos_att_type": (list(config.position_attention_terms)
                         if config.relative_attention else []),
        "norm_rel_ebd": config.norm_rel_ebd,
        "pad_token_id": PAD_ID,
        "pooler_dropout": 0.0,
        "pooler_hidden_size": config.hidden_size,
    })
    return out
