"""Google's ``albert_config.json`` / ``bert_config.json`` (the TF1 code's dialect).

Its ``"gelu"`` is the tanh approximation (``gelu_new``). Fields of the
original code that select variants we do not build are accepted only at
their inert values; any other unknown key is an error that names it.
"""

import dataclasses

from albert_keras.config_dicts import ConfigError
from albert_keras.models.albert.albert_config import AlbertConfig

_DEFAULTS = AlbertConfig()

# Fields of Google's TF1 config that we accept only at their inert values.
INERT_FIELDS = {
    "net_structure_type": (0,),
    "gap_size": (0,),
    "num_memory_blocks": (0,),
    "down_scale_factor": (1, 1.0),
    "layers_to_keep": ([],),
}

_ORIGINAL_ACTIVATIONS = {"gelu": "gelu_new"}


def from_original_dict(data, source="albert_config.json"):
    """Reads Google's ``albert_config.json`` or ``bert_config.json``.

    The TF1 code's ``gelu`` is the tanh approximation, so it maps to
    ``gelu_new``. A BERT config (no ``embedding_size``) becomes
    ``sharing="none"`` with E = H.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object")
    data = dict(data)
    is_albert = "embedding_size" in data or "num_hidden_groups" in data
    # Fields of the original code that select variants we do not build.
    for key, default in INERT_FIELDS.items():
        if key in data:
            value = data.pop(key)
            if value not in default:
                raise ConfigError(
                    f"{source}: {key}={value!r} is not supported "
                    f"(only {default[0]!r})"
                )
    known = {
        f.name for f in dataclasses.fields(AlbertConfig) if f.name not in ("sharing",)
    }
    out = {}
    for key, value in data.items():
        if key not in known:
            raise ConfigError(f"{source}: unknown config key {key!r}")
        out[key] = value
    act = out.get("hidden_act", "gelu")
    if isinstance(act, str):  # anything else is named by AlbertConfig's type check
        out["hidden_act"] = _ORIGINAL_ACTIVATIONS.get(act, act)
    if not is_albert:
        out["embedding_size"] = out.get("hidden_size", _DEFAULTS.hidden_size)
        out["num_hidden_groups"] = out.get(
            "num_hidden_layers", _DEFAULTS.num_hidden_layers
        )
        out["sharing"] = "none"
    return AlbertConfig.from_dict(out, source)

def to_original_dict(config):
    """Writes the original ``albert_config.json`` layout.

    Only ``sharing="all"`` exists in the original code (``none`` is
    written as one group per layer).
    """
    groups = config.groups_for_export("the original albert_config.json")
    act = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu"}.get(
        config.hidden_act, config.hidden_act
    )
    if config.hidden_act == "gelu":
        raise ConfigError(
            "the original TF1 code has no exact-erf gelu; its 'gelu' is the "
            "tanh approximation"
        )
    return {
        "attention_probs_dropout_prob": config.attention_probs_dropout_prob,
        "hidden_act": act,
        "hidden_dropout_prob": config.hidden_dropout_prob,
        "embedding_size": config.embedding_size,
        "hidden_size": config.hidden_size,
        "initializer_range": config.initializer_range,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position_embeddings,
        "num_attention_heads": config.num_attention_heads,
        "num_hidden_layers": config.num_hidden_layers,
        "num_hidden_groups": groups,
        "net_structure_type": 0,
        "gap_size": 0,
        "num_memory_blocks": 0,
        "inner_group_num": config.inner_group_num,
        "down_scale_factor": 1,
        "type_vocab_size": config.type_vocab_size,
        "vocab_size": config.vocab_size,
    }
