"""ModernBertEncoder: ModernBERT's (and Ettin's) backbone as a functional Keras model."""

import keras
from keras import ops

from albert_keras.layers.quantized_dense import make_dense
from albert_keras.layers.stack_hidden_states import StackHiddenStates
from albert_keras.models.backbone import Backbone
from albert_keras.models.modernbert.modernbert_block import ModernBertBlock
from albert_keras.models.modernbert.modernbert_block import activation
from albert_keras.models.modernbert.modernbert_block import layer_norm
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig


@keras.saving.register_keras_serializable(package="albert_keras")
class ModernBertEmbedding(keras.layers.Layer):
    """The token table, then a LayerNorm and dropout (no positions: the
    attention rotates queries and keys instead; no segments). A table
    narrower than H (``embedding_size``) is projected to H before the norm.

    Args:
        config: a ``ModernBertConfig`` or its dict.
        quantize_aware: fake-quantize the projection (QAT).

    Example:
    >>> layer = ModernBertEmbedding(ModernBertConfig(vocab_size=50, hidden_size=16,
    ...                                              num_attention_heads=2))
    >>> tuple(layer(keras.ops.ones((2, 5), "int32")).shape)
    (2, 5, 16)
    """

    def __init__(self, config, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        config = ModernBertConfig.of(config)
        self.config, self.quantize_aware = config, bool(quantize_aware)
        init = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
        self.token_embedding = keras.layers.Embedding(
            config.vocab_size, config.embedding_size, dtype=self.dtype_policy,
            embeddings_initializer=init, name="tok_embeddings")
        self.projection = None
        if config.embedding_size != config.hidden_size:
            self.projection = make_dense(config.hidden_size, self.quantize_aware, use_bias=False,
                                         kernel_initializer=init, dtype=self.dtype_policy,
                                         name="projection")
        self.norm = layer_norm(config, "norm", self.dtype_policy)
        self.drop = keras.layers.Dropout(config.embedding_dropout, dtype=self.dtype_policy)

    def build(self, shape):
        self.token_embedding.build(shape)
        if self.projection is not None:
            self.projection.build((None, self.config.embedding_size))
        self.norm.build((*shape, self.config.hidden_size))
        self.built = True

    def call(self, token_ids, training=False, token_table=None):
        rows = (self.token_embedding(token_ids) if token_table is None
                else ops.take(token_table, token_ids, axis=0))
        if self.projection is not None:
            rows = self.projection(rows)
        return self.drop(self.norm(rows), training=training)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "quantize_aware": self.quantize_aware}


@keras.saving.register_keras_serializable(package="albert_keras")
class ModernBertHead(keras.layers.Layer):
    """HF's ``ModernBertPredictionHead`` on the pooled rows: ``norm(act(W h))``,
    where ``h`` is the first row (``classifier_pooling`` ``cls``) or the mean
    of the real rows (``mean``): what the sentence and choice heads read.

    Args:
        config: a ``ModernBertConfig`` or its dict.
        quantize_aware: fake-quantize the dense layer (QAT).

    Example:
    >>> head = ModernBertHead(ModernBertConfig(hidden_size=16, num_attention_heads=2))
    >>> tuple(head(keras.ops.ones((2, 5, 16))).shape)
    (2, 16)
    """

    def __init__(self, config, quantize_aware=False, **kwargs):
        super().__init__(**kwargs)
        config = ModernBertConfig.of(config)
        self.config, self.quantize_aware = config, bool(quantize_aware)
        self.dense = make_dense(
            config.hidden_size, self.quantize_aware, use_bias=config.classifier_bias,
            dtype=self.dtype_policy, kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=config.initializer_range), name="dense")
        self.norm = layer_norm(config, "norm", self.dtype_policy)

    def build(self, shape):
        self.dense.build((None, self.config.hidden_size))
        self.norm.build((None, self.config.hidden_size))
        self.built = True

    def call(self, rows, training=False, every_row=False, padding_mask=None):
        """The head on the pooled rows ``[B, H]``, or on ``every_row``
        ``[B, S, H]`` (what HF's token and span classes put before their
        classifier). ``padding_mask`` ``[B, S]``: the rows a mean reads (all
        of them when None, as transformers without an attention mask)."""
        if every_row:
            pooled = rows
        elif self.config.classifier_pooling == "mean":
            pooled = masked_mean(rows, padding_mask)
        else:
            pooled = rows[:, 0, :]
        return self.norm(activation(self.config.classifier_activation)(self.dense(pooled)))

    def compute_output_spec(self, rows, training=False, every_row=False, padding_mask=None):
        shape = tuple(rows.shape) if every_row else (rows.shape[0], self.config.hidden_size)
        return keras.KerasTensor(shape, dtype=self.compute_dtype)

    def get_config(self):
        return {**super().get_config(), "config": self.config.to_dict(),
                "quantize_aware": self.quantize_aware}


