"""AlbertEncoder: the ALBERT (or BERT) backbone as a functional Keras model."""

import keras
from keras import ops

from albert_keras.families import config_from_fields
from albert_keras.families import family_of
from albert_keras.layers.activations import get_activation
from albert_keras.layers.quantized_dense import make_dense
from albert_keras.layers.stack_hidden_states import StackHiddenStates
from albert_keras.models.albert.albert_config import AlbertConfig
from albert_keras.models.albert.encoder_variables import albert_variables
from albert_keras.models.albert.factorized_embedding import FactorizedEmbedding
from albert_keras.models.albert.shared_encoder import SharedEncoder
from albert_keras.models.backbone import Backbone


@keras.saving.register_keras_serializable(package="albert_keras")
class TokenPooler(keras.layers.Layer):
    """``tanh(W h_0 + b)``: the pooled output from the first token.

    Args:
        hidden_size: H.
        initializer_range: stddev of the truncated-normal initializer.
        quantize_aware: fake-quantize the dense layer (QAT).
        activation: ``tanh`` (ALBERT, BERT) or another config activation
            name (DeBERTa's ``ContextPooler``: exact ``gelu``).

    Example:
    >>> tuple(TokenPooler(32)(keras.ops.ones((2, 8, 32))).shape)
    (2, 32)
    """

    def __init__(self, hidden_size, initializer_range=0.02, quantize_aware=False,
                 activation="tanh", **kwargs):
        super().__init__(**kwargs)
        self.activation = activation
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.quantize_aware = bool(quantize_aware)
        self.dense = make_dense(
            hidden_size,
            quantize_aware=self.quantize_aware,
            activation=get_activation(activation),
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range
            ),
            dtype=self.dtype_policy,
            name="pooler_dense",
        )

    def build(self, sequence_shape):
        self.dense.build((sequence_shape[0], sequence_shape[-1]))
        self.built = True

    def call(self, sequence_output, training=False):
        return self.dense(sequence_output[:, 0, :], training=training)

    def compute_output_shape(self, sequence_shape):
        return (sequence_shape[0], self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware,
                "activation": self.activation,
            }
        )
        return config


def _layers(config, quantize_aware, mask_value, dtype):
    """``(embeddings, transformer, pooler)`` of an encoder with ``config``."""
    embeddings = FactorizedEmbedding(
        vocab_size=config.vocab_size,
        embedding_size=config.embedding_size,
        hidden_size=config.hidden_size,
        max_position_embeddings=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        dropout=config.hidden_dropout_prob,
        layer_norm_eps=config.layer_norm_eps,
        initializer_range=config.initializer_range,
        quantize_aware=quantize_aware,
        position_biased_input=config.adds_absolute_positions,
        mask_padding=config.relative_options() is not None,
        dtype=dtype,
        name="embeddings",
    )
    transformer = SharedEncoder(
        num_layers=config.num_hidden_layers,
        num_groups=config.num_hidden_groups,
        inner_group_num=config.inner_group_num,
        sharing=config.sharing,
        hidden_size=config.hidden_size,
        num_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size,
        activation=config.hidden_act,
        dropout=config.hidden_dropout_prob,
        attention_dropout=config.attention_probs_dropout_prob,
        layer_norm_eps=config.layer_norm_eps,
        initializer_range=config.initializer_range,
        quantize_aware=quantize_aware,
        mask_value=mask_value,
        position_bias=config.position_bias,
        alibi_slope_scale=config.alibi_slope_scale,
        relative=_relative(config),
        dtype=dtype,
        name="transformer",
    )
    pooler = TokenPooler(
        config.hidden_size,
        initializer_range=config.initializer_range,
        quantize_aware=quantize_aware,
        activation=config.pooler_hidden_act,
        dtype=dtype,
        name="pooler",
    )
    return embeddings, transformer, pooler


def _relative(config):
    """The stack's ``relative`` options: the config's, with the layers its
    family declares for them (its ``attention``), or None."""
    options = config.relative_options()
    if options is None:
        return None
    return {**options, "layers": family_of(config).attention}


