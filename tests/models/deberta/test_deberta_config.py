"""DeBERTa's own config class: DeBERTa-v3's values by default, the family
that claims it, and ALBERT configs with relative attention (files written
before the class existed) read back as it with the same outputs."""

import dataclasses

import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import DebertaConfig
from albert_keras.config_dicts import ConfigError
from albert_keras.families import family_of
from albert_keras.families import preset_config
from albert_keras.presets import get_preset

# microsoft/deberta-v3-base's config.json, in our field names.
V3_BASE = dict(vocab_size=128100, hidden_size=768, num_hidden_layers=12,
               num_attention_heads=12, intermediate_size=3072, hidden_act="gelu",
               hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1,
               max_position_embeddings=512, type_vocab_size=0, layer_norm_eps=1e-7,
               relative_attention=True, position_buckets=256, max_relative_positions=-1,
               share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
               pooler_hidden_act="gelu")


def test_the_defaults_are_deberta_v3_base():
    config = DebertaConfig()
    for name, value in V3_BASE.items():
        assert getattr(config, name) == value, name
    # no sharing and E = H: HF's DeBERTa layout
    assert config.is_bert_layout and set(config.position_attention_terms) == {"c2p", "p2c"}
    assert get_preset("deberta_v3_base") == config
    assert type(get_preset("deberta_v3_tiny")) is DebertaConfig


def test_the_family_claims_its_class_and_albert_presets_with_relative_fields():
    assert family_of(DebertaConfig()).name == "deberta"
    assert family_of(AlbertConfig()).name == "albert"
    assert family_of(get_preset("bert_tiny")).name == "albert"
    # --model-overrides '{"relative_attention": true}' on an ALBERT preset:
    # DeBERTa's class, every other field the preset's
    config = preset_config("albert_tiny", relative_attention=True, position_buckets=8)
    assert type(config) is DebertaConfig and family_of(config).name == "deberta"
    albert = dataclasses.asdict(preset_config("albert_tiny"))
    assert {k: v for k, v in dataclasses.asdict(config).items() if k in albert} == albert
    assert (config.position_buckets, config.share_att_key, config.position_biased_input) == (
        8, False, True)  # the fields not given are off, as ALBERT files held them
    # ALBERT's config has no relative fields of its own
    with pytest.raises(TypeError, match="relative_attention"):
        AlbertConfig(relative_attention=True)
    with pytest.raises(ConfigError, match="needs relative_attention=true"):
        preset_config("albert_tiny", share_att_key=True)


def _tiny(**fields):
    return dict(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, max_position_embeddings=32,
                hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **fields)


def test_an_albert_file_with_relative_attention_reads_back_as_deberta(tmp_path):
    """ALBERT's sharing with DeBERTa's attention, saved as an ``AlbertConfig``
    (what every file written before ``DebertaConfig`` holds: the saved
    config is the field dict, no class name): it loads with every field and
    output unchanged, as its family's class."""
    albert = dataclasses.asdict(AlbertConfig(**_tiny(embedding_size=16, type_vocab_size=0)))
    relative = dict(relative_attention=True, max_relative_positions=-1, position_buckets=4,
                    pos_att_type="c2p|p2c", share_att_key=True, norm_rel_ebd="layer_norm",
                    position_biased_input=False)
    # the encoder's config entry as those files hold it
    encoder = AlbertEncoder({**albert, **relative})
    config = encoder.config
    assert type(config) is DebertaConfig
    assert dataclasses.asdict(config) == {**albert, **relative}
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 64, (2, 11)).astype("int32"),
         "segment_ids": np.zeros((2, 11), "int32"),
         "padding_mask": np.array([[1] * 11, [1] * 7 + [0] * 4], "int32")}
    expected = encoder(x)["sequence_output"]
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.config) is DebertaConfig and loaded.config.sharing == "all"
    assert dataclasses.asdict(loaded.config) == dataclasses.asdict(config)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(loaded(x)["sequence_output"]),
                               keras.ops.convert_to_numpy(expected), atol=1e-6, rtol=0)


def test_a_deberta_config_with_albert_sharing_builds_a_shared_stack():
    shared = AlbertEncoder(DebertaConfig(**_tiny(embedding_size=16, sharing="all",
                                                  num_hidden_groups=1, position_buckets=4)))
    unshared = AlbertEncoder(DebertaConfig(**_tiny(num_hidden_groups=2, position_buckets=4)))
    # one block's weights for both layers, and the factorized embedding
    assert shared.count_params() < unshared.count_params()
    assert family_of(shared).name == "deberta"
