"""ALiBi: a fixed per-head attention penalty that grows with distance.

Press et al. 2022 ("Train Short, Test Long") add ``-slope_h * distance`` to
head ``h``'s attention scores. Their models are causal (distance ``i - j``);
a bidirectional encoder such as MosaicBERT uses ``|i - j|``, as we do,
except at position 0 (``[CLS]``), which we leave global. The
penalty has no weights, so a model keeps ALBERT's parameters and files; it
only changes what the attention computes. We use it because it gives every
head a preference for nearby tokens from the first step: measured on the
built-in corpus, the model then learns to use its neighbours within the
small-corpus run's budget instead of sitting at the frequent-token plateau.

No library ships an encoder-side ALiBi for Keras, so the two functions are
written here; the slopes follow the paper's reference code and are checked
against HF transformers' BLOOM implementation in the tests.
"""

import math

import numpy as np
from keras import ops

POSITION_BIASES = ("none", "alibi")


def alibi_slopes(num_heads, scale=1.0):
    """The paper's per-head slopes, a geometric sequence starting at 2^(-8/n).

    For a head count that is not a power of two, the slopes of the nearest
    lower power of two are followed by every other slope of the next one
    (the reference implementation's rule).

    Args:
        num_heads: the number of attention heads.
        scale: multiplies every slope. The paper's slopes (``1``) were
            chosen for language models reading a thousand tokens and more;
            a larger scale makes every head more local.

    Returns:
        A float32 numpy array of ``num_heads`` slopes.

    Example:
    >>> alibi_slopes(4).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]
    """
    def power_of_two(n):
        start = 2.0 ** (-(2.0 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(num_heads).is_integer():
        slopes = power_of_two(num_heads)
    else:
        lower = 2 ** math.floor(math.log2(num_heads))
        slopes = power_of_two(lower) + list(alibi_slopes(2 * lower)[0::2][: num_heads - lower])
    return np.asarray(slopes, dtype="float32") * np.float32(scale)


def alibi_bias(num_heads, num_keys, query_positions=None, scale=1.0, global_first=True):
    """The additive score bias ``-slope_h * |i - j|``, float32.

    Position 0 (the ``[CLS]`` slot) is exempt by default: it attends to
    every token, and every token to it, with no penalty. The pooled output
    and every classifier read that row, and with the penalty it would see
    mostly the start of the text, which cost a classifier most of what it
    learns from the rest (docs/reports/alibi-and-plateau.md).

    Args:
        num_heads: attention heads.
        num_keys: the key length ``S`` (a tensor or int).
        query_positions: optional ``[B, Q]`` positions of the query rows
            (the rows a block computes when it skips the others); by
            default the queries are all ``S`` positions.
        scale: multiplies the slopes (see ``alibi_slopes``).
        global_first: exempt position 0 (``False`` gives the paper's bias
            on every pair, as MosaicBERT uses it).

    Returns:
        ``[1, N, S, S]``, or ``[B, N, Q, S]`` with ``query_positions``.

    Example:
    >>> tuple(alibi_bias(4, 6).shape)
    (1, 4, 6, 6)
    """
    keys = ops.arange(num_keys, dtype="int32")
    if query_positions is None:
        queries = keys[None, :]
    else:
        queries = ops.cast(query_positions, "int32")
    distance = ops.cast(ops.abs(keys[None, None, :] - queries[:, :, None]), "float32")
    if global_first:
        first = ops.logical_or(ops.equal(queries, 0)[:, :, None],
                               ops.equal(keys, 0)[None, None, :])
        distance = ops.where(first, 0.0, distance)
    slopes = ops.convert_to_tensor(alibi_slopes(num_heads, scale))
    return -slopes[None, :, None, None] * distance[:, None, :, :]
