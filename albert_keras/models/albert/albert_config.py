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
# DeBERTa's disentangled attention: the terms a head may add to content-to-
# content scores (content-to-position, position-to-content), HF's names.
POSITION_ATTENTION_TERMS = ("c2p", "p2c")
RELATIVE_EMBEDDING_NORMS = ("none", "layer_norm")


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
        relative_attention: DeBERTa's disentangled attention (He et al.
            2021): every head also scores query content against the key's
            relative position (``c2p``) and the query's relative position
            against key content (``p2c``), from one shared table of
            relative-position embeddings. The fields below (HF
            ``DebertaV2Config``'s names) apply only with it.
        max_relative_positions: the largest distance with its own embedding;
            -1 takes ``max_position_embeddings``.
        position_buckets: with a positive value, distances beyond
            ``position_buckets // 2`` share log-spaced buckets, and the
            table has ``2 * position_buckets`` rows (DeBERTa-v3: 256).
        pos_att_type: the relative terms, ``"c2p|p2c"`` (either order),
            ``"c2p"``, ``"p2c"`` or ``""``.
        share_att_key: the position projections reuse the content query and
            key projections (DeBERTa-v3) instead of their own.
        norm_rel_ebd: ``layer_norm`` normalises the relative table before
            use (DeBERTa-v3), ``none`` does not.
        position_biased_input: add absolute position embeddings to the input
            (ALBERT, BERT, DeBERTa-v1); DeBERTa-v3 does not.
        pooler_hidden_act: the pooler's activation: ``tanh`` (ALBERT, BERT)
            or DeBERTa's ``gelu`` (``ContextPooler``).

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
    relative_attention: bool = False
    max_relative_positions: int = -1
    position_buckets: int = -1
    pos_att_type: str = "c2p|p2c"
    share_att_key: bool = False
    norm_rel_ebd: str = "none"
    position_biased_input: bool = True
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
        self._validate_relative()

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
                              ("pooler_hidden_act", ACTIVATIONS),
                              ("norm_rel_ebd", RELATIVE_EMBEDDING_NORMS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"{name} must be one of {allowed}, got {getattr(self, name)!r}"
                )
        for name in ("relative_attention", "share_att_key", "position_biased_input"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got "
                                  f"{getattr(self, name)!r}")

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

    def _validate_relative(self):
        if not isinstance(self.pos_att_type, str):
            raise ConfigError(f"pos_att_type must be a string such as 'c2p|p2c', "
                              f"got {self.pos_att_type!r}")
        unknown = set(self.position_attention_terms) - set(POSITION_ATTENTION_TERMS)
        if unknown:
            raise ConfigError(f"pos_att_type: unknown term {sorted(unknown)[0]!r} "
                              f"(known: {', '.join(POSITION_ATTENTION_TERMS)})")
        for name in ("max_relative_positions", "position_buckets"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or (
                    value < 1 and value != -1):
                raise ConfigError(f"{name} must be a positive integer or -1, got {value!r}")
        if self.position_buckets == 1:
            raise ConfigError("position_buckets must be at least 2 (or -1)")
        if self.relative_attention:
            if self.position_bias != "none":
                raise ConfigError("relative_attention and position_bias="
                                  f"{self.position_bias!r} cannot be combined")
            return
        defaults = AlbertConfig.__dataclass_fields__
        for name in ("max_relative_positions", "position_buckets", "pos_att_type",
                     "share_att_key", "norm_rel_ebd"):
            if getattr(self, name) != defaults[name].default:
                raise ConfigError(f"{name}={getattr(self, name)!r} needs "
                                  "relative_attention=true")
        if not self.position_biased_input:
            raise ConfigError("position_biased_input=false needs relative_attention=true "
                              "(the model would have no position information)")

    # -- derived -----------------------------------------------------------

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    @property
    def position_attention_terms(self):
        """The relative terms as a tuple, e.g. ``("c2p", "p2c")``."""
        return tuple(t.strip() for t in self.pos_att_type.lower().split("|") if t.strip())

    @property
    def relative_span(self):
        """Half the rows of the relative table: the attention span."""
        if self.position_buckets > 0:
            return self.position_buckets
        if self.max_relative_positions > 0:
            return self.max_relative_positions
        return self.max_position_embeddings

    @property
    def max_relative_distance(self):
        """The distance where log bucketing ends (HF's max_relative_positions)."""
        if self.max_relative_positions > 0:
            return self.max_relative_positions
        return self.max_position_embeddings

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
        """Builds a config from our own dialect; unknown keys are errors."""
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
        if self.position_bias != "none" or self.relative_attention:
            what = ("relative_attention" if self.relative_attention
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
