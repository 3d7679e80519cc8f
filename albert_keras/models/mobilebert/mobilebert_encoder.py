"""MobileBertEncoder: MobileBERT's backbone as a functional Keras model."""

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense
from albert_keras.layers.stack_hidden_states import StackHiddenStates
from albert_keras.models.backbone import Backbone
from albert_keras.models.mobilebert.mobilebert_block import MobileBertBlock
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.models.mobilebert.trigram_embedding import TrigramEmbedding


@keras.saving.register_keras_serializable(package="albert_keras")
class MobileBertPooler(keras.layers.Layer):
    """The first token's row: ``tanh(W h_0 + b)`` with ``classifier_activation``,
    else the raw row (the published checkpoint).

    Example:
    >>> tuple(MobileBertPooler(32, activate=False)(keras.ops.ones((2, 8, 32))).shape)
    (2, 32)
    """

    def __init__(self, hidden_size, activate=True, initializer_range=0.02,  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
                 quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size, self.activate = int(hidden_size), bool(activate)
        self.initializer_range, self.quantize_aware = initializer_range, bool(quantize_aware)
        self.dense = None
        if self.activate:
            self.dense = make_dense(
                hidden_size, self.quantize_aware, activation="tanh", dtype=self.dtype_policy,
                name="pooler_dense",
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range))

    def build(self, shape):
        if self.dense is not None:
            self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, sequence_output, training=False):
        first = sequence_output[:, 0, :]
        return first if self.dense is None else self.dense(first)

    def compute_output_shape(self, shape):
        return (shape[0], self.hidden_size)

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size,
                "activate": self.activate, "initializer_range": self.initializer_range,
                "quantize_aware": self.quantize_aware}


def _named(prefix, layer):
    """A dense layer's or a norm's variables under ``prefix``."""
    if hasattr(layer, "kernel"):
        return {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}
    return {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}


def _make_layers(config, mask_value, quantize_aware, dtype):
    """``(embeddings, blocks, pooler)``: one block per layer, or per group
    when ``num_hidden_groups`` shares them."""
    return (TrigramEmbedding(config, quantize_aware, dtype=dtype, name="embeddings"),
            [MobileBertBlock(config, mask_value, quantize_aware, dtype=dtype, name=f"block_{k}")
             for k in range(config.num_blocks)],
            MobileBertPooler(config.hidden_size, config.classifier_activation,
                             config.initializer_range, quantize_aware, dtype=dtype,
                             name="pooler"))


def _embed(embeddings, inputs, training=False, token_table=None):
    return embeddings(inputs["token_ids"], inputs["segment_ids"], training=training,
                      token_table=token_table)


def _forward(config, made, inputs, training=False, embedded=None, token_table=None,  # noqa: PLR0913 (the entry's keywords)
             query_positions=None, return_attention=False):
    """``MobileBertEncoder.encode`` on the layers ``made``."""
    embeddings, blocks, _ = made
    padding_mask = ops.cast(inputs["padding_mask"], "int32")
    x = _embed(embeddings, inputs, training, token_table) if embedded is None else embedded
    states, attention = [x], []
    for layer in range(config.num_hidden_layers):
        ran = blocks[config.block_of_layer(layer)](states[-1], padding_mask, training=training,
                                                    return_attention=return_attention)
        if return_attention:
            ran, probs = ran
            attention.append(probs)
        states.append(ran)
    sequence = states[-1]
    if query_positions is not None:
        rows = ops.cast(query_positions, "int32")[:, :, None]
        sequence = ops.take_along_axis(sequence, rows, axis=1)
        states = states[:-1] + [sequence]
    out = {"hidden_states": states, "sequence_output": sequence}
    if return_attention:
        out["attention"] = attention
    return out


