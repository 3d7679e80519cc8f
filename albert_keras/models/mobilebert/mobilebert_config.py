"""MobileBERT's configuration, with HF ``MobileBertConfig``'s field names.

Free of Keras (the command line reads presets before Keras loads). Unknown
keys and layouts no implementation computes are one-line errors.
"""

import dataclasses

from albert_keras.config_dicts import ConfigError
from albert_keras.config_dicts import config_from_dict
from albert_keras.models.albert.albert_config import ACTIVATIONS

NORMALIZATIONS = ("no_norm", "layer_norm")


@dataclasses.dataclass
class MobileBertConfig:
    """A MobileBERT shape (defaults: ``google/mobilebert-uncased``).

    Args:
        vocab_size: V.
        hidden_size: the width between blocks (512).
        num_hidden_layers: L.
        num_attention_heads: heads, over the bottleneck width.
        intermediate_size: each FFN's inner width.
        hidden_act: ``relu`` (the published model), ``gelu``, ...
        hidden_dropout_prob: dropout after the embeddings and each block.
        attention_probs_dropout_prob: dropout on the attention weights.
        max_position_embeddings: the longest input.
        type_vocab_size: segment ids.
        initializer_range: stddev of the initializers.
        layer_norm_eps: LayerNorm epsilon where HF passes it (see the block).
        pad_token_id: kept for HF's config.json.
        embedding_size: E, the word table's width (128).
        trigram_input: concatenate each token's next, own and previous
            embedding (3E) before projecting to ``hidden_size``.
        use_bottleneck: blocks run at ``intra_bottleneck_size`` inside.
        intra_bottleneck_size: the width inside a block (128).
        use_bottleneck_attention: queries, keys and values all from the
            bottleneck input.
        key_query_shared_bottleneck: queries and keys from one shared
            bottleneck of the block input, values from the input itself.
            With neither this nor ``use_bottleneck_attention``, queries,
            keys and values all read the H-wide block input (IB-BERT, the
            teacher, as google-research's code computes it; HF's MobileBERT
            cannot, so such a model does not export to HF).
        num_feedforward_networks: FFNs per block (the last one is the block's
            output FFN).
        normalization_type: ``no_norm`` (``x * w + b``) or ``layer_norm``.
        classifier_activation: the pooler is ``tanh(W h_0)``; False: the raw
            ``[CLS]`` vector (the published checkpoint).
        classifier_dropout: HF's head dropout (None: ``hidden_dropout_prob``).
        num_hidden_groups: ALBERT's cross-layer sharing for MobileBERT's
            blocks: this many distinct blocks, layer ``i`` running block
            ``int(i / L * G)`` (None: one per layer, no sharing).

    Example:
    >>> MobileBertConfig().true_hidden_size
    128
    """

    vocab_size: int = 30522
    hidden_size: int = 512
    num_hidden_layers: int = 24
    num_attention_heads: int = 4
    intermediate_size: int = 512
    hidden_act: str = "relu"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    embedding_size: int = 128
    trigram_input: bool = True
    use_bottleneck: bool = True
    intra_bottleneck_size: int = 128
    use_bottleneck_attention: bool = False
    key_query_shared_bottleneck: bool = True
    num_feedforward_networks: int = 4
    normalization_type: str = "no_norm"
    classifier_activation: bool = True
    classifier_dropout: float = None
    num_hidden_groups: int = None

    def __post_init__(self):
        self.validate()

    def validate(self):
        """Raises ``ConfigError`` for a value or layout that cannot be built."""
        for name in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                     "intermediate_size", "max_position_embeddings", "embedding_size",
                     "intra_bottleneck_size", "num_feedforward_networks"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be positive, got {getattr(self, name)}")
        if self.hidden_act not in ACTIVATIONS:
            raise ConfigError(f"hidden_act must be one of {ACTIVATIONS}, got "
                              f"{self.hidden_act!r}")
        if self.normalization_type not in NORMALIZATIONS:
            raise ConfigError(f"normalization_type must be one of {NORMALIZATIONS}, got "
                              f"{self.normalization_type!r}")
        if self.true_hidden_size % self.num_attention_heads:
            raise ConfigError(f"the attention width {self.true_hidden_size} is not a multiple "
                              f"of num_attention_heads {self.num_attention_heads}")
        if self.embedding_size > self.hidden_size:
            raise ConfigError(f"embedding_size {self.embedding_size} exceeds hidden_size "
                              f"{self.hidden_size} (the MLM decoder's extra rows)")
        groups = self.num_hidden_groups
        if groups is not None and not 1 <= groups <= self.num_hidden_layers:
            raise ConfigError(f"num_hidden_groups must be in [1, num_hidden_layers], got "
                              f"{groups}")

    @property
    def true_hidden_size(self):
        """The width inside a block: the bottleneck's, or ``hidden_size``."""
        return self.intra_bottleneck_size if self.use_bottleneck else self.hidden_size

    @property
    def num_blocks(self):
        """How many distinct blocks hold weights (fewer than L when shared)."""
        return self.num_hidden_groups or self.num_hidden_layers

    def block_of_layer(self, layer):
        """The block that layer ``layer`` runs (ALBERT's formula)."""
        return int(layer / self.num_hidden_layers * self.num_blocks)

    def count_parameters(self, with_pooler=True):
        """The encoder's parameters, by formula (no model is built).

        Example:
        >>> MobileBertConfig(classifier_activation=False).count_parameters()
        24581888
        """
        h, b, inner = self.hidden_size, self.true_hidden_size, self.intermediate_size
        trigram = 3 if self.trigram_input else 1
        embeddings = self.vocab_size * self.embedding_size + (
            self.max_position_embeddings + max(self.type_vocab_size, 1) + 2) * h
        if self.trigram_input or self.embedding_size != h:
            embeddings += trigram * self.embedding_size * h + h
        bottleneck = h * b + 3 * b if self.use_bottleneck else 0
        shared = bottleneck if self.key_query_shared_bottleneck else 0
        narrow = self.use_bottleneck_attention or self.key_query_shared_bottleneck
        qk_in = b if narrow or not self.use_bottleneck else h
        v_in = b if self.use_bottleneck_attention or not self.use_bottleneck else h
        attention = 2 * (qk_in * b + b) + (v_in * b + b) + (b * b + b) + 2 * b
        ffns = self.num_feedforward_networks * (b * inner + inner + inner * b + 3 * b)
        widen = b * h + 3 * h if self.use_bottleneck else 0
        block = bottleneck + shared + attention + ffns + widen
        pooler = h * h + h if with_pooler and self.classifier_activation else 0
        return embeddings + self.num_blocks * block + pooler

    def with_dropout(self, rate):
        """This config with every dropout of the encoder at ``rate`` (a
        run's ``--dropout``; no weight changes)."""
        return dataclasses.replace(self, hidden_dropout_prob=rate,
                                   attention_probs_dropout_prob=rate)

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, source="config"):
        """A config from its dict; unknown keys and wrong types are errors."""
        return config_from_dict(cls, data, source,
                                optional=("classifier_dropout", "num_hidden_groups"))
