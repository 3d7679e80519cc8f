"""MobileBERT's input embedding: a narrow word table, trigram-widened."""

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.models.mobilebert.no_norm import make_norm

# HF builds the embeddings' norm without its config's eps: torch's LayerNorm
# default then applies (it only matters under normalization_type layer_norm).
TORCH_LAYER_NORM_EPS = 1e-5


def _initializer(config):
    return keras.initializers.TruncatedNormal(stddev=config.initializer_range)


@keras.saving.register_keras_serializable(package="albert_keras")
class TrigramEmbedding(keras.layers.Layer):
    """Token ids to ``[B, S, hidden_size]``.

    ``word (E) -> [next, own, previous] (3E, zero past the ends) -> dense to
    H -> + position + segment (H wide) -> norm -> dropout``. Without
    ``trigram_input`` the E-wide rows are projected alone (when E != H).

    Args:
        config: a ``MobileBertConfig`` (or its dict).

    Example:
    >>> from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
    >>> layer = TrigramEmbedding(MobileBertConfig(vocab_size=50, hidden_size=32,
    ...     embedding_size=8, intra_bottleneck_size=16, num_attention_heads=2))
    >>> ids = keras.ops.ones((2, 5), "int32")
    >>> tuple(layer(ids, 0 * ids).shape)
    (2, 5, 32)
    """

    def __init__(self, config, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = MobileBertConfig.from_dict(config)
        self.config, self.quantize_aware = config, bool(quantize_aware)
        init, dtype = _initializer(config), self.dtype_policy
        self.token_embedding = keras.layers.Embedding(
            config.vocab_size, config.embedding_size, embeddings_initializer=init,
            dtype=dtype, name="word_embeddings")
        self.position_embedding = keras.layers.Embedding(
            config.max_position_embeddings, config.hidden_size, embeddings_initializer=init,
            dtype=dtype, name="position_embeddings")
        self.segment_embedding = keras.layers.Embedding(
            max(config.type_vocab_size, 1), config.hidden_size, embeddings_initializer=init,
            dtype=dtype, name="token_type_embeddings")
        self.projection = None
        if config.trigram_input or config.embedding_size != config.hidden_size:
            self.projection = make_dense(config.hidden_size, self.quantize_aware,
                                         kernel_initializer=init, dtype=dtype,
                                         name="embedding_transformation")
        self.norm = make_norm(config.normalization_type, TORCH_LAYER_NORM_EPS, dtype, "norm")
        self.dropout = keras.layers.Dropout(config.hidden_dropout_prob, dtype=dtype)

    def build(self, token_ids_shape, segment_ids_shape=None):
        c = self.config
        for table in (self.token_embedding, self.position_embedding, self.segment_embedding):
            table.build((None, None))
        if self.projection is not None:
            width = c.embedding_size * (3 if c.trigram_input else 1)
            self.projection.build((None, None, width))
        self.norm.build((None, None, c.hidden_size))
        self.built = True

    def call(self, token_ids, segment_ids, training=False, token_table=None):
        ids = ops.cast(token_ids, "int32")
        if token_table is None:
            x = self.token_embedding(ids)
        else:
            x = ops.take(ops.cast(token_table, self.compute_dtype), ids, axis=0)
        if self.config.trigram_input:
            zero = ops.zeros_like(x[:, :1])
            following = ops.concatenate([x[:, 1:], zero], axis=1)
            preceding = ops.concatenate([zero, x[:, :-1]], axis=1)
            x = ops.concatenate([following, x, preceding], axis=-1)
        if self.projection is not None:
            x = self.projection(x)
        positions = ops.expand_dims(ops.arange(ops.shape(ids)[1], dtype="int32"), 0)
        x = x + self.position_embedding(positions)
        x = x + self.segment_embedding(ops.cast(segment_ids, "int32"))
        return self.dropout(self.norm(x), training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return (*token_ids_shape, self.config.hidden_size)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "quantize_aware": self.quantize_aware}
