import numpy as np
import pytest
import tensorflow as tf

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from tests.helpers import TINY
from tests.helpers import encoder_inputs
from tests.helpers import run_model_test


def pretrainer_inputs(batch, seq):
    inputs = encoder_inputs(batch, seq)
    inputs["masked_positions"] = (
        np.random.default_rng(seq).integers(0, seq, (batch, 4)).astype("int32")
    )
    return inputs


def test_pretrainer():
    config = AlbertConfig(**TINY)
    run_model_test(
        lambda dtype: EncoderPretrainer(AlbertEncoder(config, dtype=dtype)),
        pretrainer_inputs,
        lambda b, s: {"mlm_logits": (b, 4, 60), "sop_logits": (b, 2)},
    )


def test_decoder_is_tied_to_word_embeddings():
    pretrainer = EncoderPretrainer(AlbertEncoder(AlbertConfig(**TINY)))
    table = pretrainer.encoder.token_embedding.embeddings
    assert pretrainer.mlm_head.token_embedding.embeddings is table
    # Counted once: no separate V x E decoder matrix.
    ids = {id(v) for v in pretrainer.weights}
    assert len(ids) == len(pretrainer.weights)
    before = pretrainer(pretrainer_inputs(1, 8))["mlm_logits"].numpy()
    table.assign(table.numpy() * 2.0)
    after = pretrainer(pretrainer_inputs(1, 8))["mlm_logits"].numpy()
    assert not np.allclose(before, after)


def test_logits_are_float32_under_mixed_precision():
    encoder = AlbertEncoder(AlbertConfig(**TINY), dtype="mixed_bfloat16")
    out = EncoderPretrainer(encoder)(pretrainer_inputs(2, 8))
    assert out["mlm_logits"].dtype == "float32"
    assert out["sop_logits"].dtype == "float32"


def _graph_outputs(pretrainer, inputs, training=False):
    # The functional graph, every row of every block (what ``call`` shortcuts).
    return super(EncoderPretrainer, pretrainer).call(inputs, training=training)


@pytest.mark.parametrize("overrides", [
    {},
    {"sharing": "none"},
    {"num_hidden_groups": 1, "inner_group_num": 1},
])
def test_call_computing_only_the_read_rows_equals_the_full_graph(overrides):
    pretrainer = EncoderPretrainer(AlbertEncoder(AlbertConfig(**{**TINY, **overrides})))
    inputs = pretrainer_inputs(3, 12)  # one padded example, two segments
    last_ffn = pretrainer.encoder.transformer.ffn_blocks[-1]
    seen, ffn_call = [], last_ffn.call
    last_ffn.call = lambda x, **kw: seen.append(tuple(x.shape)) or ffn_call(x, **kw)
    fast = pretrainer(inputs)
    # The last block ran on [CLS] and the 4 masked rows only.
    assert seen[-1] == (3, 1 + 4, TINY["hidden_size"])
    full = _graph_outputs(pretrainer, inputs)
    for name in ("mlm_logits", "sop_logits"):
        np.testing.assert_allclose(fast[name].numpy(), full[name].numpy(), atol=1e-5)


def test_training_gradients_equal_the_full_graph():
    pretrainer = EncoderPretrainer(AlbertEncoder(AlbertConfig(**TINY)))
    inputs = pretrainer_inputs(2, 10)
    labels = {"masked_ids": np.full((2, 4), 7, "int32"),
              "masked_weights": np.ones((2, 4), "float32"),
              "sop_label": np.array([0, 1], "int32")}

    def grads(forward):
        with tf.GradientTape() as tape:
            loss = sum(pretrainer.pretraining_losses(labels, forward(inputs)))
        return tape.gradient(loss, pretrainer.trainable_variables)

    fast = grads(pretrainer)
    full = grads(lambda x: _graph_outputs(pretrainer, x))
    assert len(fast) == len(full) == len(pretrainer.trainable_variables)
    for variable, a, b in zip(pretrainer.trainable_variables, fast, full):
        a, b = tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy()
        np.testing.assert_allclose(a, b, atol=1e-6, err_msg=variable.path)
