"""Batches cut to the lengths their rows have, in a handful of fixed shapes.

Real texts are short and uneven (review snippets average 27 pieces), and a
batch padded to ``sequence_length`` (128) spends most of its step on
padding. Each row goes to the shortest of a few bucket lengths that holds
it; a batch is cut to its bucket's length. The lengths are few (about
``log2(sequence_length)`` of them: 16, 32, 48, 64, 96, 128, 192, 256, ...),
so few graphs are traced, and each batch has a static shape.

Padding is inert (the attention mask drops it, and every output a task
reads at a padded position is ignored), so a row gives the same outputs cut
to any length that holds it. The tests check that on mixed lengths.

Training: every epoch the rows of each bucket are shuffled (seeded by the
run's seed and the epoch) and batched; the rows left over from a bucket go
on to the next longer one (padding them further changes nothing), so only
the last bucket's remainder is dropped, as an unbucketed epoch drops its
last partial batch. The batches are then shuffled. Prediction keeps the
input order of its outputs; on TensorFlow, whose prediction graph takes any
shape, each batch is cut to its longest row rather than to its bucket's
length (a single text runs at its own length, as in HF's pipeline).
"""

import weakref

import numpy as np

from albert_keras.precision import batch_precision
from albert_keras.precision import float32_trace
from albert_keras.precision import machine_precision

# The bucket lengths up to the sequence length: 16 apart up to 64, then
# about 1.5x apart, so no row is padded by more than half its bucket. Each
# length is a graph to compile where a graph has fixed shapes (JAX, a TPU).
_LENGTHS = (16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)
# Where one graph takes every length (TensorFlow's train and predict steps
# are traced once with the length unknown), buckets cost nothing to compile:
# 8 apart up to 64, then at most 1/8 apart. On short uneven text (reviews
# averaging 30 pieces) this pads 11% of the real tokens against 25%.
_FINE_LENGTHS = (tuple(range(8, 64, 8)) + tuple(range(64, 256, 16))
                 + tuple(range(256, 512, 32)) + tuple(range(512, 1024, 64))
                 + tuple(range(1024, 8193, 128)))


def bucket_lengths(sequence_length, any_length=False):
    """The bucket lengths of ``sequence_length`` (itself the last).

    Args:
        sequence_length: the inputs' full length.
        any_length: the model runs every length in one graph (TensorFlow):
            the finer grid, 8 apart for short rows.

    Example:
    >>> bucket_lengths(128)
    (16, 32, 48, 64, 96, 128)
    >>> bucket_lengths(100)
    (16, 32, 48, 64, 96, 100)
    >>> bucket_lengths(100, any_length=True)
    (8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 100)
    """
    grid = _FINE_LENGTHS if any_length else _LENGTHS
    return tuple(n for n in grid if n < sequence_length) + (int(sequence_length),)


def one_graph_for_every_length():
    """Whether the backend traces one train and predict graph for batches of
    any length (TensorFlow), so more bucket lengths compile nothing more."""
    import keras

    return keras.backend.backend() == "tensorflow"


def row_lengths(x):
    """Each row's real length: its last real token + 1 (of every choice, for
    ``[N, choices, S]`` inputs), at least 1."""
    mask = np.asarray(x["padding_mask"]) != 0
    positions = np.arange(1, mask.shape[-1] + 1)
    last = np.max(np.where(mask, positions, 0), axis=-1)
    while last.ndim > 1:
        last = last.max(-1)
    return np.maximum(last, 1)