@keras.saving.register_keras_serializable(package="albert_keras")
class AlbertEncoder(Backbone):
    """ALBERT encoder: factorized embedding, shared transformer, pooler.

    Inputs (dict, int32): ``token_ids``, ``segment_ids``, ``padding_mask``
    (1 for real tokens), each ``[B, S]`` with any ``S`` up to
    ``max_position_embeddings``.
    Outputs (dict): ``sequence_output`` ``[B, S, H]``, ``pooled_output``
    ``[B, H]`` and, with ``output_hidden_states=True``, ``hidden_states``
    ``[B, L * inner_group_num + 1, S, H]`` (index 0 is the projected
    embedding output, index ``i`` the output of block ``i``; with one block
    per group, of layer ``i``) so features can come from any layer.

    Args:
        config: an ``AlbertConfig`` or its dict.
        output_hidden_states: also return every layer's output.
        mask_value: additive attention bias at padded positions (-10000 as
            the original; a bounded value like -120 suits int8 export).
        quantize_aware: fake-quantize every dense projection, for
            quantization-aware training (see ``QuantizedDense``).
        cls_only: the last block computes only the first (``[CLS]``) row,
            so ``sequence_output`` is ``[B, 1, H]``. The pooled output is
            the same as without it, with the last block's query, output and
            FFN work cut from ``S`` rows to one. The export turns it on for
            the models that read only the pooled output (classifier,
            multiple choice, an embedder with ``pooling="pooled"``).
        dtype: a dtype policy such as ``"mixed_bfloat16"``.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> encoder = AlbertEncoder(get_preset("albert_tiny"))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> out = encoder({"token_ids": ids, "segment_ids": 0 * ids,
    ...                "padding_mask": ids})
    >>> tuple(out["pooled_output"].shape)
    (1, 256)
    """

    def __init__(
        self,
        config,
        output_hidden_states=False,
        mask_value=-10000.0,
        quantize_aware=False,
        cls_only=False,
        dtype=None,
        **kwargs,
    ):
        if isinstance(config, dict):
            # a DeBERTa config comes back as DebertaConfig, the registered
            # class that holds its relative fields
            config = config_from_fields(AlbertConfig, config)
        if cls_only and output_hidden_states:
            raise ValueError("cls_only and output_hidden_states cannot be combined: "
                             "the last hidden state would hold only the [CLS] row")
        embeddings, transformer, pooler = _layers(config, quantize_aware, mask_value, dtype)

        # -- functional graph ----------------------------------------------------
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        x = embeddings(inputs["token_ids"], inputs["segment_ids"],
                       padding_mask=inputs["padding_mask"])
        # cls_only: query position 0 in every row of the batch.
        first = ops.zeros_like(inputs["token_ids"][:, :1]) if cls_only else None
        states = transformer(x, inputs["padding_mask"], query_positions=first)
        sequence_output = states[-1]
        outputs = {
            "sequence_output": sequence_output,
            "pooled_output": pooler(sequence_output),
        }
        if output_hidden_states:
            outputs["hidden_states"] = StackHiddenStates(
                dtype=dtype, name="hidden_states"
            )(states)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # A functional Model ignores a dtype argument; keep the policy the
        # layers were built with, so get_config (and .keras files) carry it.
        if dtype is not None:
            self.dtype_policy = dtype

        # -- attributes ----------------------------------------------------------
        self.config = config
        self.output_hidden_states = output_hidden_states
        self.mask_value = float(mask_value)
        self.quantize_aware = bool(quantize_aware)
        self.cls_only = bool(cls_only)
        self.embeddings = embeddings
        self.transformer = transformer
        self.pooler = pooler

    # -- the backbone entry: every caller's way into the layers ----------------------

    def embed(self, inputs, training=False, token_table=None):
        """The embedding output ``[B, S, H]``: what the first block reads.

        Args:
            inputs: the three encoder inputs (a dict of ``[B, S]`` ints).
            training: dropout on or off.
            token_table: a V x E word table to read instead of the
                encoder's own (ELECTRA's generator and discriminator share
                one this way).

        Returns:
            The normalised, masked and projected embeddings.
        """
        return self.embeddings(ops.cast(inputs["token_ids"], "int32"),
                               ops.cast(inputs["segment_ids"], "int32"), training=training,
                               token_table=token_table, padding_mask=inputs["padding_mask"])

    def encode(self, inputs, training=False, embedded=None, token_table=None,  # noqa: PLR0913 (the entry's choices, each a keyword)
               query_positions=None, return_attention=False):
        """Runs the encoder's blocks and returns what callers read of them.

        Pretrainers, task models, distillers and fine-tuning techniques go
        through this (and ``embed``, ``pool``, ``position_rows``,
        ``decode_rows``), never through the layers themselves, so a family
        with other blocks needs only its own encoder.

        Args:
            inputs: the three encoder inputs (a dict of ``[B, S]`` ints).
            training: dropout on or off.
            embedded: ``[B, S, H]`` embeddings to run instead of
                ``embed(inputs)`` (a perturbed copy, for adversarial
                fine-tuning); ``inputs`` then gives the padding mask only.
            token_table: as ``embed``'s.
            query_positions: ``[B, Q]``: the last block computes only these
                rows, so ``sequence_output`` is ``[B, Q, H]`` (the same
                numbers as gathering them from the full output).
            return_attention: also return every block's attention
                probabilities ``[B, N, S, S]`` (float32), in block order.

        Returns:
            A dict: ``hidden_states`` (the embedding output, then each
            block's output), ``sequence_output`` (the last of them) and,
            when asked, ``attention``.

        Example:
        >>> from albert_keras.presets import get_preset
        >>> encoder = AlbertEncoder(get_preset("albert_tiny"))
        >>> ids = keras.ops.ones((2, 8), "int32")
        >>> out = encoder.encode({"token_ids": ids, "segment_ids": 0 * ids,
        ...                       "padding_mask": ids}, return_attention=True)
        >>> len(out["hidden_states"]), len(out["attention"]), tuple(out["sequence_output"].shape)
        (5, 4, (2, 8, 256))
        """
        padding_mask = ops.cast(inputs["padding_mask"], "int32")
        x = self.embed(inputs, training, token_table) if embedded is None else embedded
        ran = self.transformer(x, padding_mask, training=training,
                               query_positions=query_positions,
                               return_attention=return_attention)
        states, attention = ran if return_attention else (ran, None)
        out = {"hidden_states": states, "sequence_output": states[-1]}
        if return_attention:
            out["attention"] = attention
        return out

    def pool(self, rows, training=False, padding_mask=None):
        """The pooled output ``[B, H]`` of sequence rows whose first is ``[CLS]``
        (``padding_mask`` is not read: the first row alone is pooled)."""
        return self.pooler(rows, training=training)

    def position_rows(self, positions, training=False):
        """The absolute position embeddings at ``positions`` ``[B, P]``, in
        the hidden width (DeBERTa's enhanced mask decoder adds them)."""
        # Through the Embedding layer, not its variable: in a functional graph a
        # variable read outside a layer would be frozen at its value of the moment.
        z = self.embeddings.position_embedding(ops.cast(positions, "int32"))
        if self.embeddings.projection is not None:
            z = self.embeddings.projection(z, training=training)
        return z

    def decode_rows(self, hidden, padding_mask, query_states, query_positions, training=False):  # noqa: PLR0913 (the decoder's inputs)
        """The last block once more, on ``query_states`` ``[B, Q, H]`` over
        the keys and values of ``hidden`` ``[B, S, H]`` (DeBERTa's
        enhanced mask decoder); ``[B, Q, H]``."""
        return self.transformer.decode(hidden, padding_mask, query_states, query_positions,
                                       training=training)

    def variables_by_depth(self):
        """``{variable path: depth}`` of every trainable variable but the
        pooler's: 0 the embeddings, ``i + 1`` what layer ``i`` runs.

        A module shared by several layers (ALBERT's sharing, DeBERTa's
        relative table) is at the deepest layer that runs it. Layer-wise
        rate decay and layout maps read this, so no variable falls through.
        """
        transformer = self.transformer
        depth = {v.path: 0 for v in self.embeddings.trainable_variables}
        deepest = {"attention": {}, "ffn": {}}
        for layer, blocks in enumerate(transformer.plan):
            for attention, ffn in blocks:
                deepest["attention"][attention] = layer + 1
                deepest["ffn"][ffn] = layer + 1
        for kind, modules in (("attention", transformer.attention_blocks),
                              ("ffn", transformer.ffn_blocks)):
            for index, module in enumerate(modules):
                depth.update({v.path: deepest[kind][index] for v in module.trainable_variables})
        # what every layer reads (the relative table): at the top one
        rest = [v for v in transformer.trainable_variables if v.path not in depth]
        depth.update({v.path: transformer.num_layers for v in rest})
        return depth

    def checkpoint_variables(self):
        """``{canonical name: variable}``, what checkpoint converters map
        (``embeddings/word``, ``attention_3/query/kernel``, ``pooler/kernel``
        ...: ``albert_keras.models.albert.weight_names``)."""
        return albert_variables(self)

    @property
    def num_hidden_states(self):
        """How many states ``encode`` returns: the embedding output, then
        one per block application."""
        return self.config.num_hidden_layers * self.config.inner_group_num + 1

    @property
    def token_embedding(self):
        """The V x E word-embedding layer (the MLM decoder is tied to it)."""
        return self.embeddings.token_embedding
