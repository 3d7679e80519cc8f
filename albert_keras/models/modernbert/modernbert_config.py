"""ModernBertConfig: ModernBERT's and Ettin's encoder settings, HF's names."""

import dataclasses

from albert_keras.config_dicts import ConfigError
from albert_keras.config_dicts import config_from_dict

FULL, SLIDING = "full_attention", "sliding_attention"
LAYER_TYPES = (FULL, SLIDING)
ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu")
# the fields that count something (at least 1), and those that may be None
_SIZES = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
          "num_attention_heads", "max_position_embeddings", "local_attention",
          "global_attn_every_n_layers", "embedding_size")
_OPTIONAL = ("layer_types", "embedding_size")


@dataclasses.dataclass
class ModernBertConfig:
    """What a ModernBERT encoder is, as transformers 5's ``ModernBertConfig``
    names it.

    Args:
        vocab_size: the token table's rows (50,368 for ModernBERT and Ettin).
        hidden_size: H.
        intermediate_size: the GeGLU's inner width (its input projection is
            twice that: value and gate).
        num_hidden_layers: blocks.
        num_attention_heads: heads (H must divide by it).
        hidden_activation: the GeGLU's activation (HF's ``gelu`` is exact).
        max_position_embeddings: the longest input (rotary positions have no
            table; this bounds what the model was trained on).
        initializer_range: the weights' initial standard deviation.
        norm_eps: the LayerNorms' epsilon.
        norm_bias: whether the LayerNorms have a bias.
        attention_bias: whether ``Wqkv`` and the attention's ``Wo`` have one.
        mlp_bias: whether the GeGLU's ``Wi`` and ``Wo`` have one.
        local_attention: the sliding window's width: a token sees the keys
            at most ``local_attention // 2`` positions away.
        layer_types: per layer, ``full_attention`` or ``sliding_attention``
            (default: every ``global_attn_every_n_layers``-th layer full,
            the first included).
        global_attn_every_n_layers: the default pattern's period.
        global_rope_theta: the rotary base of the full-attention layers.
        local_rope_theta: the rotary base of the sliding-window layers.
        classifier_activation: the prediction head's activation.
        classifier_bias: whether the head's dense layer has a bias.
        classifier_pooling: ``cls`` or ``mean``, what a sequence
            classifier's head reads.
        decoder_bias: whether the masked-LM decoder has a bias.
        embedding_dropout, attention_dropout, mlp_dropout: dropout rates.
        pad_token_id: the padding piece's id.
        embedding_size: the token table's width (None: H, ModernBERT's
            own). A smaller width factorizes the table as ALBERT does: a
            V x E table, then an E x H projection. Ours alone: no
            transformers class holds it.
        share_layers: every layer runs one block's weights (ALBERT's
            cross-layer sharing), each keeping its own attention window and
            rotary base. Ours alone, as ``embedding_size``.

    Example:
    >>> ModernBertConfig(num_hidden_layers=4).layer_types
    ['full_attention', 'sliding_attention', 'sliding_attention', 'full_attention']
    """

    vocab_size: int = 50368
    hidden_size: int = 768
    intermediate_size: int = 1152
    num_hidden_layers: int = 22
    num_attention_heads: int = 12
    hidden_activation: str = "gelu"
    max_position_embeddings: int = 8192
    initializer_range: float = 0.02
    norm_eps: float = 1e-5
    norm_bias: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    local_attention: int = 128
    layer_types: list = None
    global_attn_every_n_layers: int = 3
    global_rope_theta: float = 160000.0
    local_rope_theta: float = 10000.0
    classifier_activation: str = "gelu"
    classifier_bias: bool = False
    classifier_pooling: str = "cls"
    decoder_bias: bool = True
    embedding_dropout: float = 0.0
    attention_dropout: float = 0.0
    mlp_dropout: float = 0.0
    pad_token_id: int = 50283
    embedding_size: int = None
    share_layers: bool = False

    def __post_init__(self):
        self._validate_numbers()  # before the pattern below divides by them
        if self.layer_types is None:
            period = self.global_attn_every_n_layers
            self.layer_types = [SLIDING if i % period else FULL
                                for i in range(self.num_hidden_layers)]
        self.layer_types = list(self.layer_types)
        if self.embedding_size is None:
            self.embedding_size = self.hidden_size
        self.validate()

    def _validate_numbers(self):
        """Each size a positive integer, each rate in [0, 1), each flag a
        bool: a ``ConfigError`` naming the field."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _SIZES and not (value is None and f.name in _OPTIONAL):
                if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                    raise ConfigError(f"{f.name} must be a positive integer, got {value!r}")
            elif f.type is bool and not isinstance(value, bool):
                raise ConfigError(f"{f.name} must be true or false, got {value!r}")
            elif f.type is float:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ConfigError(f"{f.name} must be a number, got {value!r}")
                if f.name.endswith("dropout") and not 0 <= value < 1:
                    raise ConfigError(f"{f.name} must be in [0, 1), got {value!r}")
                if not f.name.endswith("dropout") and not value > 0:
                    raise ConfigError(f"{f.name} must be positive, got {value!r}")

    def validate(self):
        """A one-line ``ConfigError`` naming the first field out of range."""
        self._validate_numbers()
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(f"hidden_size {self.hidden_size} must divide by "
                             f"num_attention_heads {self.num_attention_heads}")
        if (self.hidden_size // self.num_attention_heads) % 2:
            raise ConfigError("rotary positions need an even head size (hidden_size / "
                             "num_attention_heads)")
        if len(self.layer_types) != self.num_hidden_layers:
            raise ConfigError(f"layer_types lists {len(self.layer_types)} layers; "
                             f"num_hidden_layers is {self.num_hidden_layers}")
        unknown = sorted(set(self.layer_types) - set(LAYER_TYPES))
        if unknown:
            raise ConfigError(f"layer_types: {unknown[0]!r} is not one of {LAYER_TYPES}")
        for name, value, choices in (
                ("hidden_activation", self.hidden_activation, ACTIVATIONS),
                ("classifier_activation", self.classifier_activation, ACTIVATIONS),
                ("classifier_pooling", self.classifier_pooling, ("cls", "mean"))):
            if value not in choices:
                raise ConfigError(f"{name} must be one of {choices}, got {value!r}")
        if self.local_attention < 2:
            raise ConfigError(f"local_attention must be at least 2, got {self.local_attention}")

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    def window(self, layer):
        """How far layer ``layer`` looks each way (None: everywhere)."""
        return self.local_attention // 2 if self.layer_types[layer] == SLIDING else None

    def rope_theta(self, layer):
        """Layer ``layer``'s rotary base."""
        return self.local_rope_theta if self.layer_types[layer] == SLIDING else \
            self.global_rope_theta

    @property
    def is_lite(self):
        """Whether the table is factorized or the layers shared (what no
        transformers class holds)."""
        return self.embedding_size != self.hidden_size or self.share_layers

    def count_parameters(self, with_pooler=True):
        """Parameters of the encoder, by formula (the pooler is HF's
        prediction head: dense and norm).

        Example:
        >>> round(ModernBertConfig().count_parameters(with_pooler=False) / 1e6, 1)
        149.0
        """
        h, i, e = self.hidden_size, self.intermediate_size, self.embedding_size
        norm = h * (2 if self.norm_bias else 1)
        attention = h * 3 * h + h * h + (4 * h if self.attention_bias else 0)
        mlp = h * 2 * i + i * h + (2 * i + h if self.mlp_bias else 0)
        block = attention + mlp + 2 * norm
        # layer 0 has no attn_norm; a shared block keeps it for the layers after
        layers = block if self.share_layers else self.num_hidden_layers * block - norm
        table = self.vocab_size * e + (e * h if e != h else 0)
        head = h * h + (h if self.classifier_bias else 0) + norm
        return table + norm + layers + norm + (head if with_pooler else 0)

    def with_dropout(self, rate):
        """This config with every dropout of the encoder at ``rate`` (a
        run's ``--dropout``; no weight changes)."""
        return dataclasses.replace(self, embedding_dropout=rate, attention_dropout=rate,
                                   mlp_dropout=rate)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, config):
        """``config`` itself, or the config of its dict (what a layer's
        ``get_config`` stored)."""
        return cls.from_dict(config) if isinstance(config, dict) else config

    @classmethod
    def from_dict(cls, data, source="config"):
        """The config of ``data``; an unknown field, a wrong type or a value
        out of range is a ``ConfigError`` naming ``source`` and the field."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names) if isinstance(data, dict) else []
        if unknown:
            raise ConfigError(f"{source}: unknown ModernBERT config field {unknown[0]!r}")
        return config_from_dict(cls, data, source, optional=_OPTIONAL)
