"""The lite ModernBERT: one block's weights at every layer (each layer keeping
its window and rotary base) and a factorized token table. A shared encoder
is checked against transformers' ``ModernBertModel`` whose layers all hold
one layer's weights."""

import keras
import numpy as np
import pytest
import torch
import transformers

from albert_keras.convert import ConversionError
from albert_keras.convert import save_hf
from albert_keras.models.modernbert.checkpoints import config_from_hf
from albert_keras.models.modernbert.checkpoints import load_hf_encoder
from albert_keras.models.modernbert.modernbert_encoder import ModernBertEncoder
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.presets import get_preset
from albert_keras.saving import load_model
from albert_keras.saving import save_model
from tests.models.modernbert.test_modernbert_parity import BASE
from tests.models.modernbert.test_modernbert_parity import _batch
from tests.models.modernbert.test_modernbert_parity import _hf_folder

# a window of 4 over rows of 24, global every 3rd layer, two rotary bases
FIELDS = dict(BASE, local_attention=4, rope_parameters={
    "full_attention": {"rope_type": "default", "rope_theta": 5000.0},
    "sliding_attention": {"rope_type": "default", "rope_theta": 300.0}})


def _inputs(ids, mask):
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def test_shared_layers_are_transformers_with_one_layers_weights_everywhere(tmp_path):
    folder, hf = _hf_folder(tmp_path, FIELDS)
    with torch.no_grad():  # every layer holds layer 1's weights (layer 0: no attn_norm)
        source = dict(hf.layers[1].named_parameters())
        for layer in hf.layers:
            for name, p in layer.named_parameters():
                p.copy_(source[name])
    unshared = load_hf_encoder(folder)  # the file's layers, before the copy
    lite = ModernBertEncoder(config_from_hf({**FIELDS, "share_layers": True}))
    theirs = unshared.checkpoint_variables()
    for name, variable in lite.checkpoint_variables().items():
        from_layer = name.replace("layer_0/", "layer_1/")
        variable.assign(_hf_weight(hf, from_layer) if from_layer.startswith("layer_1/")
                        else theirs[name].numpy())
    ids, mask = _batch()
    with torch.no_grad():
        want = hf(input_ids=torch.tensor(ids, dtype=torch.long),
                  attention_mask=torch.tensor(mask)).last_hidden_state.numpy()
    got = _numpy(lite(_inputs(ids, mask))["sequence_output"])
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], want[real], atol=1e-5)
    # one block's weights: the encoder has a quarter of the unshared one's block weights
    block = [v for v in lite.trainable_variables if "shared_layer" in v.path]
    assert len(block) == len([v for v in unshared.trainable_variables if "layer_1/" in v.path])
    assert lite.count_params() == lite.config.count_parameters()


def _hf_weight(hf, name):
    """Our ``layer_1/...`` variable's value from transformers' layer 1."""
    part, kind = name[len("layer_1/"):].rsplit("/", 1)
    module = hf.layers[1].get_submodule(part.replace("/", "."))
    weight = (module.weight if kind in ("kernel", "gamma") else module.bias).detach().numpy()
    return weight.T if kind == "kernel" else weight


def test_a_factorized_table_builds_pretrains_saves_and_stays_out_of_hf(tmp_path):
    config = get_preset("modernbert_lite_tiny")
    assert config.share_layers and config.embedding_size < config.hidden_size
    encoder = ModernBertEncoder(config)
    assert encoder.count_params() == config.count_parameters()
    assert encoder.token_embedding.output_dim == config.embedding_size
    pretrainer = EncoderPretrainer(encoder, sentence_order=False)
    ids, mask = _batch()
    positions = np.array([[1, 2], [3, 4], [0, 5]], "int32")
    logits = pretrainer({**_inputs(ids, mask), "masked_positions": positions})["mlm_logits"]
    assert tuple(logits.shape) == (3, 2, config.vocab_size)
    # the masked LM's head maps H to the table's width (the pooler cannot: it is H wide)
    assert pretrainer.mlm_head.transform is None
    save_model(encoder, str(tmp_path / "lite.keras"))
    again = load_model(str(tmp_path / "lite.keras"))
    np.testing.assert_array_equal(_numpy(again(_inputs(ids, mask))["sequence_output"]),
                                  _numpy(encoder(_inputs(ids, mask))["sequence_output"]))
    with pytest.raises(ConversionError, match="a lite ModernBERT .* has no transformers class"):
        save_hf(encoder, str(tmp_path / "hf"))
    assert not (tmp_path / "hf").exists()


def test_the_lite_preset_matches_the_tiny_ones_parameters_on_the_built_in_corpus():
    """At the built-in corpus' 8,000 pieces, with the masked LM's head: what
    the report compares at equal parameters."""
    def with_head(name):
        config = get_preset(name)
        config = type(config).from_dict({**config.to_dict(), "vocab_size": 8000})
        head = config.hidden_size * config.embedding_size + config.embedding_size \
            if config.embedding_size != config.hidden_size else 0  # the lite head's own dense
        return config.count_parameters() + head

    lite, tiny = with_head("modernbert_lite_tiny"), with_head("modernbert_tiny")
    assert abs(lite / tiny - 1) < 0.02, (lite, tiny)


def test_transformers_still_reads_a_full_model_written_here(tmp_path):
    """The new fields stay out of an ordinary ModernBERT's ``config.json``."""
    encoder = ModernBertEncoder(config_from_hf(FIELDS))
    save_hf(encoder, str(tmp_path / "hf"))
    back = transformers.AutoConfig.from_pretrained(str(tmp_path / "hf"))
    assert not hasattr(back, "share_layers") and not hasattr(back, "embedding_size")
