"""DeBERTa's disentangled attention as a post-LN attention block."""

import keras
from keras import ops

from albert_keras.layers.attention_block import AttentionBlock
from albert_keras.layers.quantized_dense import make_dense
from albert_keras.models.deberta.deberta_config import POSITION_ATTENTION_TERMS
from albert_keras.models.deberta.relative_position import RelativeEmbedding
from albert_keras.models.deberta.relative_position import relative_index


def _gather_rows(scores, index):
    """``out[..., i, j] = scores[..., i, index[..., i, j]]``.

    ``scores`` is ``[B, N, T, R]``; ``index`` is ``[B|1, T, S]`` and is
    broadcast over heads and batch. The leading dimensions are merged into
    one first: TensorFlow 2.21's ``tf.gather`` with three batch dimensions
    crashed the process (a segmentation fault in training) when one of them
    was 1, as a one-head generator's is. With one batch dimension TFLite
    runs it as one builtin GATHER; the other backends use
    ``take_along_axis``.
    """
    # one shape op per tensor: on TensorFlow each ``ops.shape`` call traces a
    # Shape op and a slice (with three constants) per dynamic dimension
    batch, heads, rows, table = ops.shape(scores)
    keys = ops.shape(index)[-1]
    # expand_dims, not index[:, None]: TFLite's converter cannot lower a
    # new-axis slice of a tensor whose length is left open (LiteRTRunner's)
    index = ops.broadcast_to(ops.expand_dims(index, 1), (batch, heads, rows, keys))
    flat_scores = ops.reshape(scores, (-1, table))
    flat_index = ops.reshape(index, (-1, keys))
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        out = tf.gather(flat_scores, flat_index, batch_dims=1)
    else:
        out = ops.take_along_axis(flat_scores, flat_index, axis=-1)
    return ops.reshape(out, (batch, heads, rows, keys))


def _rows_in_use(table, index):
    """``(table, index)`` cut to the rows of the table ``index`` reads.

    The index holds at most ``2S - 1`` distances for ``S`` pieces; the cut
    keeps the band from its smallest to its largest row (bucketing is
    monotone, so that band is about ``2S - 1`` rows around the middle) of a
    table of ``2 * position_buckets`` rows (512 in DeBERTa-v3). Every row is projected by every layer and scored against
    every query, so for short texts the full table was most of the work
    (HF's model projects all of it too). Each row is projected and scored
    alone, so the cut changes no number; the table's dropout ran before
    the cut, so training draws the same mask. On TensorFlow only: the
    rows read depend on the index's values, a shape JAX's and torch's
    compilers need fixed; there the whole table is used, as before.
    """
    if keras.backend.backend() != "tensorflow":
        return table, index
    low = ops.min(index)
    table = ops.slice(table, (low, 0), (ops.max(index) - low + 1, ops.shape(table)[1]))
    return table, index - low