@keras.saving.register_keras_serializable(package="albert_keras")
class MobileBertEncoder(Backbone):
    """MobileBERT: trigram embedding, bottleneck blocks, pooler.

    Inputs and outputs are ``AlbertEncoder``'s (``token_ids``,
    ``segment_ids``, ``padding_mask`` in; ``sequence_output``,
    ``pooled_output`` and optionally ``hidden_states`` out, H wide), so
    every pretrainer, task model, distiller and export takes it.

    Args:
        config: a ``MobileBertConfig`` or its dict.
        output_hidden_states: also return the embedding output and every
            layer's output, ``[B, L + 1, S, H]``.
        mask_value: the additive attention bias at padded keys.
        quantize_aware: every dense layer fake-quantizes (``QuantizedDense``),
            for quantization-aware training before an int8 export. The
            ``mobilebert_qat`` preset is the form made for it (relu6 and
            NoNorm: bounded activations, no statistics).
        cls_only: ``sequence_output`` is the ``[CLS]`` row only.
        dtype: a dtype policy such as ``"mixed_bfloat16"``.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> encoder = MobileBertEncoder(get_preset("mobilebert_tiny"))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> out = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["sequence_output"].shape)
    (1, 16, 512)
    """

    def __init__(self, config, output_hidden_states=False, mask_value=-10000.0,  # noqa: PLR0913 (the backbone's constructor keywords)
                 quantize_aware=False, cls_only=False, dtype=None, **kwargs):
        if isinstance(config, dict):
            config = MobileBertConfig.from_dict(config)
        if cls_only and output_hidden_states:
            raise ValueError("cls_only and output_hidden_states cannot be combined")
        made = _make_layers(config, mask_value, quantize_aware, dtype)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        # the graph from the layers themselves: on torch a layer cannot be an
        # attribute before Model.__init__ has run
        states = _forward(config, made, inputs)["hidden_states"]
        sequence = states[-1][:, :1] if cls_only else states[-1]
        outputs = {"sequence_output": sequence, "pooled_output": made[2](states[-1])}
        if output_hidden_states:
            outputs["hidden_states"] = StackHiddenStates(dtype=dtype,
                                                         name="hidden_states")(states)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self._set_layers(config, made)
        if dtype is not None:
            self.dtype_policy = dtype
        self.config, self.output_hidden_states = config, bool(output_hidden_states)
        self.mask_value, self.quantize_aware = float(mask_value), bool(quantize_aware)
        self.cls_only = bool(cls_only)

    def _set_layers(self, config, made):
        self.config = config
        self.embeddings, self.blocks, self.pooler = made

    # -- the backbone entry ------------------------------------------------------------

    def embed(self, inputs, training=False, token_table=None):
        """The embedding output ``[B, S, H]`` (``token_table``: a V x E word
        table read instead of the encoder's own)."""
        return _embed(self.embeddings, inputs, training, token_table)

    def encode(self, inputs, training=False, embedded=None, token_table=None,  # noqa: PLR0913 (the entry's keywords)
               query_positions=None, return_attention=False):
        """``hidden_states`` (the embedding output, then each layer's),
        ``sequence_output`` and, when asked, ``attention`` (each layer's
        ``[B, N, S, S]`` float32 probabilities). ``embedded`` replaces
        ``embed(inputs)``; with ``query_positions`` ``[B, Q]`` the
        sequence output is those rows (gathered from the full last layer:
        MobileBERT's last block has no cheaper path)."""
        return _forward(self.config, (self.embeddings, self.blocks, self.pooler), inputs,
                        training, embedded, token_table, query_positions, return_attention)

    def pool(self, rows, training=False, padding_mask=None):
        """The pooled output ``[B, H]`` of rows whose first is ``[CLS]``
        (``padding_mask`` is not read: the first row alone is pooled)."""
        return self.pooler(rows, training=training)

    def variables_by_depth(self):
        """``{variable path: depth}``: 0 the embeddings, ``i + 1`` layer
        ``i``'s block (a shared block at the deepest layer that runs it)."""
        depth = {v.path: 0 for v in self.embeddings.trainable_variables}
        for layer in range(self.config.num_hidden_layers):
            block = self.blocks[self.config.block_of_layer(layer)]
            depth.update({v.path: layer + 1 for v in block.trainable_variables})
        return depth

    def checkpoint_variables(self):
        """``{stable name: variable}``, what checkpoint converters map
        (``embeddings/...``, ``block_{k}/...``, ``pooler/...``)."""
        emb = self.embeddings
        out = {"embeddings/word": emb.token_embedding.embeddings,
               "embeddings/position": emb.position_embedding.embeddings,
               "embeddings/segment": emb.segment_embedding.embeddings,
               **_named("embeddings/norm", emb.norm)}
        if emb.projection is not None:
            out.update(_named("embeddings/projection", emb.projection))
        for k, block in enumerate(self.blocks):
            parts = {"query": block.query, "key": block.key, "value": block.value,
                     "attention_output": block.attention_output,
                     "attention_norm": block.attention_norm,
                     "output_ffn/intermediate": block.output_ffn.intermediate,
                     "output_ffn/output": block.output_ffn.output_dense,
                     "output_ffn/norm": block.output_ffn.norm}
            for j, ffn in enumerate(block.ffns):
                parts.update({f"ffn_{j}/intermediate": ffn.intermediate,
                              f"ffn_{j}/output": ffn.output_dense, f"ffn_{j}/norm": ffn.norm})
            if block.output_bottleneck is not None:
                parts.update(output_bottleneck=block.output_bottleneck,
                             output_norm=block.output_norm)
            for name, bottleneck in (("input_bottleneck", block.input_bottleneck),
                                     ("shared_bottleneck", block.shared_bottleneck)):
                if bottleneck is not None:
                    parts.update({f"{name}/dense": bottleneck.dense,
                                  f"{name}/norm": bottleneck.norm})
            for name, layer in parts.items():
                out.update(_named(f"block_{k}/{name}", layer))
        if self.pooler.dense is not None:
            out.update(_named("pooler", self.pooler.dense))
        return out

    @property
    def num_hidden_states(self):
        return self.config.num_hidden_layers + 1

    @property
    def token_embedding(self):
        """The V x E word table (the MLM decoder's first E rows)."""
        return self.embeddings.token_embedding

    @property
    def mlm_extra_width(self):
        """The MLM decoder's rows past the word table: H - E."""
        return self.config.hidden_size - self.config.embedding_size