def masked_mean(rows, padding_mask=None):
    """The mean of ``rows`` ``[B, S, H]`` over the positions where
    ``padding_mask`` is 1 (transformers' ``classifier_pooling: mean``).

    Example:
    >>> rows = keras.ops.convert_to_tensor([[[1.0], [3.0], [9.0]]])
    >>> float(masked_mean(rows, keras.ops.convert_to_tensor([[1, 1, 0]]))[0, 0])
    2.0
    """
    if padding_mask is None:
        return ops.mean(rows, axis=1)
    weights = ops.cast(padding_mask, rows.dtype)[:, :, None]
    return ops.sum(rows * weights, axis=1) / ops.sum(weights, axis=1)


def _named(prefix, layer):
    """A dense layer's or a norm's variables under ``prefix`` (those it has)."""
    names = ("kernel", "bias") if hasattr(layer, "kernel") else ("gamma", "beta")
    return {f"{prefix}/{name}": getattr(layer, name) for name in names
            if getattr(layer, name, None) is not None}


def _make_layers(config, mask_value, dtype, quantize_aware):
    qat = bool(quantize_aware)
    if config.share_layers:  # one block, run at every layer (layer 1's: with its attn_norm)
        shared = ModernBertBlock(config, 1, mask_value, qat, dtype=dtype, name="shared_layer")
        blocks = [shared] * config.num_hidden_layers
    else:
        blocks = [ModernBertBlock(config, k, mask_value, qat, dtype=dtype, name=f"layer_{k}")
                  for k in range(config.num_hidden_layers)]
    return (ModernBertEmbedding(config, qat, dtype=dtype, name="embeddings"), blocks,
            layer_norm(config, "final_norm", dtype),
            ModernBertHead(config, qat, dtype=dtype, name="head"))


def _forward(made, inputs, training=False, embedded=None, token_table=None,  # noqa: PLR0913 (the entry's keywords)
             query_positions=None, return_attention=False):
    """The encoder's pass: ``hidden_states`` (the embedding output and each
    block's, the last after the final norm), ``sequence_output`` and, asked
    for, each block's attention probabilities."""
    embeddings, blocks, final_norm, _ = made
    padding_mask = ops.cast(inputs["padding_mask"], "int32")
    x = (embeddings(inputs["token_ids"], training=training, token_table=token_table)
         if embedded is None else embedded)
    states, attention = [x], []
    for k, block in enumerate(blocks):
        ran = block(states[-1], padding_mask, training=training,
                    return_attention=return_attention, layer=k)
        if return_attention:
            ran, probs = ran
            attention.append(probs)
        states.append(ran)
    # the last state is after the final norm, as transformers collects it
    # (and as every family's last state is its sequence output)
    states[-1] = sequence = final_norm(states[-1])
    if query_positions is not None:
        rows = ops.cast(query_positions, "int32")[:, :, None]
        sequence = ops.take_along_axis(sequence, rows, axis=1)
        states[-1] = sequence
    out = {"hidden_states": states, "sequence_output": sequence}
    if return_attention:
        out["attention"] = attention
    return out


