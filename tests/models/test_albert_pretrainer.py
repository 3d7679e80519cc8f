import numpy as np

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import AlbertPretrainer
from tests.helpers import run_model_test
from tests.models.test_albert_encoder import TINY
from tests.models.test_albert_encoder import encoder_inputs


def pretrainer_inputs(batch, seq):
    inputs = encoder_inputs(batch, seq)
    inputs["masked_positions"] = (
        np.random.default_rng(seq).integers(0, seq, (batch, 4)).astype("int32")
    )
    return inputs


def test_pretrainer():
    config = AlbertConfig(**TINY)
    run_model_test(
        lambda dtype: AlbertPretrainer(AlbertEncoder(config, dtype=dtype)),
        pretrainer_inputs,
        lambda b, s: {"mlm_logits": (b, 4, 60), "sop_logits": (b, 2)},
    )


def test_decoder_is_tied_to_word_embeddings():
    pretrainer = AlbertPretrainer(AlbertEncoder(AlbertConfig(**TINY)))
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
    out = AlbertPretrainer(encoder)(pretrainer_inputs(2, 8))
    assert out["mlm_logits"].dtype == "float32"
    assert out["sop_logits"].dtype == "float32"
