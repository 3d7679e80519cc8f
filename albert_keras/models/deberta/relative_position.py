"""DeBERTa's relative positions: log buckets, table indices, the shared table.

He et al. 2021 ("DeBERTa: Decoding-enhanced BERT with Disentangled
Attention") give each attention head a view of the distance ``q - k``
between a query and a key through one table of relative-position
embeddings, shared by every layer. DeBERTa-v2/v3 bucket the distances:
exact up to ``buckets // 2``, log-spaced beyond, up to ``max_position``.

Written with ``keras.ops`` so the same code runs on the three backends and
converts to TFLite builtins; the numbers follow HF transformers'
``make_log_bucket_position`` (float32, the same order of operations, so the
bucket boundaries agree), which the tests check against transformers.
"""

import math

import keras
from keras import ops


def log_bucket_position(relative, buckets, max_position):
    """Buckets signed distances: exact near zero, log-spaced far away.

    Args:
        relative: int tensor of distances ``q - k``.
        buckets: the bucket count (``position_buckets``); distances with
            ``|d| <= buckets // 2`` keep their value.
        max_position: the distance that maps to the last bucket.

    Returns:
        An int32 tensor of the same shape, in ``[-buckets + 1, buckets - 1]``
        for distances up to ``max_position``.

    Example:
    >>> d = keras.ops.convert_to_tensor([0, 3, -5, 40, -100], "int32")
    >>> keras.ops.convert_to_numpy(log_bucket_position(d, 8, 64)).tolist()
    [0, 3, -5, 7, -8]
    """
    relative = ops.cast(relative, "int32")
    mid = buckets // 2
    sign = ops.sign(relative)
    inside = ops.logical_and(ops.less(relative, mid), ops.greater(relative, -mid))
    abs_pos = ops.where(inside, mid - 1, ops.abs(relative))
    # float32 and HF's order of operations: log(|d| / mid) / log((max - 1) / mid)
    # * (mid - 1), so a distance at a bucket edge lands where transformers puts it.
    ratio = ops.cast(abs_pos, "float32") / float(mid)
    denominator = ops.cast(math.log((max_position - 1) / mid), "float32")
    log_pos = ops.ceil(ops.log(ratio) / denominator * float(mid - 1)) + float(mid)
    log_pos = ops.cast(log_pos, "int32")
    return ops.where(ops.less_equal(abs_pos, mid), relative, log_pos * sign)


def relative_index(num_keys, span, buckets=-1, max_position=-1, query_positions=None):
    """Rows of the relative table for each query/key pair.

    ``clamp(bucket(q - k) + span, 0, 2 * span - 1)``: the index both of
    DeBERTa's terms read (content-to-position at ``[q, k]``, and
    position-to-content through the key's row).

    Args:
        num_keys: the key length ``S`` (an int or a scalar tensor).
        span: half the table's rows.
        buckets: ``position_buckets`` (-1: no bucketing).
        max_position: the distance bucketing ends at.
        query_positions: optional ``[B, Q]`` positions of the query rows;
            by default every position ``0..S-1``.

    Returns:
        int32 ``[1, S, S]``, or ``[B, Q, S]`` with ``query_positions``.

    Example:
    >>> index = relative_index(4, span=2)
    >>> keras.ops.convert_to_numpy(index)[0].tolist()
    [[2, 1, 0, 0], [3, 2, 1, 0], [3, 3, 2, 1], [3, 3, 3, 2]]
    """
    keys = ops.arange(num_keys, dtype="int32")
    if query_positions is None:
        queries = keys[None, :]
    else:
        queries = ops.cast(query_positions, "int32")
    relative = queries[:, :, None] - keys[None, None, :]
    if buckets > 0 and max_position > 0:
        relative = log_bucket_position(relative, buckets, max_position)
    return ops.clip(relative + span, 0, 2 * span - 1)


@keras.saving.register_keras_serializable(package="albert_keras")
class RelativeEmbedding(keras.layers.Layer):
    """The ``[2 * span, H]`` table of relative-position embeddings.

    One table serves every layer (HF: ``encoder.rel_embeddings``), optionally
    layer-normalised before use (``norm_rel_ebd="layer_norm"``, HF:
    ``encoder.LayerNorm``). Each attention block projects it with its own
    (or its content) query and key projections.

    Args:
        span: half the number of rows (``position_buckets``, or
            ``max_relative_positions`` without buckets).
        hidden_size: H.
        layer_norm: normalise the table before use.
        layer_norm_eps: that LayerNorm's epsilon.
        initializer_range: stddev of the truncated-normal initializer.

    Example:
    >>> table = RelativeEmbedding(4, 8, layer_norm=True)
    >>> tuple(table.table().shape)
    (8, 8)
    """

    def __init__(self, span, hidden_size, layer_norm=False, layer_norm_eps=1e-7,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.span = int(span)
        self.hidden_size = int(hidden_size)
        self.layer_norm = bool(layer_norm)
        self.layer_norm_eps = layer_norm_eps
        self.initializer_range = initializer_range
        self.norm = None
        if self.layer_norm:
            self.norm = keras.layers.LayerNormalization(
                epsilon=layer_norm_eps, dtype=self.dtype_policy, name="rel_layer_norm")

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(2 * self.span, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(stddev=self.initializer_range),
        )
        if self.norm is not None:
            self.norm.build((2 * self.span, self.hidden_size))
        self.built = True

    def table(self):
        """The ``[2 * span, H]`` table as the attention reads it (normalised
        when ``layer_norm``), in the compute dtype."""
        if not self.built:
            self.build()
        table = ops.cast(self.embeddings, self.compute_dtype)
        return self.norm(table) if self.norm is not None else table

    def call(self, inputs=None):
        """Returns ``table()``; any input is ignored (the table depends on
        no input)."""
        return self.table()

    def compute_output_shape(self, input_shape=None):
        return (2 * self.span, self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update({
            "span": self.span,
            "hidden_size": self.hidden_size,
            "layer_norm": self.layer_norm,
            "layer_norm_eps": self.layer_norm_eps,
            "initializer_range": self.initializer_range,
        })
        return config
