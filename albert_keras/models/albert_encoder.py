"""AlbertEncoder: the ALBERT (or BERT) backbone as a functional Keras model."""

import keras
from keras import ops

from albert_keras.config import AlbertConfig
from albert_keras.layers.activations import get_activation
from albert_keras.layers.factorized_embedding import FactorizedEmbedding
from albert_keras.layers.quantized_dense import make_dense
from albert_keras.layers.shared_encoder import SharedEncoder


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


@keras.saving.register_keras_serializable(package="albert_keras")
class StackHiddenStates(keras.layers.Layer):
    """Stacks the hidden states into ``[B, num_states, S, H]``."""

    def call(self, states):
        return ops.stack(states, axis=1)

    def compute_output_shape(self, shapes):
        first = shapes[0]
        return (first[0], len(shapes)) + tuple(first[1:])


def _relative_options(config):
    """The ``SharedEncoder(relative=...)`` dict of a DeBERTa-style config."""
    if not config.relative_attention:
        return None
    return {
        "span": config.relative_span,
        "position_buckets": config.position_buckets,
        "max_relative_positions": config.max_relative_distance,
        "pos_att_type": config.pos_att_type,
        "share_att_key": config.share_att_key,
        "norm_rel_ebd": config.norm_rel_ebd,
    }


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
        position_biased_input=config.position_biased_input,
        mask_padding=config.relative_attention,
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
        relative=_relative_options(config),
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


@keras.saving.register_keras_serializable(package="albert_keras")
class AlbertEncoder(keras.Model):
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
            config = AlbertConfig.from_dict(config)
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
        self.tokenizer_asset = None

    # -- the tokenizer it reads ------------------------------------------------------

    @property
    def tokenizer(self):
        """The host-side tokenizer of this encoder's vocabulary, or None.

        Set by pretraining, fine-tuning and checkpoint loading (or by you);
        a ``.keras`` file carries its files, so a bare model file knows its
        special ids and how its text is cut.
        """
        asset = self.tokenizer_asset
        return asset.tokenizer() if asset is not None else None

    @tokenizer.setter
    def tokenizer(self, tokenizer):
        from albert_keras.text.tokenizer_asset import TokenizerAsset

        if tokenizer is not None and tokenizer.vocabulary_size > self.config.vocab_size:
            raise ValueError(f"the tokenizer ({tokenizer.source}) has "
                             f"{tokenizer.vocabulary_size} pieces; the encoder's vocab_size "
                             f"is {self.config.vocab_size}")
        self.tokenizer_asset = None if tokenizer is None else TokenizerAsset.of(tokenizer)

    def save_assets(self, dir_path):
        if self.tokenizer_asset is not None:
            self.tokenizer_asset.write(dir_path)

    def load_assets(self, dir_path):
        from albert_keras.text.tokenizer_asset import TokenizerAsset

        # files saved before encoders carried a tokenizer have no folder here
        self.tokenizer_asset = TokenizerAsset.read(dir_path)

    @property
    def token_embedding(self):
        """The V x E word-embedding layer (the MLM decoder is tied to it)."""
        return self.embeddings.token_embedding

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "config": self.config.to_dict(),
            "output_hidden_states": self.output_hidden_states,
            "mask_value": self.mask_value,
            "quantize_aware": self.quantize_aware,
            "cls_only": self.cls_only,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)
