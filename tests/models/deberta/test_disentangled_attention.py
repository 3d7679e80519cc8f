"""DeBERTa's relative positions and disentangled attention block."""

import keras
import numpy as np
import pytest

from albert_keras import AlbertEncoder
from albert_keras.config_dicts import ConfigError
from albert_keras.models.deberta.disentangled_attention import DisentangledAttentionBlock
from albert_keras.models.deberta.relative_position import RelativeEmbedding
from albert_keras.models.deberta.relative_position import log_bucket_position
from albert_keras.models.deberta.relative_position import relative_index
from tests.helpers import albert_config
from tests.helpers import run_layer_test
from tests.helpers import run_model_test

TABLE = np.random.default_rng(0).normal(size=(16, 32)).astype("float32")


@pytest.mark.parametrize("buckets, max_position", [(256, 512), (8, 64), (32, 128), (6, 20)])
def test_buckets_equal_transformers_for_every_distance(buckets, max_position):
    import torch
    from transformers.models.deberta_v2.modeling_deberta_v2 import make_log_bucket_position

    distances = np.arange(-700, 700)
    expected = make_log_bucket_position(torch.tensor(distances), buckets, max_position)
    ours = keras.ops.convert_to_numpy(log_bucket_position(distances, buckets, max_position))
    np.testing.assert_array_equal(ours, expected.long().numpy())


def test_index_of_chosen_query_rows_equals_the_full_index_at_those_rows():
    full = keras.ops.convert_to_numpy(relative_index(20, 8, 8, 64))[0]
    rows = np.array([[0, 5, 19], [3, 3, 7]], "int32")
    some = keras.ops.convert_to_numpy(relative_index(20, 8, 8, 64, query_positions=rows))
    np.testing.assert_array_equal(some, full[rows])


@pytest.mark.parametrize("terms, shared", [("c2p|p2c", True), ("c2p", False), ("p2c", False),
                                           ("", False)])
def test_layer_contract(terms, shared):
    run_layer_test(
        DisentangledAttentionBlock,
        dict(hidden_size=32, num_heads=4, span=8, position_buckets=8,
             max_relative_positions=64, pos_att_type=terms, share_att_key=shared),
        lambda b, s: (np.random.default_rng(s).normal(size=(b, s, 32)).astype("float32"),
                      np.ones((b, s), "int32")),
        lambda b, s: (b, s, 32),
        call_kwargs={"rel_embeddings": TABLE},
    )


def test_relative_embedding_contract():
    table = RelativeEmbedding(8, 32, layer_norm=True)
    assert tuple(table.table().shape) == (16, 32)
    clone = RelativeEmbedding.from_config(table.get_config())
    assert clone.get_config() == table.get_config()


def test_the_last_block_on_chosen_rows_equals_the_full_block_at_those_rows():
    """The pretrainer's shortcut (query rows only) under relative positions."""
    block = DisentangledAttentionBlock(32, 4, span=8, position_buckets=8,
                                       max_relative_positions=64)
    x = np.random.default_rng(1).normal(size=(2, 20, 32)).astype("float32")
    mask = np.ones((2, 20), "int32")
    mask[1, 15:] = 0
    rows = np.array([[0, 5, 12], [0, 2, 14]], "int32")
    full = np.asarray(block(x, mask, rel_embeddings=TABLE))
    some = np.asarray(block(x, mask, rel_embeddings=TABLE, query_positions=rows))
    np.testing.assert_allclose(some, np.take_along_axis(full, rows[:, :, None], axis=1),
                               atol=1e-5)


