"""DeBERTa's enhanced mask decoder against a numpy reference on the same weights."""

import keras
import numpy as np
import pytest
from scipy.special import erf

from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from albert_keras.models.albert.albert_config import AlbertConfig
from tests.helpers import albert_config
from tests.helpers import sample_inputs


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _gelu(x):  # the exact form, the config's "gelu"
    return 0.5 * x * (1 + erf(x / np.sqrt(2)))


def _block(attention, ffn, keys, queries, mask, heads, eps):
    """One post-LN block of plain attention: queries attend over keys."""
    layers = {"query": attention.query, "key": attention.key, "value": attention.value,
              "output": attention.output_dense, "intermediate": ffn.intermediate,
              "ffn_output": ffn.output_dense}

    def dense(x, name):
        return x @ layers[name].kernel.numpy() + layers[name].bias.numpy()

    def norm(x, layer):
        return _layer_norm(x, layer.gamma.numpy(), layer.beta.numpy(), eps)

    def split(x):
        return x.reshape(x.shape[0], x.shape[1], heads, -1).transpose(0, 2, 1, 3)

    q, k, v = split(dense(queries, "query")), split(dense(keys, "key")), split(dense(keys, "value"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    scores = scores + ((1.0 - mask) * -10000.0)[:, None, None, :]
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(queries.shape)
    out = norm(dense(context, "output") + queries, attention.layer_norm)
    return norm(dense(_gelu(dense(out, "intermediate")), "ffn_output") + out, ffn.layer_norm)


def _reference(model, inputs, positions):
    """numpy: h = the state before the last layer; queries = h + z at the
    masked positions; the last layer twice (keys and values h); the MLM head."""
    encoder, config = model.encoder, model.encoder.config
    emb = encoder.embeddings
    ids, mask = inputs["token_ids"], inputs["padding_mask"].astype("float32")
    word = emb.token_embedding.embeddings.numpy()
    position = emb.position_embedding.embeddings.numpy()
    x = word[ids] + position[None, : ids.shape[1]]
    x = x + emb.segment_embedding.embeddings.numpy()[inputs["segment_ids"]]
    x = _layer_norm(x, emb.layer_norm.gamma.numpy(), emb.layer_norm.beta.numpy(),
                    config.layer_norm_eps)
    blocks = [(encoder.transformer.attention_blocks[a], encoder.transformer.ffn_blocks[f])
              for layer in encoder.transformer.plan for a, f in layer]
    for attention, ffn in blocks[:-1]:
        x = _block(attention, ffn, x, x, mask, config.num_attention_heads,
                   config.layer_norm_eps)
    rows = np.take_along_axis(x, positions[:, :, None], axis=1) + position[positions]
    for _ in range(2):
        rows = _block(*blocks[-1], x, rows, mask, config.num_attention_heads,
                      config.layer_norm_eps)
    head = model.mlm_head
    hidden = _gelu(rows @ head.dense.kernel.numpy() + head.dense.bias.numpy())
    hidden = _layer_norm(hidden, head.layer_norm.gamma.numpy(), head.layer_norm.beta.numpy(),
                         config.layer_norm_eps)
    return hidden @ word.T + head.output_bias.numpy()


@pytest.mark.parametrize("sharing", ["none", "all"])
def test_decoder_matches_numpy(sharing):
    config = AlbertConfig(vocab_size=99, embedding_size=32, hidden_size=32,
                          num_hidden_layers=3, num_attention_heads=4, intermediate_size=37,
                          max_position_embeddings=64, hidden_act="gelu", sharing=sharing,
                          num_hidden_groups=1 if sharing == "all" else 3)
    model = EncoderPretrainer(AlbertEncoder(config), enhanced_mask_decoder=True)
    rng = np.random.default_rng(0)
    for variable in model.weights:
        variable.assign(rng.normal(0, 0.3, variable.shape).astype("float32"))
    inputs = sample_inputs()
    positions = np.array([[1, 4, 7], [2, 3, 0], [4, 1, 1]], dtype="int32")
    expected = _reference(model, inputs, positions)
    fast = model({**inputs, "masked_positions": positions})["mlm_logits"]
    # an encoder with every hidden state makes the pretrainer run its
    # functional graph instead of the shortcut in call()
    as_graph = EncoderPretrainer(AlbertEncoder(config, output_hidden_states=True),
                                enhanced_mask_decoder=True)
    as_graph.set_weights(model.get_weights())
    graph = as_graph({**inputs, "masked_positions": positions})["mlm_logits"]
    assert np.abs(np.asarray(fast) - expected).max() < 1e-4
    assert np.abs(np.asarray(graph) - expected).max() < 1e-4
    # not a no-op: without the decoder the logits differ
    plain = EncoderPretrainer(AlbertEncoder(config))
    plain.set_weights(model.get_weights())
    assert np.abs(np.asarray(plain({**inputs, "masked_positions": positions})["mlm_logits"])
                  - expected).max() > 1e-2


def test_a_deberta_v3_pretrainer_with_the_decoder_saves_and_loads(tmp_path):
    config = albert_config(vocab_size=99, embedding_size=16, hidden_size=32,
                          num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                          max_position_embeddings=64, relative_attention=True,
                          position_buckets=8, share_att_key=True, norm_rel_ebd="layer_norm",
                          position_biased_input=False, type_vocab_size=0)
    model = EncoderPretrainer(AlbertEncoder(config), enhanced_mask_decoder=True)
    inputs = {**sample_inputs(), "masked_positions": np.array([[1, 2]] * 3, "int32")}
    inputs["segment_ids"] *= 0
    before = np.asarray(model(inputs)["mlm_logits"])
    as_graph = EncoderPretrainer(AlbertEncoder(config, output_hidden_states=True),
                                enhanced_mask_decoder=True)
    as_graph.set_weights(model.get_weights())
    np.testing.assert_allclose(np.asarray(as_graph(inputs)["mlm_logits"]), before, atol=1e-5)
    model.save(tmp_path / "m.keras")
    loaded = keras.saving.load_model(tmp_path / "m.keras")
    assert loaded.enhanced_mask_decoder
    np.testing.assert_allclose(np.asarray(loaded(inputs)["mlm_logits"]), before, atol=1e-6)