def plan_batches(lengths, batch_size, buckets, rng=None, drop_remainder=False):
    """``[(rows, length)]``: which rows each batch holds and its length.

    Args:
        lengths: each row's real length.
        batch_size: rows per batch.
        buckets: the bucket lengths (ascending; the last holds every row).
        rng: a numpy ``Generator`` to shuffle the rows of each bucket and
            the batches (None: the rows of each bucket by length, so a
            batch cut to its longest row pads little; batches by length).
        drop_remainder: drop the last bucket's partial batch (training),
            else it is a smaller batch.

    Example:
    >>> plan_batches(np.array([5, 40, 7, 9]), 2, (16, 64))
    [(array([0, 2]), 16), (array([3, 1]), 64)]
    """
    lengths = np.asarray(lengths)
    if lengths.size and lengths.max() > buckets[-1]:
        raise ValueError(f"a row of {lengths.max()} tokens is longer than the last bucket "
                         f"{buckets[-1]}")
    which = np.searchsorted(np.asarray(buckets), lengths)  # the shortest that holds it
    batches, carry = [], np.zeros(0, np.int64)
    for index, length in enumerate(buckets):
        rows = np.flatnonzero(which == index)
        rows = (rng.permutation(rows) if rng is not None
                else rows[np.argsort(lengths[rows], kind="stable")])
        pool = np.concatenate([carry, rows])
        whole = len(pool) - len(pool) % batch_size
        batches += [(pool[i:i + batch_size], int(length)) for i in range(0, whole, batch_size)]
        carry = pool[whole:]
    if len(carry) and not drop_remainder:
        batches.append((carry, int(buckets[-1])))
    if rng is not None:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def cut(arrays, rows, length, sequence_length, per_token):
    """The ``rows`` of a dict of arrays, their sequence axis cut to ``length``.

    Args:
        arrays: ``{name: array}`` (features, targets or weights), or None.
        rows: the row indices.
        length: the batch's length.
        sequence_length: the arrays' full length.
        per_token: the names whose axis after the rows' (and choices') is the
            sequence: the encoder inputs, and per-token targets; ``"a/b"``
            names ``b`` inside the nested dict ``a`` alone.
    """
    if arrays is None:
        return None
    out = {}
    for name, value in arrays.items():
        if isinstance(value, dict):  # nested targets (a distiller's teacher and labels)
            out[name] = cut(value, rows, length, sequence_length, _inside(per_token, name))
            continue
        value = np.asarray(value)[rows]
        if name in per_token:
            axis = _sequence_axis(value, sequence_length)
            value = value[(slice(None),) * axis + (slice(0, length),)]
        out[name] = value
    return out


def _inside(per_token, name):
    """The per-token names that apply inside the nested dict ``name``: the
    plain ones, and ``name/...``'s rest."""
    return ({n for n in per_token if "/" not in n}
            | {n.split("/", 1)[1] for n in per_token if n.startswith(name + "/")})


def _sequence_axis(value, sequence_length):
    """The sequence axis of a per-token array: the first after the rows that
    is ``sequence_length`` long (``[N, S]``, ``[N, S, K]``, and ``[N, C, S]``
    with fewer choices than tokens)."""
    for axis in range(1, min(value.ndim, 3)):
        if value.shape[axis] == sequence_length:
            return axis
    raise ValueError(f"an array of shape {value.shape} has no axis of the sequence length "
                     f"{sequence_length}")


# The encoder inputs: cut along the sequence with every batch.
ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")
# What a per-token output holds at positions past a batch's length: a very
# low score, so no decoder (a QA span's top candidates, say) picks padding.
PAST_THE_ROW = -1e9


def bucketed_dataset(parts, batch_size, seed, per_token=ENCODER_INPUTS):
    """A shuffled training ``tf.data.Dataset`` of length-bucketed batches.

    Args:
        parts: ``(x, y)`` or ``(x, y, sample_weight)``, dicts of numpy arrays
            with ``x["padding_mask"]`` among them.
        batch_size: rows per batch; the last bucket's partial batch is
            dropped when there is at least one whole batch.
        seed: the run's seed: epoch ``e`` draws from ``(seed, e)``, so a
            seed repeats the run.
        per_token: the names cut along the sequence (the encoder inputs,
            and a tagger's per-token labels and weights).

    Example:
    >>> ds = bucketed_dataset((data.x, data.y), 32, seed=0)  # doctest: +SKIP
    """
    import itertools

    import tensorflow as tf

    x = parts[0]
    S = np.asarray(x["padding_mask"]).shape[-1]
    lengths, buckets = row_lengths(x), bucket_lengths(S, one_graph_for_every_length())
    drop = len(lengths) >= batch_size
    epochs = itertools.count()
    count = len(plan_batches(lengths, batch_size, buckets, None, drop))

    def batches():
        rng = np.random.default_rng([seed, next(epochs)])
        for rows, length in plan_batches(lengths, batch_size, buckets, rng, drop):
            yield tuple(cut(part, rows, length, S, per_token) for part in parts)

    signature = tuple(_signature(part, per_token, S, tf) for part in parts)
    ds = tf.data.Dataset.from_generator(batches, output_signature=signature)
    return ds.apply(tf.data.experimental.assert_cardinality(count)).prefetch(2)


def _signature(arrays, per_token, sequence_length, tf):
    """The ``TensorSpec`` dict of a (nested) dict of arrays: any number of rows,
    and any length along the sequence for the per-token ones."""
    return {name: _signature(v, _inside(per_token, name), sequence_length, tf)
            if isinstance(v, dict)
            else _spec(np.asarray(v), name in per_token, sequence_length, tf)
            for name, v in arrays.items()}


def _spec(value, per_token, sequence_length, tf):
    shape = [None, *value.shape[1:]]
    if per_token:
        shape[_sequence_axis(value, sequence_length)] = None
    return tf.TensorSpec(shape, tf.as_dtype(value.dtype))


