"""ALBERT configuration: the original field names, validation, our own JSON.

Unknown keys are errors that name the key: a field we silently dropped could
change the model. The HF ``config.json`` and Google's ``albert_config.json``
dialects are read and written beside their converters (``hf_config`` and
``tf1_config`` in this folder). Free of Keras: the command line reads it
before Keras is imported.
"""

import dataclasses
import json
import math

from albert_keras.config_dicts import ConfigError
from albert_keras.config_dicts import config_from_dict

SHARING_MODES = ("all", "attention", "ffn", "none")
# Kept in step with ``albert_keras.layers.position_bias.POSITION_BIASES``; the
# config does not import the layers (it must load without Keras).
POSITION_BIASES = ("none", "alibi")
ACTIVATIONS = ("gelu_new", "gelu", "relu", "relu6", "tanh", "linear", "gelu_pytorch_tanh")
# Files written before DeBERTa's config held its own fields carry them, at
# these values for every ALBERT, BERT or ELECTRA model: such a file reads as
# this class's (with any other value it is DeBERTa's, which the DeBERTa
# family reads).
FORMER_RELATIVE_FIELDS = {"relative_attention": False, "max_relative_positions": -1,
                          "position_buckets": -1, "pos_att_type": "c2p|p2c",
                          "share_att_key": False, "norm_rel_ebd": "none",
                          "position_biased_input": True}


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
        position_bias: ``none`` (ALBERT, BERT) or ``alibi``: every attention
            head also scores keys by distance, ``-slope_h * |i - j|``
            (Press et al. 2022, bidirectional as in MosaicBERT), on top of
            the learned absolute positions. No weights change; HF
            transformers and the original code cannot hold such a model.
        alibi_slope_scale: multiplies ALiBi's slopes (1: the paper's, made
            for sequences of a thousand tokens and more; larger makes every
            head more local). Only with ``position_bias="alibi"``.
        pooler_hidden_act: the pooler's activation: ``tanh`` (ALBERT, BERT)
            or DeBERTa's ``gelu`` (``ContextPooler``).

    DeBERTa's disentangled attention runs in this encoder too; its fields
    are ``DebertaConfig``'s (``albert_keras.models.deberta``), which extends
    this class, so ``DebertaConfig(sharing="all", ...)`` shares it ALBERT's
    way.

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
    position_bias: str = "none"
    alibi_slope_scale: float = 1.0
    pooler_hidden_act: str = "tanh"

    def __post_init__(self):
        self.validate()

    # -- validation --------------------------------------------------------

    def validate(self):
        """Raises ConfigError naming the first field that is out of range."""
        self._validate_sizes()
        self._validate_rates()
        self._validate_choices()
        self._validate_alibi()

    def _validate_sizes(self):
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
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        value = self.type_vocab_size  # 0: no segment embedding (DeBERTa-v3)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"type_vocab_size must be a non-negative integer, got {value!r}")
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

    def _validate_rates(self):
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

    def _validate_choices(self):
        for name, allowed in (("sharing", SHARING_MODES),
                              ("position_bias", POSITION_BIASES),
                              ("hidden_act", ACTIVATIONS),
                              ("pooler_hidden_act", ACTIVATIONS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"{name} must be one of {allowed}, got {getattr(self, name)!r}"
                )

    def _validate_alibi(self):
        scale = self.alibi_slope_scale
        if (isinstance(scale, bool) or not isinstance(scale, (int, float))
                or not math.isfinite(scale) or scale <= 0):
            raise ConfigError(f"alibi_slope_scale must be a positive number, got {scale!r}")
        if scale != 1.0 and self.position_bias != "alibi":
            raise ConfigError(
                f"alibi_slope_scale={scale!r} needs position_bias='alibi' "
                f"(got {self.position_bias!r})"
            )

    # -- derived -----------------------------------------------------------

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    def relative_options(self):
        """The shared stack's relative-attention options (None: ALBERT's
        attention scores content alone; ``DebertaConfig`` gives DeBERTa's)."""
        return None

    @property
    def adds_absolute_positions(self):
        """Whether the input adds the absolute position table (ALBERT,
        BERT: always; DeBERTa-v3 does not)."""
        return True

    @property
    def has_embedding_projection(self):
        """The E -> H mapping exists only when E != H (original code)."""
        return self.embedding_size != self.hidden_size

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

    def with_dropout(self, rate):
        """This config with every dropout of the encoder at ``rate`` (a
        run's ``--dropout``; no weight changes)."""
        return dataclasses.replace(self, hidden_dropout_prob=rate,
                                   attention_probs_dropout_prob=rate)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, source="config"):
        """Builds a config from our own dialect; unknown keys are errors.
        The DeBERTa fields of files written before ``DebertaConfig`` held
        them are dropped where they are off (``FORMER_RELATIVE_FIELDS``)."""
        if cls is AlbertConfig and isinstance(data, dict):
            if not is_former_albert(data):
                field = next(k for k in data if k in FORMER_RELATIVE_FIELDS)
                raise ConfigError(f"{source}: {field} is DeBERTa's field: read this config "
                                  "with DebertaConfig.from_dict")
            data = {k: v for k, v in data.items() if k not in FORMER_RELATIVE_FIELDS}
        return config_from_dict(cls, data, source)

    # -- layouts other formats can hold --------------------------------------

    @property
    def is_bert_layout(self):
        """True when the model is exactly BERT (no sharing, E = H, one block)."""
        return (
            self.sharing == "none"
            and not self.has_embedding_projection
            and self.inner_group_num == 1
        )

    def groups_for_export(self, target):
        """``num_hidden_groups`` for a format that knows only ALBERT's sharing.

        ``all`` keeps its groups and ``none`` becomes one group per layer;
        the paper's partial sharings have no equivalent there, and neither
        has ALiBi (the formats have no field for it).
        """
        if self.position_bias != "none" or self.relative_options() is not None:
            what = ("relative_attention" if self.relative_options() is not None
                    else f"position_bias={self.position_bias!r}")
            raise ConfigError(
                f"{what} has no equivalent in {target}; keep the model as .keras"
            )
        if self.pooler_hidden_act != "tanh" or self.type_vocab_size == 0:
            raise ConfigError(
                f"{target} has a tanh pooler and a segment table (pooler_hidden_act="
                f"{self.pooler_hidden_act!r}, type_vocab_size={self.type_vocab_size}); "
                "keep the model as .keras"
            )
        if self.sharing == "all":
            return self.num_hidden_groups
        if self.sharing == "none":
            return self.num_hidden_layers
        raise ConfigError(
            f"sharing={self.sharing!r} has no equivalent in {target}; keep the "
            "model as .keras"
        )

    # -- files -----------------------------------------------------------------

    @classmethod
    def from_json_file(cls, path):
        """Reads our own dialect (a model folder's ``config.json``)."""
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise ConfigError(f"{path}: cannot read config: {e}") from None
        return cls.from_dict(data, str(path))

    def to_json_file(self, path):
        """Writes our own dialect atomically."""
        from albert_keras.files import write_json

        write_json(path, self.to_dict())


def is_former_albert(data):
    """Whether a config dict written before ``DebertaConfig`` held DeBERTa's
    fields is an ALBERT (BERT, ELECTRA) model's: each of those fields it
    carries is at its off value.

    Example:
    >>> is_former_albert({"hidden_size": 8, "relative_attention": False}), is_former_albert(
    ...     {"relative_attention": True})
    (True, False)
    """
    return all(data[k] == v and type(data[k]) is type(v)
               for k, v in FORMER_RELATIVE_FIELDS.items() if k in data)