@keras.saving.register_keras_serializable(package="albert_keras")
class DisentangledAttentionBlock(AttentionBlock):
    """Self-attention with DeBERTa's relative terms, dropout, ``LayerNorm``.

    Scores are ``(q_i k_j + q_i kr_{d(i,j)} + k_j qr_{d(i,j)}) / sqrt(D * f)``
    where ``kr``/``qr`` are the shared relative table projected by this
    block (its ``pos_key``/``pos_query`` projections, or its content ``key``
    and ``query`` ones with ``share_att_key``), ``d(i, j)`` is the bucketed
    distance ``i - j`` and ``f`` is one plus the number of relative terms.
    The terms are HF's ``c2p`` (content-to-position) and ``p2c``
    (position-to-content); the weights and their names map one to one to HF
    ``DebertaV2Model``. The scores are always computed explicitly (no fused
    kernel takes an arbitrary bias), in float32.

    Args:
        hidden_size: H.
        num_heads: attention heads.
        span: half the rows of the relative table.
        position_buckets: bucket count (-1: none).
        max_relative_positions: the distance where bucketing ends.
        pos_att_type: ``"c2p|p2c"``, ``"c2p"``, ``"p2c"`` or ``""``.
        share_att_key: project positions with the content projections.
        **kwargs: ``AttentionBlock``'s arguments (dropout, eps, ...);
            ``dropout`` also drops the relative table, as in DeBERTa.

    Example:
    >>> from albert_keras.models.deberta.relative_position import RelativeEmbedding
    >>> block = DisentangledAttentionBlock(32, 4, span=8, position_buckets=8,
    ...                                    max_relative_positions=64)
    >>> table = RelativeEmbedding(8, 32).table()
    >>> x = keras.ops.ones((2, 6, 32))
    >>> tuple(block(x, keras.ops.ones((2, 6), "int32"), rel_embeddings=table).shape)
    (2, 6, 32)
    """

    def __init__(self, hidden_size, num_heads, span, position_buckets=-1,  # noqa: PLR0913 (a layer constructor: its arguments mirror get_config)
                 max_relative_positions=512, pos_att_type="c2p|p2c",
                 share_att_key=False, **kwargs):
        if kwargs.get("position_bias", "none") != "none":
            raise ValueError("disentangled attention does not combine with position_bias")
        super().__init__(hidden_size, num_heads, **kwargs)
        self.span = int(span)
        self.position_buckets = int(position_buckets)
        self.max_relative_positions = int(max_relative_positions)
        self.pos_att_type = pos_att_type
        self.terms = tuple(t.strip() for t in pos_att_type.lower().split("|") if t.strip())
        unknown = set(self.terms) - set(POSITION_ATTENTION_TERMS)
        if unknown:
            raise ValueError(f"pos_att_type: unknown term {sorted(unknown)[0]!r}")
        self.share_att_key = bool(share_att_key)
        self.pos_key = self.pos_query = None
        if not self.share_att_key:
            if "c2p" in self.terms:
                self.pos_key = self._projection("pos_key")
            if "p2c" in self.terms:
                self.pos_query = self._projection("pos_query")
        self.table_dropout = keras.layers.Dropout(
            self.dropout, dtype=self.dtype_policy, name="rel_embeddings_dropout")

    def _projection(self, name):
        return make_dense(
            self.hidden_size, quantize_aware=self.quantize_aware,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range),
            dtype=self.dtype_policy, name=name)

    def build(self, x_shape, padding_mask_shape=None):
        super().build(x_shape)
        for layer in (self.pos_key, self.pos_query):
            if layer is not None:
                layer.build(x_shape)

    def _use_fused(self, training):
        return False

    def _score_scale(self):
        return 1.0 / (float(self.head_size) * (1 + len(self.terms))) ** 0.5

    def _heads(self, table):
        """``[2P, H]`` -> ``[N, 2P, D]``."""
        rows = ops.shape(table)[0]
        heads = ops.reshape(table, (rows, self.num_heads, self.head_size))
        return ops.transpose(heads, (1, 0, 2))

    @staticmethod
    def _against_table(x, table):
        """``x [B, N, T, D]`` scored against ``table [N, R, D]``: ``[B, N, T, R]``.

        One matmul per head over all ``B * T`` rows, with no broadcast batch
        dimension: TensorFlow 2.21's CPU BatchMatMul crashed the process (a
        segmentation fault) on ``[B, 1, T, D] x [1, 1, D, R]``, a one-head
        model's shapes.
        """
        batch, heads, rows, size = ops.shape(x)
        per_head = ops.reshape(ops.transpose(x, (1, 0, 2, 3)), (heads, batch * rows, size))
        scores = ops.matmul(per_head, ops.transpose(ops.cast(table, x.dtype), (0, 2, 1)))
        scores = ops.reshape(scores, (heads, batch, rows, ops.shape(table)[1]))
        return ops.transpose(scores, (1, 0, 2, 3))

    def _position_scores(self, q, k, query_positions, rel_embeddings, training):
        if not self.terms:
            return None
        if rel_embeddings is None:
            raise ValueError("DisentangledAttentionBlock needs rel_embeddings")
        table = self.table_dropout(rel_embeddings, training=training)
        index = relative_index(ops.shape(k)[2], self.span, self.position_buckets,
                               self.max_relative_positions, query_positions)
        table, index = _rows_in_use(table, index)
        scale = self._score_scale()
        scores = 0.0
        if "c2p" in self.terms:
            pos_key = self._heads((self.key if self.share_att_key else self.pos_key)(
                table, training=training))
            c2p = self._against_table(q, pos_key)
            scores = scores + _gather_rows(ops.cast(c2p, "float32"), index) * scale
        if "p2c" in self.terms:
            pos_query = self._heads((self.query if self.share_att_key else self.pos_query)(
                table, training=training))
            p2c = self._against_table(k, pos_query)
            # Row j of p2c belongs to key j; index^T picks, for each key, the
            # distance to every query. Transposed back to [.., T, S].
            gathered = _gather_rows(ops.cast(p2c, "float32"),
                                    ops.transpose(index, (0, 2, 1)))
            scores = scores + ops.transpose(gathered, (0, 1, 3, 2)) * scale
        return scores

    def get_config(self):
        config = super().get_config()
        config.update({
            "span": self.span,
            "position_buckets": self.position_buckets,
            "max_relative_positions": self.max_relative_positions,
            "pos_att_type": self.pos_att_type,
            "share_att_key": self.share_att_key,
        })
        return config


def stack_layers(options, hidden_size, common):
    """What ALBERT's shared stack builds to run DeBERTa's attention (the
    family's ``attention``): ``(block class, the block's extra keywords,
    the relative table every block reads)``.

    Args:
        options: the config's ``relative_options()``.
        hidden_size: H.
        common: the keywords every layer of the stack takes (``dropout``,
            ``layer_norm_eps``, ``initializer_range``, ``quantize_aware``,
            ``dtype``).

    Example:
    >>> from albert_keras.models.deberta.deberta_config import DebertaConfig
    >>> block, extra, table = stack_layers(DebertaConfig().relative_options(), 32,
    ...                                    {"layer_norm_eps": 1e-7, "initializer_range": 0.02})
    >>> block.__name__, extra["span"], table.name
    ('DisentangledAttentionBlock', 256, 'rel_embeddings')
    """
    extra = {k: options[k] for k in ("span", "position_buckets", "max_relative_positions",
                                      "pos_att_type", "share_att_key")}
    table = RelativeEmbedding(
        options["span"], hidden_size, layer_norm=options["norm_rel_ebd"] == "layer_norm",
        layer_norm_eps=common["layer_norm_eps"],
        initializer_range=common["initializer_range"], dtype=common.get("dtype"),
        name="rel_embeddings")
    return DisentangledAttentionBlock, extra, table
