"""ALBERT configuration: the original field names, validation, and file formats.

Three JSON dialects are read and written:

* ``albert_keras``: our own (every field below, including ``sharing`` and
  ``layer_norm_eps``), used inside model folders.
* ``original``: the ``albert_config.json`` / ``bert_config.json`` of Google's TF1
  code. Its ``"gelu"`` is the tanh approximation (``gelu_new``).
* ``hf``: a HF transformers ``config.json`` (``model_type`` ``albert`` or ``bert``).
  Its ``"gelu"`` is the exact erf form.

Unknown keys are errors that name the key: a field we silently dropped could
change the model.
"""

import dataclasses
import json
import math
import os

SHARING_MODES = ("all", "attention", "ffn", "none")
ACTIVATIONS = ("gelu_new", "gelu", "relu", "tanh", "linear", "gelu_pytorch_tanh")

# Special token ids (the ALBERT convention: the original SentencePiece models put them first).
PAD_ID = 0
UNK_ID = 1
CLS_ID = 2
SEP_ID = 3
MASK_ID = 4


def block_plan(num_hidden_layers, num_hidden_groups, inner_group_num, sharing):
    """Which attention and FFN module each block application uses.

    Layer ``i`` runs group ``int(i / L * G)`` (the original formula); each
    group holds ``inner_group_num`` blocks. ``all`` shares both halves of a
    block within its group, ``none`` gives every application its own, and
    ``attention``/``ffn`` share only that half.

    Returns:
        A list with one entry per layer; each entry is a list of
        ``(attention_index, ffn_index)`` pairs, one per inner block.
    """
    if sharing not in SHARING_MODES:
        raise ConfigError(f"sharing must be one of {SHARING_MODES}, got {sharing!r}")
    plan = []
    for layer in range(num_hidden_layers):
        group = int(layer / num_hidden_layers * num_hidden_groups)
        blocks = []
        for i in range(inner_group_num):
            shared = group * inner_group_num + i
            own = layer * inner_group_num + i
            attn = shared if sharing in ("all", "attention") else own
            ffn = shared if sharing in ("all", "ffn") else own
            blocks.append((attn, ffn))
        plan.append(blocks)
    return plan


class ConfigError(ValueError):
    """A configuration file or value that we refuse, with the reason."""


