"""DeBERTa's config: ALBERT's fields, with DeBERTa-v3-base's values."""

import dataclasses

from albert_keras.models.albert.albert_config import AlbertConfig


@dataclasses.dataclass(frozen=True)
class DebertaConfig(AlbertConfig):
    """Hyperparameters of a DeBERTa encoder (He et al. 2021, v3 2023).

    The fields are ``AlbertConfig``'s: DeBERTa's relative-attention fields
    (HF ``DebertaV2Config``'s names: ``relative_attention``,
    ``position_buckets``, ``pos_att_type``, ``share_att_key``,
    ``norm_rel_ebd``, ``position_biased_input``) are ALBERT's too, since
    ALBERT's shared stack takes DeBERTa's attention. Only the defaults
    differ: these are ``microsoft/deberta-v3-base``'s (128,100 pieces, 12
    layers of 768 with no sharing, relative attention over 256 log buckets
    with shared position keys, no absolute positions, no segments, exact
    GELU). So ``DebertaConfig(sharing="all", num_hidden_groups=1,
    embedding_size=128)`` is DeBERTa's attention inside ALBERT's shared,
    factorized model, a combination no other implementation offers (it
    stays a ``.keras`` model: HF's DeBERTa has no sharing).

    Args:
        As ``AlbertConfig``'s.

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
    relative_attention: bool = True
    position_buckets: int = 256
    pos_att_type: str = "p2c|c2p"
    share_att_key: bool = True
    norm_rel_ebd: str = "layer_norm"
    position_biased_input: bool = False
    pooler_hidden_act: str = "gelu"

    @classmethod
    def of(cls, config):
        """The same values as a ``DebertaConfig`` (every field copied, so no
        default of either class fills in).

        Example:
        >>> DebertaConfig.of(AlbertConfig(relative_attention=True)).vocab_size
        30000
        """
        return cls(**dataclasses.asdict(config))


def is_deberta(config):
    """Whether a config is DeBERTa's: a ``DebertaConfig``, or any ALBERT
    config with relative attention (ALBERT's sharing with DeBERTa's attention,
    and files written before DeBERTa had its own class).

    Example:
    >>> is_deberta(AlbertConfig(relative_attention=True))
    True
    """
    return isinstance(config, DebertaConfig) or (
        isinstance(config, AlbertConfig) and config.relative_attention)
