"""DeBERTa's config: ALBERT's fields and DeBERTa's relative attention,
with DeBERTa-v3-base's values."""

import dataclasses

from albert_keras.config_dicts import ConfigError
from albert_keras.config_dicts import config_from_dict
from albert_keras.models.albert.albert_config import FORMER_RELATIVE_FIELDS
from albert_keras.models.albert.albert_config import AlbertConfig

# DeBERTa's disentangled attention: the terms a head may add to content-to-
# content scores (content-to-position, position-to-content), HF's names.
POSITION_ATTENTION_TERMS = ("c2p", "p2c")
RELATIVE_EMBEDDING_NORMS = ("none", "layer_norm")
# The relative fields' values when relative attention is off (HF builds no
# relative table then): those ALBERT's files held.
_RELATIVE_OFF = {k: v for k, v in FORMER_RELATIVE_FIELDS.items()
                 if k not in ("relative_attention", "position_biased_input")}


@dataclasses.dataclass(frozen=True)
class DebertaConfig(AlbertConfig):
    """Hyperparameters of a DeBERTa encoder (He et al. 2021, v3 2023).

    ``AlbertConfig``'s fields and DeBERTa's own (HF ``DebertaV2Config``'s
    names), since ALBERT's shared stack runs DeBERTa's attention. The
    defaults are ``microsoft/deberta-v3-base``'s (128,100 pieces, 12
    layers of 768 with no sharing, relative attention over 256 log buckets
    with shared position keys, no absolute positions, no segments, exact
    GELU). So ``DebertaConfig(sharing="all", num_hidden_groups=1,
    embedding_size=128)`` is DeBERTa's attention inside ALBERT's shared,
    factorized model, a combination no other implementation offers (it
    stays a ``.keras`` model: HF's DeBERTa has no sharing).

    Args:
        relative_attention: DeBERTa's disentangled attention (He et al.
            2021): every head also scores query content against the key's
            relative position (``c2p``) and the query's relative position
            against key content (``p2c``), from one shared table of
            relative-position embeddings. The fields below apply only with
            it.
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
            (DeBERTa-v1); DeBERTa-v3 does not.
        **fields: ``AlbertConfig``'s.

    Example:
    >>> config = DebertaConfig(num_hidden_layers=6, num_hidden_groups=6)
    >>> config.position_buckets, config.relative_attention
    (256, True)
    """

    vocab_size: int = 128100
    embedding_size: int = 768
    num_hidden_groups: int = 12
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    type_vocab_size: int = 0
    layer_norm_eps: float = 1e-7
    sharing: str = "none"
    pooler_hidden_act: str = "gelu"
    relative_attention: bool = True
    max_relative_positions: int = -1
    position_buckets: int = 256
    pos_att_type: str = "p2c|c2p"
    share_att_key: bool = True
    norm_rel_ebd: str = "layer_norm"
    position_biased_input: bool = False

    def validate(self):
        """``AlbertConfig``'s checks and the relative fields'."""
        super().validate()
        self._validate_relative_types()
        self._validate_relative()

    def _validate_relative_types(self):
        for name in ("relative_attention", "share_att_key", "position_biased_input"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got "
                                  f"{getattr(self, name)!r}")
        if self.norm_rel_ebd not in RELATIVE_EMBEDDING_NORMS:
            raise ConfigError(f"norm_rel_ebd must be one of {RELATIVE_EMBEDDING_NORMS}, "
                              f"got {self.norm_rel_ebd!r}")
        if not isinstance(self.pos_att_type, str):
            raise ConfigError(f"pos_att_type must be a string such as 'c2p|p2c', "
                              f"got {self.pos_att_type!r}")
        for name in ("max_relative_positions", "position_buckets"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or (
                    value < 1 and value != -1):
                raise ConfigError(f"{name} must be a positive integer or -1, got {value!r}")

    def _validate_relative(self):
        unknown = set(self.position_attention_terms) - set(POSITION_ATTENTION_TERMS)
        if unknown:
            raise ConfigError(f"pos_att_type: unknown term {sorted(unknown)[0]!r} "
                              f"(known: {', '.join(POSITION_ATTENTION_TERMS)})")
        if self.position_buckets == 1:
            raise ConfigError("position_buckets must be at least 2 (or -1)")
        if self.relative_attention:
            if self.position_bias != "none":
                raise ConfigError("relative_attention and position_bias="
                                  f"{self.position_bias!r} cannot be combined")
            return
        for name, off in _RELATIVE_OFF.items():
            if getattr(self, name) != off:
                raise ConfigError(f"{name}={getattr(self, name)!r} needs "
                                  "relative_attention=true")
        if not self.position_biased_input:
            raise ConfigError("position_biased_input=false needs relative_attention=true "
                              "(the model would have no position information)")

    # -- derived -----------------------------------------------------------

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

    def relative_options(self):
        """The shared stack's ``relative`` options, or None without
        relative attention.

        Example:
        >>> DebertaConfig().relative_options()["span"]
        256
        """
        if not self.relative_attention:
            return None
        return {"span": self.relative_span, "position_buckets": self.position_buckets,
                "max_relative_positions": self.max_relative_distance,
                "pos_att_type": self.pos_att_type, "share_att_key": self.share_att_key,
                "norm_rel_ebd": self.norm_rel_ebd}

    @property
    def adds_absolute_positions(self):
        return self.position_biased_input

    @classmethod
    def extending(cls, config, source="config", **fields):
        """``config``'s values (an ``AlbertConfig``) with DeBERTa's ``fields``;
        every other field is copied or off (as ALBERT's files held them), so
        no default of this class fills in: DeBERTa's attention in an ALBERT
        preset's shared, factorized model.

        Example:
        >>> c = DebertaConfig.extending(AlbertConfig(), relative_attention=True)
        >>> c.vocab_size, c.position_buckets, c.position_biased_input
        (30000, -1, True)
        """
        return config_from_dict(cls, {**dataclasses.asdict(config), **FORMER_RELATIVE_FIELDS,
                                      **fields}, source)