@pytest.mark.parametrize("span, buckets, max_position, length", [
    (256, 256, 512, 9),    # DeBERTa-v3, a short text: 17 of 512 rows
    (8, 8, 64, 20),        # longer than the buckets: every row
    (16, 16, 24, 12),      # buckets that grow faster than the distance
    (8, -1, -1, 5),        # no buckets
])
def test_scores_from_the_rows_in_use_equal_the_whole_table(monkeypatch, span, buckets,
                                                          max_position, length):
    """The block projects and scores only the band of the relative table
    the sequence reads; outputs and gradients equal those from the whole
    table (the block with the cut turned off), with and without chosen
    query rows."""
    import tensorflow as tf

    from albert_keras.models.deberta import disentangled_attention

    block = DisentangledAttentionBlock(32, 4, span=span, position_buckets=buckets,
                                       max_relative_positions=max_position)
    rng = np.random.default_rng(2)
    table = tf.constant(rng.normal(size=(2 * span, 32)).astype("float32"))
    x = tf.constant(rng.normal(size=(2, length, 32)).astype("float32"))
    mask = np.ones((2, length), "int32")
    mask[1, length // 2:] = 0
    rows = np.array([[0, length - 1], [1, 2]], "int32")

    def run(query_positions):
        with tf.GradientTape() as tape:
            tape.watch([x, table])
            out = block(x, mask, rel_embeddings=table, query_positions=query_positions)
            loss = tf.reduce_sum(out * out)
        return [np.asarray(t) for t in (out, *tape.gradient(loss, [x, table]))]

    cut = [run(None), run(rows)]
    rows_in_use = disentangled_attention._rows_in_use
    monkeypatch.setattr(disentangled_attention, "_rows_in_use", lambda t, i: (t, i))
    whole = [run(None), run(rows)]
    for got, expected in zip(cut, whole):
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    index = relative_index(length, span, buckets, max_position)
    used, _ = rows_in_use(table, index)
    assert used.shape[0] == len(np.unique(np.asarray(index))) <= 2 * length - 1


def test_encoder_contract_in_float32_and_bfloat16():
    config = albert_config(vocab_size=60, embedding_size=8, hidden_size=16,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=32,
                          max_position_embeddings=32, relative_attention=True,
                          position_buckets=4, share_att_key=True, norm_rel_ebd="layer_norm",
                          position_biased_input=False, type_vocab_size=0)

    def inputs(b, s):
        ids = np.random.default_rng(s).integers(5, 60, (b, s)).astype("int32")
        return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": np.ones_like(ids)}

    run_model_test(lambda dtype: AlbertEncoder(config, dtype=dtype), inputs,
                   lambda b, s: {"sequence_output": (b, s, 16), "pooled_output": (b, 16)})
    full = AlbertEncoder(config)
    mixed = AlbertEncoder(config, dtype="mixed_bfloat16")
    mixed.set_weights(full.get_weights())
    feed = inputs(2, 12)
    np.testing.assert_allclose(np.asarray(mixed(feed)["sequence_output"], "float32"),
                               np.asarray(full(feed)["sequence_output"]), atol=0.1)


@pytest.mark.parametrize("fields, words", [
    ({"share_att_key": True}, "needs relative_attention=true"),
    ({"relative_attention": True, "position_bias": "alibi"}, "cannot be combined"),
    ({"relative_attention": True, "pos_att_type": "c2p|x"}, "unknown term 'x'"),
    ({"relative_attention": True, "position_buckets": 0}, "position_buckets"),
    ({"relative_attention": True, "norm_rel_ebd": "rms"}, "norm_rel_ebd"),
    ({"position_biased_input": False}, "no position information"),
    ({"type_vocab_size": -1}, "type_vocab_size"),
])
def test_bad_relative_fields_are_named(fields, words):
    with pytest.raises(ConfigError, match=words):
        albert_config(**fields)


@pytest.mark.parametrize("sharing", ["all", "attention", "ffn", "none"])
def test_every_sharing_variant_shares_one_relative_table(sharing):
    config = albert_config(vocab_size=60, embedding_size=8, hidden_size=16,
                          num_hidden_layers=4, num_hidden_groups=1, num_attention_heads=4,
                          intermediate_size=32, max_position_embeddings=32, sharing=sharing,
                          relative_attention=True, position_buckets=4)
    encoder = AlbertEncoder(config)
    ids = np.random.default_rng(0).integers(5, 60, (2, 12)).astype("int32")
    out = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": np.ones_like(ids)})
    assert np.all(np.isfinite(np.asarray(out["sequence_output"])))
    tables = [w for w in encoder.weights if w.path.endswith("rel_embeddings/embeddings")]
    assert len(tables) == 1  # one table for every layer, as DeBERTa's encoder has
    attention = len(encoder.transformer.attention_blocks)
    assert attention == (1 if sharing in ("all", "attention") else 4)


def test_a_one_head_model_trains():
    """One head (an ELECTRA generator of a 4-head model has one): the
    relative scores are made without a broadcast batch matmul, which
    crashed TensorFlow's CPU kernel on these shapes."""
    from albert_keras import EncoderPretrainer

    config = albert_config(vocab_size=60, embedding_size=8, hidden_size=8,
                          num_hidden_layers=2, num_attention_heads=1, intermediate_size=16,
                          max_position_embeddings=32, relative_attention=True,
                          position_buckets=4, share_att_key=True)
    model = EncoderPretrainer(AlbertEncoder(config), sentence_order=False)
    model.compile(optimizer=keras.optimizers.AdamW(1e-2))
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 60, (8, 16)).astype("int32")
    x = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": np.ones_like(ids),
         "masked_positions": np.tile(np.array([[1, 5, 9]], "int32"), (8, 1))}
    y = {"masked_ids": ids[:, [1, 5, 9]], "masked_weights": np.ones((8, 3), "float32")}
    losses = model.fit(x, y, batch_size=4, epochs=5, verbose=0).history["loss"]
    assert losses[-1] < losses[0]