def along_the_sequence(model):
    """The names of ``model``'s outputs that run along the sequence: those
    whose symbolic shape has no fixed size after the rows. A model that
    wraps another (a distiller around its student) is asked through it."""
    inner = getattr(model, "student", model)
    return {name for name, t in inner.output.items() if len(t.shape) > 1 and t.shape[1] is None}


_RUNNERS = weakref.WeakKeyDictionary()


def _batch_runner(model, x, precision="auto", tokens=None):
    """``(run, any_length)``: ``model`` on one batch, as numpy, and whether
    a batch may have any length. On TensorFlow, one graph traced for any
    number of rows and any length (Keras' ``predict_on_batch`` traces a
    graph for the first shapes it sees, then relaxes and traces again:
    seconds each for a base-sized model), so a batch is cut to its longest
    row, as HF's pipeline pads it; a model that computes in bf16 also gets
    a float32 graph of the same weights for calls whose largest batch
    (``tokens`` pieces) ``batch_precision`` sends there (a few short rows:
    one text at a time). A call decides once, so the remainder of a large
    call does not trace a second graph. Elsewhere ``predict_on_batch``,
    which compiles per shape, at the bucket lengths."""
    if not one_graph_for_every_length():
        return model.predict_on_batch, False
    graphs = _RUNNERS.setdefault(model, {})
    policy = model.dtype_policy.name
    name = batch_precision(precision, policy, tokens or 0, machine_precision())
    if name not in graphs:
        graphs[name] = _traced(model, x, in_float32=name != policy)
    graph = graphs[name]
    return (lambda batch: {k: v.numpy() for k, v in graph(batch).items()}), True


def _traced(model, x, in_float32):
    """``model``'s prediction graph for batches like ``x``'s of any shape;
    ``in_float32``: traced with its layers computing in float32."""
    import tensorflow as tf

    signature = {name: tf.TensorSpec([None] * np.ndim(value), tf.as_dtype(
        np.asarray(value).dtype)) for name, value in x.items()}
    owner = weakref.ref(model)  # the cache must not keep the model alive
    graph = tf.function(lambda batch: owner()(batch, training=False),
                        input_signature=[signature])
    if in_float32:
        with float32_trace(model):
            graph.get_concrete_function()  # traced now; later calls reuse it
    return graph


def predict_in_buckets(model, x, batch_size=64, precision="auto", runner=None):
    """``model``'s outputs on the rows of ``x``, batched by length, in row order.

    Outputs that run along the sequence (a tagger's logits, a QA model's
    start and end logits: those whose symbolic shape has no fixed length
    after the rows) come back ``sequence_length`` long, ``PAST_THE_ROW``
    beyond the batch each row was run in.

    Args:
        model: a functional Keras model on the encoder inputs.
        x: the encoder inputs, numpy arrays of one sequence length.
        batch_size: rows per batch.
        precision: ``float32`` runs a bf16 model's batches in float32;
            ``auto`` lets ``albert_keras.precision.batch_precision`` choose
            by the call's largest batch (a few short rows in float32 on a
            CPU).
        runner: runs a batch instead of ``model`` (a ``LiteRTRunner``:
            any shape, float32).

    Example:
    >>> outputs = predict_in_buckets(classifier, data.x)  # doctest: +SKIP
    >>> outputs["logits"].shape  # doctest: +SKIP
    (1500, 2)
    """
    if not isinstance(x, dict) or "padding_mask" not in x or not len(x["padding_mask"]):
        # not the encoder's inputs (or no rows): nothing to cut
        return model.predict(x, batch_size=batch_size, verbose=0)
    S = np.asarray(x["padding_mask"]).shape[-1]
    # [rows, choices, S] inputs (multiple choice) have no per-token outputs
    along = along_the_sequence(model) if np.ndim(x["padding_mask"]) == 2 else set()
    lengths = row_lengths(x)
    plan = plan_batches(lengths, batch_size, bucket_lengths(S))
    n, results = len(lengths), {}
    per_row = int(np.prod(np.shape(x["padding_mask"])[1:-1]))  # choices of a row, or 1
    largest = max(len(rows) * int(lengths[rows].max()) for rows, _ in plan) * per_row
    run, any_length = ((runner, True) if runner is not None else
                       _batch_runner(model, x, precision, largest))
    for rows, length in plan:
        if any_length:  # one graph for every shape: no padding to the bucket's length
            length = int(lengths[rows].max())
        outputs = run(cut(x, rows, length, S, ENCODER_INPUTS))
        for name, value in outputs.items():
            value = np.asarray(value)
            if name not in results:
                shape = (n, S, *value.shape[2:]) if name in along else (n, *value.shape[1:])
                fill = PAST_THE_ROW if name in along else 0
                results[name] = np.full(shape, fill, value.dtype)
            if name in along:
                results[name][rows, :length] = value
            else:
                results[name][rows] = value
    return results