@dataclasses.dataclass(frozen=True)
class AlbertConfig:
    """Hyperparameters of an ALBERT (or BERT) encoder.

    Field names are those of the original ``albert_config.json``. ``sharing``
    selects the cross-layer parameter sharing of the paper's Table 4:
    ``all`` (ALBERT), ``attention`` (attention shared, feed-forward not),
    ``ffn`` (feed-forward shared, attention not) or ``none`` (BERT-style).

    Args:
        vocab_size: number of word pieces V.
        embedding_size: factorized embedding width E.
        hidden_size: transformer width H.
        num_hidden_layers: number of layer applications L.
        num_hidden_groups: number of distinct parameter groups; layer ``i``
            uses group ``int(i / L * G)``.
        inner_group_num: transformer blocks inside each group.
        num_attention_heads: attention heads; must divide ``hidden_size``.
        intermediate_size: feed-forward width.
        hidden_act: ``gelu_new`` (tanh approximation), ``gelu`` (exact erf),
            ``relu``, ``tanh`` or ``linear``.
        hidden_dropout_prob: dropout after embeddings, attention output and FFN.
        attention_probs_dropout_prob: dropout on attention probabilities.
        max_position_embeddings: longest sequence the model accepts.
        type_vocab_size: number of segments.
        initializer_range: stddev of the truncated-normal initializer.
        layer_norm_eps: LayerNorm epsilon.
        sharing: one of ``all``, ``attention``, ``ffn``, ``none``.

    Example:
    >>> config = AlbertConfig(vocab_size=30000)
    >>> config.hidden_size
    768
    """

    vocab_size: int = 30000
    embedding_size: int = 128
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    sharing: str = "all"

    def __post_init__(self):
        self.validate()

    # -- validation --------------------------------------------------------

    def validate(self):
        """Raises ConfigError naming the first field that is out of range."""
        for name in (
            "vocab_size",
            "embedding_size",
            "hidden_size",
            "num_hidden_layers",
            "num_hidden_groups",
            "inner_group_num",
            "num_attention_heads",
            "intermediate_size",
            "max_position_embeddings",
            "type_vocab_size",
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
                raise ConfigError(f"{name} must be in [0, 1), got {value!r}")
        for name in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, name)
            if (
                not isinstance(value, (int, float))
                or not math.isfinite(value)
                or value <= 0
            ):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) must be divisible by "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        if self.num_hidden_groups > self.num_hidden_layers:
            raise ConfigError(
                f"num_hidden_groups ({self.num_hidden_groups}) must not exceed "
                f"num_hidden_layers ({self.num_hidden_layers})"
            )
        if self.sharing not in SHARING_MODES:
            raise ConfigError(
                f"sharing must be one of {SHARING_MODES}, got {self.sharing!r}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(
                f"hidden_act must be one of {ACTIVATIONS}, got {self.hidden_act!r}"
            )

    # -- derived -----------------------------------------------------------

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def has_embedding_projection(self):
        """The E -> H mapping exists only when E != H (original code)."""
        return self.embedding_size != self.hidden_size

    def group_of_layer(self, layer_index):
        """Group used by layer ``layer_index`` (original ALBERT formula)."""
        return int(layer_index / self.num_hidden_layers * self.num_hidden_groups)

    def block_plan(self):
        """Which attention and FFN module each block application uses.

        See ``block_plan`` at module level.
        """
        return block_plan(
            self.num_hidden_layers,
            self.num_hidden_groups,
            self.inner_group_num,
            self.sharing,
        )

    def num_attention_modules(self):
        return 1 + max(a for layer in self.block_plan() for a, _ in layer)

    def num_ffn_modules(self):
        return 1 + max(f for layer in self.block_plan() for _, f in layer)

    def replace(self, **changes):
        """Returns a copy with some fields changed (validated)."""
        return dataclasses.replace(self, **changes)

    # -- our own dialect -----------------------------------------------------

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, source="config"):
        """Builds a config from our own dialect; unknown keys are errors."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a JSON object")
        fields = {f.name for f in dataclasses.fields(cls)}
        for key in data:
            if key not in fields:
                raise ConfigError(f"{source}: unknown config key {key!r}")
        try:
            return cls(**data)
        except ConfigError as e:
            raise ConfigError(f"{source}: {e}") from None
        except TypeError as e:
            raise ConfigError(f"{source}: {e}") from None

    # -- the original TF1 dialect --------------------------------------------

    @classmethod
    def from_original_dict(cls, data, source="albert_config.json"):
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
        for key, default in _ORIGINAL_INERT_FIELDS.items():
            if key in data:
                value = data.pop(key)
                if value not in default:
                    raise ConfigError(
                        f"{source}: {key}={value!r} is not supported "
                        f"(only {default[0]!r})"
                    )
        known = {
            f.name for f in dataclasses.fields(cls) if f.name not in ("sharing",)
        }
        out = {}
        for key, value in data.items():
            if key not in known:
                raise ConfigError(f"{source}: unknown config key {key!r}")
            out[key] = value
        act = out.get("hidden_act", "gelu")
        out["hidden_act"] = _ORIGINAL_ACTIVATIONS.get(act, act)
        if not is_albert:
            out["embedding_size"] = out.get("hidden_size", cls.hidden_size)
            out["num_hidden_groups"] = out.get(
                "num_hidden_layers", cls.num_hidden_layers
            )
            out["sharing"] = "none"
        return cls.from_dict(out, source)

    def to_original_dict(self):
        """Writes the original ``albert_config.json`` layout.

        Only ``sharing="all"`` exists in the original code (``none`` is
        written as one group per layer).
        """
        groups = self._groups_for_export("the original albert_config.json")
        act = {"gelu_new": "gelu", "gelu_pytorch_tanh": "gelu"}.get(
            self.hidden_act, self.hidden_act
        )
        if self.hidden_act == "gelu":
            raise ConfigError(
                "the original TF1 code has no exact-erf gelu; its 'gelu' is the "
                "tanh approximation"
            )
        return {
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "hidden_act": act,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "embedding_size": self.embedding_size,
            "hidden_size": self.hidden_size,
            "initializer_range": self.initializer_range,
            "intermediate_size": self.intermediate_size,
            "max_position_embeddings": self.max_position_embeddings,
            "num_attention_heads": self.num_attention_heads,
            "num_hidden_layers": self.num_hidden_layers,
            "num_hidden_groups": groups,
            "net_structure_type": 0,
            "gap_size": 0,
            "num_memory_blocks": 0,
            "inner_group_num": self.inner_group_num,
            "down_scale_factor": 1,
            "type_vocab_size": self.type_vocab_size,
            "vocab_size": self.vocab_size,
        }

    def _groups_for_export(self, target):
        if self.sharing == "all":
            return self.num_hidden_groups
        if self.sharing == "none":
            return self.num_hidden_layers
        raise ConfigError(
            f"sharing={self.sharing!r} has no equivalent in {target}; keep the "
            "model as .keras"
        )

    # -- the HF transformers dialect ------------------------------------------

    @classmethod
    def from_hf_dict(cls, data, source="config.json"):
        """Reads a HF transformers ``config.json`` (ALBERT or BERT)."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a JSON object")
        model_type = data.get("model_type")
        if model_type not in ("albert", "bert"):
            raise ConfigError(
                f"{source}: model_type must be 'albert' or 'bert', got {model_type!r}"
            )
        known = _HF_ALBERT_KEYS if model_type == "albert" else _HF_BERT_KEYS
        out = {}
        for key, value in data.items():
            if key in _HF_MODEL_FIELDS:
                out[key] = value
            elif key in _ORIGINAL_INERT_FIELDS:
                if value not in _ORIGINAL_INERT_FIELDS[key]:
                    raise ConfigError(
                        f"{source}: {key}={value!r} is not supported "
                        f"(only {_ORIGINAL_INERT_FIELDS[key][0]!r})"
                    )
            elif key == "position_embedding_type":
                if value != "absolute":
                    raise ConfigError(
                        f"{source}: position_embedding_type={value!r} is not "
                        "supported (only 'absolute')"
                    )
            elif key not in known and key not in _HF_GENERIC_KEYS:
                raise ConfigError(f"{source}: unknown config key {key!r}")
        if model_type == "albert":
            if out.get("embedding_size", 128) == out.get("hidden_size", 768):
                raise ConfigError(
                    f"{source}: an HF ALBERT with embedding_size == hidden_size "
                    "keeps an E->H projection that this model omits (as the "
                    "original code does); it cannot be loaded exactly"
                )
            out["sharing"] = "all"
        else:
            for key in ("embedding_size", "num_hidden_groups", "inner_group_num"):
                if key in out:
                    raise ConfigError(f"{source}: unknown config key {key!r}")
            out["embedding_size"] = out.get("hidden_size", cls.hidden_size)
            out["num_hidden_groups"] = out.get(
                "num_hidden_layers", cls.num_hidden_layers
            )
            out["sharing"] = "none"
            out.setdefault("hidden_act", "gelu")
            out.setdefault("hidden_dropout_prob", 0.1)
            out.setdefault("attention_probs_dropout_prob", 0.1)
            out.setdefault("vocab_size", 30522)
        return cls.from_dict(out, source)

    @property
    def is_bert_layout(self):
        """True when the model is exactly BERT (no sharing, E = H, one block)."""
        return (
            self.sharing == "none"
            and not self.has_embedding_projection
            and self.inner_group_num == 1
        )

    def to_hf_dict(self):
        """Writes a HF ``config.json`` (``BertConfig`` when the layout is BERT's)."""
        common = {
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "num_hidden_layers": self.num_hidden_layers,
            "num_attention_heads": self.num_attention_heads,
            "intermediate_size": self.intermediate_size,
            "hidden_act": self.hidden_act,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
            "max_position_embeddings": self.max_position_embeddings,
            "type_vocab_size": self.type_vocab_size,
            "initializer_range": self.initializer_range,
            "layer_norm_eps": self.layer_norm_eps,
            "pad_token_id": PAD_ID,
        }
        if self.is_bert_layout:
            return {
                "architectures": ["BertForPreTraining"],
                "model_type": "bert",
                **common,
            }
        groups = self._groups_for_export("HF transformers")
        if not self.has_embedding_projection:
            raise ConfigError(
                "HF ALBERT always has an E->H projection; a model with "
                "embedding_size == hidden_size and this sharing cannot be exported"
            )
        return {
            "architectures": ["AlbertForPreTraining"],
            "model_type": "albert",
            **common,
            "embedding_size": self.embedding_size,
            "num_hidden_groups": groups,
            "inner_group_num": self.inner_group_num,
            "classifier_dropout_prob": 0.1,
            "bos_token_id": CLS_ID,
            "eos_token_id": SEP_ID,
        }

    # -- files -----------------------------------------------------------------

    @classmethod
    def from_json_file(cls, path, dialect="auto"):
        """Reads a config file in any dialect.

        Args:
            path: a JSON file.
            dialect: ``auto`` (HF when it has ``model_type``, ours when it has
                ``sharing``, else the original), ``albert_keras``, ``original``
                or ``hf``.
        """
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ConfigError(f"{path}: cannot read config: {e}") from None
        if dialect == "auto":
            if isinstance(data, dict) and "model_type" in data:
                dialect = "hf"
            elif isinstance(data, dict) and "sharing" in data:
                dialect = "albert_keras"
            else:
                dialect = "original"
        reader = {
            "albert_keras": cls.from_dict,
            "original": cls.from_original_dict,
            "hf": cls.from_hf_dict,
        }.get(dialect)
        if reader is None:
            raise ConfigError(f"unknown config dialect {dialect!r}")
        return reader(data, str(path))

    def to_json_file(self, path, dialect="albert_keras"):
        """Writes the config atomically in the given dialect."""
        data = {
            "albert_keras": self.to_dict,
            "original": self.to_original_dict,
            "hf": self.to_hf_dict,
        }[dialect]()
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)


# Fields of Google's TF1 config that we accept only at their inert values.
_ORIGINAL_INERT_FIELDS = {
    "net_structure_type": (0,),
    "gap_size": (0,),
    "num_memory_blocks": (0,),
    "down_scale_factor": (1, 1.0),
    "layers_to_keep": ([],),
}

_ORIGINAL_ACTIVATIONS = {"gelu": "gelu_new"}

# HF keys that carry model hyperparameters we map one to one.
_HF_MODEL_FIELDS = {
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_hidden_groups",
    "inner_group_num",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
    "layer_norm_eps",
}
# Model-specific HF keys that do not change the encoder's computation.
_HF_ALBERT_KEYS = {"classifier_dropout_prob"}
_HF_BERT_KEYS = {"classifier_dropout", "use_cache", "is_decoder", "add_cross_attention"}
# Keys PretrainedConfig writes for every model (labels, generation, bookkeeping).
_HF_GENERIC_KEYS = {
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
}
