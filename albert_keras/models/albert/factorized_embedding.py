"""ALBERT's factorized embedding: V x E tables, then an E -> H projection."""

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense


@keras.saving.register_keras_serializable(package="albert_keras")
class FactorizedEmbedding(keras.layers.Layer):
    """Word + segment + position embeddings of width E, projected to H.

    ``word (V x E) + segment (T x E) + position (P x E) -> LayerNorm ->
    dropout -> embedding_hidden_mapping_in (E -> H)``. The projection exists
    only when ``embedding_size != hidden_size``, as in the original code, so
    with E = H this is BERT's embedding.

    Args:
        vocab_size: V.
        embedding_size: E.
        hidden_size: H.
        max_position_embeddings: P, the longest accepted sequence.
        type_vocab_size: T, the number of segments.
        dropout: dropout rate after the LayerNorm.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.
        quantize_aware: fake-quantize the dense projections (QAT).
        position_biased_input: add the position table to the input
            (DeBERTa-v3 does not: its attention sees relative positions).
            The table is kept either way; DeBERTa's enhanced mask decoder
            reads it.
        mask_padding: multiply the normalised embeddings by the padding mask
            (DeBERTa does; it changes only rows at padded positions).

    ``type_vocab_size=0`` leaves out the segment table (DeBERTa-v3).

    Example:
    >>> layer = FactorizedEmbedding(100, 16, 32, 64)
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> tuple(layer(ids, keras.ops.zeros_like(ids)).shape)
    (2, 8, 32)
    """

    def __init__(  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
        self,
        vocab_size,
        embedding_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=2,
        dropout=0.0,
        layer_norm_eps=1e-12,
        initializer_range=0.02,
        quantize_aware=False,
        position_biased_input=True,
        mask_padding=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.position_biased_input = bool(position_biased_input)
        self.mask_padding = bool(mask_padding)
        self.vocab_size = vocab_size
        self.embedding_size = embedding_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout = dropout
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range

        def init():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        self.token_embedding = keras.layers.Embedding(
            vocab_size,
            embedding_size,
            embeddings_initializer=init(),
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.segment_embedding = None
        if type_vocab_size > 0:
            self.segment_embedding = keras.layers.Embedding(
                type_vocab_size,
                embedding_size,
                embeddings_initializer=init(),
                dtype=self.dtype_policy,
                name="segment_embedding",
            )
        self.position_embedding = keras.layers.Embedding(
            max_position_embeddings,
            embedding_size,
            embeddings_initializer=init(),
            dtype=self.dtype_policy,
            name="position_embedding",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps,
            dtype=self.dtype_policy,
            name="embeddings_layer_norm",
        )
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="embeddings_dropout"
        )
        self.quantize_aware = bool(quantize_aware)
        self.projection = None
        if embedding_size != hidden_size:
            self.projection = make_dense(
                hidden_size,
                quantize_aware=self.quantize_aware,
                kernel_initializer=init(),
                dtype=self.dtype_policy,
                name="embedding_projection",
            )

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        self.position_embedding.build(token_ids_shape)
        self.layer_norm.build(tuple(token_ids_shape) + (self.embedding_size,))
        if self.projection is not None:
            self.projection.build(tuple(token_ids_shape) + (self.embedding_size,))
        self.built = True

    def _check_length(self, token_ids):
        static_len = token_ids.shape[1]
        if static_len is not None:
            if static_len > self.max_position_embeddings:
                raise ValueError(
                    f"token_ids has sequence length {static_len}, longer than "
                    f"max_position_embeddings={self.max_position_embeddings}"
                )
            return token_ids
        # Only TensorFlow graphs have an unknown length here (JAX traces and
        # torch run with static shapes), so only they need a runtime check.
        import tensorflow as tf

        seq_len = ops.shape(token_ids)[1]
        with tf.control_dependencies(
            [
                tf.debugging.assert_less_equal(
                    seq_len,
                    self.max_position_embeddings,
                    message=(
                        "token_ids is longer than max_position_embeddings="
                        f"{self.max_position_embeddings}"
                    ),
                )
            ]
        ):
            return tf.identity(token_ids)

    def call(self, token_ids, segment_ids, training=False, token_table=None,
             padding_mask=None):
        """Embeds ``token_ids``; ``token_table`` (V x E) replaces the layer's
        own word table, for models that share one between two encoders
        (ELECTRA's generator and discriminator). ``padding_mask`` is read
        with ``mask_padding``."""
        token_ids = self._check_length(token_ids)
        seq_len = ops.shape(token_ids)[1]
        positions = self.position_embedding.embeddings[:seq_len]
        if token_table is None:
            # Looked up with 1-D ids and reshaped back: TFLite then has a
            # GATHER with a 1-D index, which the int4 export turns into an
            # EMBEDDING_LOOKUP (the op the LiteRT quantizer stores in 4 bits).
            words = self.token_embedding(ops.reshape(token_ids, (-1,)))
            words = ops.reshape(words, tuple(ops.shape(token_ids)) + (self.embedding_size,))
        else:
            words = ops.take(ops.cast(token_table, self.compute_dtype),
                             ops.cast(token_ids, "int32"), axis=0)
        x = words
        if self.segment_embedding is not None:
            x = x + self.segment_embedding(segment_ids)
        if self.position_biased_input:
            x = x + ops.cast(positions, x.dtype)[None, :, :]
        x = self.layer_norm(x)
        if self.mask_padding and padding_mask is not None:
            x = x * ops.cast(padding_mask, x.dtype)[:, :, None]
        x = self.dropout_layer(x, training=training)
        if self.projection is not None:
            x = self.projection(x, training=training)
        return x

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "embedding_size": self.embedding_size,
                "hidden_size": self.hidden_size,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": self.type_vocab_size,
                "dropout": self.dropout,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware,
                "position_biased_input": self.position_biased_input,
                "mask_padding": self.mask_padding,
            }
        )
        return config
