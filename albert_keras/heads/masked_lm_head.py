"""The masked-LM head with a decoder tied to the word-embedding table."""

import keras
from keras import ops

from albert_keras.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="albert_keras")
class MaskedLMHead(keras.layers.Layer):
    """Gathers masked positions and scores them against the vocabulary.

    ``gather -> dense H -> E (act) -> LayerNorm -> x @ word_table^T + bias``.
    Gathering first means the E x V product runs only on the P masked
    positions, not on all S tokens. Logits are float32 under mixed precision.

    Args:
        token_embedding: the encoder's ``keras.layers.Embedding`` (V x E)
            whose table is the tied decoder. When the head is rebuilt alone
            from its config, a fresh embedding is created.
        activation: a ``hidden_act`` name.
        layer_norm_eps: LayerNorm epsilon.
        initializer_range: stddev of the truncated-normal initializer.
        extra_output_width: MobileBERT's decoder: the transform is
            ``E + extra`` wide and the output table has ``extra`` more
            columns of its own (``extra_output``, V x extra) after the tied
            word table (0: ALBERT's and BERT's head).
        dense_bias: whether the transform's dense layer has a bias
            (ModernBERT's ``classifier_bias`` switch).
        norm_bias: whether its LayerNorm has one (``norm_bias``).
        output_bias: whether the decoder has one (``decoder_bias``).
        transform: a layer of the encoder to use as the transform, called
            as ``transform(rows, every_row=True)`` (ModernBERT's prediction
            head, which is also its pooler, as in transformers), instead of
            a dense layer and a LayerNorm of the head's own. Not kept in the
            config: the model that owns the head passes it again.

    Example:
    >>> table = keras.layers.Embedding(100, 16)
    >>> head = MaskedLMHead(table)
    >>> seq = keras.ops.ones((2, 8, 32))
    >>> positions = keras.ops.zeros((2, 3), "int32")
    >>> tuple(head(seq, positions).shape)
    (2, 3, 100)
    """

    def __init__(  # noqa: PLR0913 (a Keras layer's arguments mirror get_config)
        self,
        token_embedding,
        activation="gelu_new",
        layer_norm_eps=1e-12,
        initializer_range=0.02,
        extra_output_width=0,
        dense_bias=True,
        norm_bias=True,
        output_bias=True,
        transform=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(token_embedding, dict):
            token_embedding = keras.saving.deserialize_keras_object(token_embedding)
        self.token_embedding = token_embedding
        self.activation = activation
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.vocab_size = token_embedding.input_dim
        self.embedding_size = token_embedding.output_dim
        self.extra_output_width = int(extra_output_width)
        self.extra_output = None
        self.dense_bias, self.norm_bias = bool(dense_bias), bool(norm_bias)
        self.has_output_bias = bool(output_bias)
        self.output_bias = None
        self.transform = transform
        self.dense = self.layer_norm = None
        if transform is None:
            self._own_transform(activation, initializer_range, layer_norm_eps)

    def _own_transform(self, activation, initializer_range, layer_norm_eps):
        self.dense = keras.layers.Dense(
            self.embedding_size + self.extra_output_width,
            activation=get_activation(activation),
            use_bias=self.dense_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range
            ),
            dtype=self.dtype_policy,
            name="transform_dense",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, center=self.norm_bias, dtype=self.dtype_policy,
            name="transform_layer_norm"
        )

    def build(self, sequence_output_shape, masked_positions_shape=None):
        if not self.token_embedding.built:
            self.token_embedding.build((None, None))
        if self.dense is not None:
            self.dense.build(sequence_output_shape)
            self.layer_norm.build(tuple(sequence_output_shape[:-1]) + (self.dense.units,))
        if self.extra_output_width:
            self.extra_output = self.add_weight(
                name="extra_output", shape=(self.vocab_size, self.extra_output_width),
                initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range))
        if self.has_output_bias:
            self.output_bias = self.add_weight(
                name="output_bias",
                shape=(self.vocab_size,),
                initializer="zeros",
            )
        self.built = True

    def call(self, sequence_output, masked_positions=None, token_table=None):
        """Logits ``[B, P, V]`` at ``masked_positions`` (``[B, P]``).

        With ``masked_positions=None``, ``sequence_output`` already holds
        just the ``P`` masked rows (``EncoderPretrainer`` computes only those).
        ``token_table`` (``V x E``) replaces the tied table for this call: a
        model whose word table is a sum of two (DeBERTaV3's sharing) passes
        the sum.
        """
        x = sequence_output
        if masked_positions is not None:
            positions = ops.cast(masked_positions, "int32")
            x = ops.take_along_axis(x, positions[:, :, None], axis=1)
        x = self.layer_norm(self.dense(x)) if self.transform is None else \
            self.transform(x, every_row=True)
        if token_table is None:
            token_table = self.token_embedding.embeddings
        table = ops.cast(token_table, x.dtype)
        if self.extra_output is not None:
            table = ops.concatenate([table, ops.cast(self.extra_output, x.dtype)], axis=-1)
        logits = ops.cast(ops.matmul(x, ops.transpose(table)), "float32")
        if self.output_bias is None:
            return logits
        return logits + ops.cast(self.output_bias, "float32")

    def copy_own_weights(self, other):
        """Takes ``other``'s transform and output bias, not the word table
        (that belongs to the encoder it decodes with; ``set_weights`` would
        copy it too). Raises ``ValueError`` when the widths differ."""
        if self.dense is not None:  # a shared transform is the encoder's
            self.dense.set_weights(other.dense.get_weights())
            self.layer_norm.set_weights(other.layer_norm.get_weights())
        if self.output_bias is not None:
            self.output_bias.assign(other.output_bias)
        if self.extra_output is not None:
            self.extra_output.assign(other.extra_output)

    def compute_output_shape(self, sequence_output_shape, masked_positions_shape=None):
        rows = masked_positions_shape or sequence_output_shape
        return (rows[0], rows[1], self.vocab_size)

    def compute_output_spec(self, sequence_output, masked_positions=None):
        positions_shape = None if masked_positions is None else masked_positions.shape
        return keras.KerasTensor(
            self.compute_output_shape(sequence_output.shape, positions_shape),
            dtype="float32",
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "token_embedding": keras.saving.serialize_keras_object(
                    self.token_embedding
                ),
                "activation": self.activation,
                "layer_norm_eps": self.layer_norm_eps,
                "initializer_range": self.initializer_range,
                "extra_output_width": self.extra_output_width,
                "dense_bias": self.dense_bias,
                "norm_bias": self.norm_bias,
                "output_bias": self.has_output_bias,
            }
        )
        return config