@keras.saving.register_keras_serializable(package="albert_keras")
class ModernBertEncoder(Backbone):
    """ModernBERT: a normed token table, pre-norm blocks of rotary
    attention (full, or in a sliding window, per ``layer_types``) and a
    GeGLU, a final norm; the pooled output is the prediction head on the
    first row.

    Inputs and outputs are every family's (``token_ids``, ``segment_ids``
    (read by none of its layers), ``padding_mask`` in; ``sequence_output``,
    ``pooled_output`` and optionally ``hidden_states`` out).

    Args:
        config: a ``ModernBertConfig`` or its dict.
        output_hidden_states: also return ``[B, L + 1, S, H]``: the
            embedding output and each block's (the last after the final
            norm, as transformers gives them).
        mask_value: the additive attention bias at keys a query may not see.
        quantize_aware: fake-quantize every dense projection (QAT: the
            attention's ``Wqkv`` and ``Wo``, the GeGLU's ``Wi`` and ``Wo``,
            the head's dense layer and a lite table's projection).
        cls_only: ``sequence_output`` is the first row only.
        dtype: a dtype policy such as ``"mixed_bfloat16"``.

    Example:
    >>> encoder = ModernBertEncoder(ModernBertConfig(
    ...     vocab_size=100, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
    ...     num_attention_heads=4, local_attention=4))
    >>> ids = keras.ops.ones((1, 16), "int32")
    >>> out = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["sequence_output"].shape), tuple(out["pooled_output"].shape)
    ((1, 16, 32), (1, 32))
    """

    # the pooled output is transformers' prediction head (dense, activation,
    # norm) over the first row or the mean (``classifier_pooling``): the
    # masked LM's transform too, so masked-LM pretraining trains it
    masked_lm_trains_pooler = True

    def __init__(self, config, output_hidden_states=False, mask_value=-10000.0,  # noqa: PLR0913 (the backbone's constructor keywords)
                 quantize_aware=False, cls_only=False, dtype=None, **kwargs):
        config = ModernBertConfig.of(config)
        if cls_only and output_hidden_states:
            raise ValueError("cls_only and output_hidden_states cannot be combined")
        if cls_only and config.classifier_pooling == "mean":
            raise ValueError("cls_only: classifier_pooling 'mean' reads every row")
        made = _make_layers(config, mask_value, dtype, quantize_aware)
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        ran = _forward(made, inputs)
        sequence = ran["sequence_output"]
        outputs = {"sequence_output": sequence[:, :1] if cls_only else sequence,
                   "pooled_output": made[3](sequence, padding_mask=inputs["padding_mask"])}
        if output_hidden_states:
            outputs["hidden_states"] = StackHiddenStates(dtype=dtype, name="hidden_states")(
                ran["hidden_states"])
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config = config
        self.embeddings, self.blocks, self.final_norm, self.pooler = made
        if dtype is not None:
            self.dtype_policy = dtype
        self.output_hidden_states, self.mask_value = bool(output_hidden_states), float(mask_value)
        self.quantize_aware, self.cls_only = bool(quantize_aware), bool(cls_only)

    # -- the backbone entry ------------------------------------------------------------

    def _made(self):
        return self.embeddings, self.blocks, self.final_norm, self.pooler

    def embed(self, inputs, training=False, token_table=None):
        """The embedding output ``[B, S, H]`` (``token_table``: a V x H word
        table read instead of the encoder's own)."""
        return self.embeddings(inputs["token_ids"], training=training, token_table=token_table)

    def encode(self, inputs, training=False, embedded=None, token_table=None,  # noqa: PLR0913 (the entry's keywords)
               query_positions=None, return_attention=False):
        """``hidden_states``, ``sequence_output`` and, asked for,
        ``attention``; ``embedded`` replaces ``embed(inputs)``; with
        ``query_positions`` ``[B, Q]`` the sequence output is those rows."""
        return _forward(self._made(), inputs, training, embedded, token_table,
                        query_positions, return_attention)

    def pool(self, rows, training=False, padding_mask=None):
        """The prediction head on the first of ``rows``, or on their mean
        over ``padding_mask`` (``classifier_pooling``): ``[B, H]``."""
        return self.pooler(rows, training=training, padding_mask=padding_mask)

    @property
    def pools_first_row(self):
        """Whether the pooled output reads the first row alone (``cls``
        pooling), so an export may compute only that row."""
        return self.config.classifier_pooling == "cls"

    def variables_by_depth(self):
        """``{variable path: depth}``: 0 the embeddings, ``i + 1`` block ``i``
        (the final norm and the head with the last block; a shared block at
        the deepest layer that runs it)."""
        depth = {v.path: 0 for v in self.embeddings.trainable_variables}
        for k, block in enumerate(self.blocks):
            depth.update({v.path: k + 1 for v in block.trainable_variables})
        last = len(self.blocks)
        for layer in (self.final_norm, self.pooler):
            depth.update({v.path: last for v in layer.trainable_variables})
        return depth

    def checkpoint_variables(self):
        """``{stable name: variable}``, what checkpoint converters map:
        ``embeddings/tok_embeddings``, ``embeddings/norm/gamma``,
        ``layer_{k}/attn/Wqkv/kernel``, ``layer_{k}/mlp/Wi/kernel``,
        ``final_norm/gamma``, ``pooler/dense/kernel`` (HF's prediction
        head) ... (HF's module names; a bias or norm bias only where the
        config has it; a lite encoder's projection ``embeddings/projection``
        and its shared block once, as ``layer_0``)."""
        out = {"embeddings/tok_embeddings": self.embeddings.token_embedding.embeddings,
               **_named("embeddings/norm", self.embeddings.norm),
               **_named("final_norm", self.final_norm),
               **_named("pooler/dense", self.pooler.dense),
               **_named("pooler/norm", self.pooler.norm)}
        if self.embeddings.projection is not None:
            out.update(_named("embeddings/projection", self.embeddings.projection))
        blocks = self.blocks[:1] if self.config.share_layers else self.blocks
        for k, block in enumerate(blocks):
            parts = {"attn/Wqkv": block.attention.qkv, "attn/Wo": block.attention.output_dense,
                     "mlp_norm": block.mlp_norm, "mlp/Wi": block.mlp.wi, "mlp/Wo": block.mlp.wo}
            if block.attention_norm is not None:
                parts["attn_norm"] = block.attention_norm
            for name, layer in parts.items():
                out.update(_named(f"layer_{k}/{name}", layer))
        return out

    def token_rows(self, sequence):
        """What token and span heads read: HF's prediction head on every row."""
        return self.pooler(sequence, every_row=True)

    def mlm_head_options(self):
        """HF's ``ModernBertPredictionHead`` before the tied decoder: the
        pooler itself (one ``head`` in transformers, which a classifier
        fine-tuned from a masked LM starts from). A factorized table is
        narrower than the pooler: its head maps H to the table's width
        itself, as ALBERT's."""
        config = self.config
        if config.embedding_size != config.hidden_size:
            return {"activation": config.classifier_activation, "layer_norm_eps": config.norm_eps,
                    "dense_bias": config.classifier_bias, "norm_bias": config.norm_bias,
                    "output_bias": config.decoder_bias}
        return {"transform": self.pooler, "output_bias": config.decoder_bias}

    @property
    def num_hidden_states(self):
        return self.config.num_hidden_layers + 1

    @property
    def token_embedding(self):
        """The V x H word table (the masked-LM decoder is tied to it)."""
        return self.embeddings.token_embedding
