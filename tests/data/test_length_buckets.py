"""Length-bucketed batches: every row once, in few shapes, and the same
outputs as every row padded to the full length."""

import numpy as np
import pytest

from albert_keras.data.length_buckets import PAST_THE_ROW
from albert_keras.data.length_buckets import bucket_lengths
from albert_keras.data.length_buckets import bucketed_dataset
from albert_keras.data.length_buckets import one_graph_for_every_length
from albert_keras.data.length_buckets import plan_batches
from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.data.length_buckets import row_lengths

S = 64


def _mixed_inputs(n=37, seed=0, vocab=99):
    """Rows of lengths 3..S, two segments, as the packer lays them out."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, S + 1, n)
    lengths[:3] = (3, S, 17)  # the shortest, the full length, a bucket edge + 1
    mask = (np.arange(S) < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, vocab, (n, S)).astype(np.int32) * mask
    ids[:, 0] = 2
    segments = ((np.arange(S) >= lengths[:, None] // 2) * mask).astype(np.int32)
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}, lengths


def test_the_plan_holds_every_row_once_in_a_batch_that_fits_it():
    x, lengths = _mixed_inputs()
    assert list(row_lengths(x)) == list(lengths)
    buckets = bucket_lengths(S)
    assert buckets == (16, 32, 48, 64)
    plan = plan_batches(lengths, 8, buckets)
    rows = np.concatenate([r for r, _ in plan])
    assert sorted(rows) == list(range(len(lengths)))
    assert all(lengths[r].max() <= n and n in buckets for r, n in plan)
    # only the last batch is partial: the rest carry on to longer buckets
    assert [len(r) for r, _ in plan[:-1]] == [8] * (len(plan) - 1)
    # unshuffled (prediction), a bucket's rows go by length, so a batch cut
    # to its longest row pads little: no row shorter than the batch before's
    assert all(lengths[a].max() <= lengths[b].min() for (a, n), (b, m) in zip(plan, plan[1:])
               if n == m)
    # training: shuffled by the seed, the last partial batch dropped
    a = plan_batches(lengths, 8, buckets, np.random.default_rng(1), drop_remainder=True)
    b = plan_batches(lengths, 8, buckets, np.random.default_rng(1), drop_remainder=True)
    c = plan_batches(lengths, 8, buckets, np.random.default_rng(2), drop_remainder=True)
    assert len(a) == len(lengths) // 8 and all(len(r) == 8 for r, _ in a)
    assert [list(r) for r, _ in a] == [list(r) for r, _ in b]
    assert [list(r) for r, _ in a] != [list(r) for r, _ in c]
    with pytest.raises(ValueError, match="longer than the last bucket"):
        plan_batches(np.array([70]), 8, buckets)


def test_the_training_dataset_repeats_by_seed_and_reshuffles_each_epoch():
    x, lengths = _mixed_inputs()
    y = {"logits": np.arange(len(lengths), dtype=np.int32)}  # the row's own index
    ds = bucketed_dataset((x, y), 8, seed=3)
    epochs = [[b[1]["logits"].numpy().tolist() for b in ds] for _ in range(2)]
    # TensorFlow traces one train step for every length: the fine grid
    buckets = bucket_lengths(S, one_graph_for_every_length())
    assert (8 in buckets) == one_graph_for_every_length()
    again = [[b[1]["logits"].numpy().tolist() for b in bucketed_dataset((x, y), 8, seed=3)]]
    assert epochs[0] == again[0] and epochs[0] != epochs[1]
    for batch_x, batch_y in ds:
        width = batch_x["token_ids"].shape[1]
        assert width in buckets
        # each row is itself, cut to a width that holds it
        rows = batch_y["logits"].numpy()
        np.testing.assert_array_equal(batch_x["token_ids"].numpy(), x["token_ids"][rows, :width])
        assert lengths[rows].max() <= width
    assert len(epochs[0]) == len(lengths) // 8


@pytest.mark.skipif(not one_graph_for_every_length(), reason="TensorFlow's train step")
def test_tensorflow_traces_the_train_step_once_for_every_bucket_length():
    """The fine grid is free only because the step is not traced per length."""
    import keras

    traces = []

    class Counted(keras.layers.Layer):
        def call(self, x):
            traces.append(x.shape)  # runs once per trace, not per step
            return x

    x, lengths = _mixed_inputs(n=200)
    inputs = {name: keras.Input((None,), dtype="int32", name=name) for name in x}
    hidden = Counted()(keras.layers.Embedding(99, 8)(inputs["token_ids"]))
    out = keras.layers.Dense(2, name="out")(keras.layers.GlobalAveragePooling1D()(hidden))
    model = keras.Model(inputs, {"out": out})
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    y = {"out": (lengths % 2).astype(np.int32)}
    built = len(traces)
    ds = bucketed_dataset((x, y), 8, seed=0)
    widths = {batch[0]["token_ids"].shape[1] for batch in ds}
    model.fit(ds, epochs=2, verbose=0)
    assert len(widths) >= 6 and len(traces) - built <= 2  # a first trace, then one relaxed


def _encoder(seed=0):
    import keras

    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder

    keras.utils.set_random_seed(seed)
    return AlbertEncoder(AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=32,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=37, max_position_embeddings=S,
                                      hidden_dropout_prob=0.0,
                                      attention_probs_dropout_prob=0.0))


def _models():
    from albert_keras import SentenceEmbedder
    from albert_keras import SequenceClassifier
    from albert_keras import SpanExtractor
    from albert_keras import TokenTagger

    return {"pooled classifier": SequenceClassifier(_encoder(), 16),  # 16 classes = a bucket
            "mean classifier": SequenceClassifier(_encoder(), 3, pooling="mean"),
            "tagger": TokenTagger(_encoder(), 5),
            "qa": SpanExtractor(_encoder()),
            "embedder": SentenceEmbedder(_encoder())}


@pytest.mark.parametrize("name", list(_models()))
def test_bucketed_predictions_equal_full_padding(name):
    model = _models()[name]
    x, lengths = _mixed_inputs()
    full = model.predict(x, batch_size=8, verbose=0)
    cut = predict_in_buckets(model, x, batch_size=8)
    assert sorted(cut) == sorted(full)
    for key, expected in full.items():
        got = cut[key]
        assert got.shape == expected.shape
        if got.ndim > 1 and got.shape[1] == S and name in ("tagger", "qa"):
            real = np.arange(S) < lengths[:, None]  # what the tasks read
            np.testing.assert_allclose(got[real], expected[real], atol=2e-5)
            # past the batch a row ran in: a score no decoder picks
            assert (got[~real] <= PAST_THE_ROW / 2).mean() > 0.3
        else:
            np.testing.assert_allclose(got, expected, atol=2e-5)


def test_layer_transfer_losses_of_a_cut_batch_equal_the_padded_one():
    """Distillation's layer stage trains on bucketed batches: its losses
    average over real positions, so a batch cut to its longest row scores
    what the same rows padded to the full length score."""
    from albert_keras.models.distillers.layer_distiller import LayerDistiller

    x, lengths = _mixed_inputs(n=6)
    short = np.argsort(lengths)[:4]  # rows that fit a shorter bucket
    width = int(lengths[short].max())
    assert width < S
    model = LayerDistiller(_encoder(0), _encoder(1))
    padded = {k: v[short] for k, v in x.items()}
    cut = {k: v[short, :width] for k, v in x.items()}

    def losses(inputs):
        out = model(inputs)
        model.compute_loss(inputs, None, out)
        return [float(t.result()) for t in (model.hidden_loss_tracker,
                                            model.attention_loss_tracker)]

    full = losses(padded)
    for tracker in (model.hidden_loss_tracker, model.attention_loss_tracker):
        tracker.reset_state()
    assert full[0] > 1e-2 and full[1] > 1e-6  # two random encoders differ
    np.testing.assert_allclose(losses(cut), full, rtol=1e-3)


def _family_encoders(dtype):
    """A tiny encoder of each family in ``dtype``, the same weights for a seed."""
    import keras

    from albert_keras.families import build_backbone
    from albert_keras.presets import get_preset

    small = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    configs = {"albert": get_preset("albert_tiny", vocab_size=99, **small),
               "deberta": get_preset("deberta_v3_tiny", vocab_size=99, **small),
               "mobilebert": get_preset("mobilebert_tiny", vocab_size=99, **small),
               "modernbert": get_preset("modernbert_tiny", vocab_size=99)}
    made = {}
    for name, config in configs.items():
        keras.utils.set_random_seed(0)
        made[name] = build_backbone(config, dtype=dtype)
    return made


@pytest.mark.parametrize("family", ["albert", "deberta", "mobilebert", "modernbert"])
def test_a_bf16_model_predicts_small_batches_in_float32_with_its_own_weights(family,
                                                                            monkeypatch):
    """On a CPU with native bf16 (pretended here: the tests run TensorFlow
    without oneDNN), a bf16 classifier runs one row in float32, exactly as
    the same weights built in float32 do, and a full batch in bf16 (close,
    not equal); ``precision="float32"`` runs every batch in float32."""
    from albert_keras import SequenceClassifier
    from albert_keras.data import length_buckets

    monkeypatch.setattr(length_buckets, "machine_precision",
                        lambda: ("mixed_bfloat16", False))
    fast = SequenceClassifier(_family_encoders("mixed_bfloat16")[family], 3)
    exact = SequenceClassifier(_family_encoders("float32")[family], 3)
    exact.set_weights(fast.get_weights())
    x, _ = _mixed_inputs(n=17)
    # a call decides once: its remainder of one row runs in bf16 with the
    # rest, and no second graph is traced for it
    predict_in_buckets(fast, x, batch_size=16)
    assert set(length_buckets._RUNNERS[fast]) == {"mixed_bfloat16"}
    x = {k: v[:16] for k, v in x.items()}
    # the float32 model through the same batches: cut to the same lengths
    expected = predict_in_buckets(exact, x, batch_size=16)["logits"]
    one = {k: v[:1] for k, v in x.items()}
    np.testing.assert_allclose(predict_in_buckets(fast, one, batch_size=1)["logits"],
                               predict_in_buckets(exact, one, batch_size=1)["logits"], atol=1e-6)
    in_bf16 = predict_in_buckets(fast, x, batch_size=16)["logits"]
    assert 1e-4 < np.abs(in_bf16 - expected).max() < 0.1
    np.testing.assert_allclose(
        predict_in_buckets(fast, x, batch_size=16, precision="float32")["logits"], expected,
        atol=1e-6)
    assert fast.dtype_policy.name == "mixed_bfloat16"  # the swap was put back
