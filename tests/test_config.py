import json

import pytest
import transformers

from albert_keras import AlbertConfig
from albert_keras import ConfigError
from albert_keras.models.albert.config_files import read_config_file
from albert_keras.models.albert.config_files import write_config_file
from albert_keras.models.albert.hf_config import from_hf_dict
from albert_keras.models.albert.hf_config import to_hf_dict
from albert_keras.models.albert.tf1_config import from_original_dict
from albert_keras.models.albert.tf1_config import to_original_dict
from albert_keras.presets import get_preset

READERS = {"from_dict": AlbertConfig.from_dict, "from_hf_dict": from_hf_dict,
           "from_original_dict": from_original_dict}

ORIGINAL_BASE = {
    "attention_probs_dropout_prob": 0,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0,
    "embedding_size": 128,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "num_hidden_groups": 1,
    "net_structure_type": 0,
    "gap_size": 0,
    "num_memory_blocks": 0,
    "inner_group_num": 1,
    "down_scale_factor": 1,
    "type_vocab_size": 2,
    "vocab_size": 30000,
}


def _write(tmp_path, data, name="config.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_original_albert_config(tmp_path):
    config = read_config_file(_write(tmp_path, ORIGINAL_BASE))
    # The TF1 code's "gelu" is the tanh approximation.
    assert config.hidden_act == "gelu_new"
    assert config == get_preset("albert_base")
    assert to_original_dict(config) == {**ORIGINAL_BASE, "hidden_act": "gelu"}


def test_original_bert_config_is_unshared(tmp_path):
    data = {k: v for k, v in ORIGINAL_BASE.items()
            if k not in ("embedding_size", "num_hidden_groups", "inner_group_num",
                         "net_structure_type", "gap_size", "num_memory_blocks",
                         "down_scale_factor")}
    config = read_config_file(_write(tmp_path, data))
    assert config.sharing == "none"
    assert config.embedding_size == config.hidden_size
    assert config.hidden_act == "gelu_new"


def test_hf_gelu_is_exact_and_original_gelu_is_tanh():
    hf = from_hf_dict({"model_type": "bert", "hidden_act": "gelu"})
    assert hf.hidden_act == "gelu"
    original = from_original_dict({**ORIGINAL_BASE, "hidden_act": "gelu"})
    assert original.hidden_act == "gelu_new"


@pytest.mark.parametrize("hf_cls", [transformers.AlbertConfig, transformers.BertConfig])
def test_every_key_transformers_writes_is_accepted(hf_cls, tmp_path):
    folder = tmp_path / "hf"
    hf_cls().save_pretrained(folder)
    config = read_config_file(str(folder / "config.json"))
    expected = hf_cls()
    assert config.hidden_size == expected.hidden_size
    assert config.hidden_act == expected.hidden_act
    assert config.num_hidden_layers == expected.num_hidden_layers


@pytest.mark.parametrize("preset", ["albert_base", "bert_base", "albert_tiny"])
def test_hf_round_trip_through_transformers(preset, tmp_path):
    ours = get_preset(preset)
    path = str(tmp_path / "config.json")
    write_config_file(ours, path, "hf")
    loaded = transformers.AutoConfig.from_pretrained(str(tmp_path))
    assert loaded.model_type == ("bert" if ours.sharing == "none" else "albert")
    assert loaded.hidden_act == ours.hidden_act
    assert read_config_file(path) == ours


@pytest.mark.parametrize("dialect", ["albert_keras", "original"])
def test_round_trip(dialect, tmp_path):
    ours = get_preset("albert_large", num_hidden_groups=2, inner_group_num=2)
    path = str(tmp_path / "c.json")
    write_config_file(ours, path, dialect)
    assert read_config_file(path, dialect) == ours


def test_sharing_variants_are_refused_where_they_cannot_exist():
    config = get_preset("albert_base", sharing="attention")
    with pytest.raises(ConfigError, match="sharing='attention'"):
        to_hf_dict(config)
    with pytest.raises(ConfigError, match="sharing='attention'"):
        to_original_dict(config)


@pytest.mark.parametrize(
    "reader, data, match",
    [
        ("from_dict", {"hidden_size": 768, "colour": 1}, "unknown config key 'colour'"),
        ("from_original_dict", {**ORIGINAL_BASE, "foo": 1}, "unknown config key 'foo'"),
        ("from_hf_dict", {"model_type": "albert", "foo": 1}, "unknown config key 'foo'"),
        ("from_hf_dict", {"model_type": "gpt2"}, "model_type"),
        ("from_hf_dict", {"model_type": "albert", "position_embedding_type": "relative_key"},
         "position_embedding_type"),
        ("from_original_dict", {**ORIGINAL_BASE, "net_structure_type": 1}, "net_structure_type"),
        ("from_dict", {"hidden_size": 100}, "divisible"),
        ("from_dict", {"hidden_dropout_prob": 1.5}, "hidden_dropout_prob"),
        ("from_dict", {"num_hidden_layers": 0}, "num_hidden_layers"),
        ("from_dict", {"num_hidden_groups": 20}, "num_hidden_groups"),
        ("from_dict", {"sharing": "some"}, "sharing"),
        ("from_dict", {"hidden_act": "swish"}, "hidden_act"),
        ("from_dict", {"vocab_size": "30000"}, "vocab_size"),
        ("from_dict", {"layer_norm_eps": -1.0}, "layer_norm_eps"),
    ],
)
def test_bad_configs_name_the_field(reader, data, match):
    with pytest.raises(ConfigError, match=match):
        READERS[reader](data, "my.json")


def test_bad_file_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError, match="broken.json"):
        read_config_file(str(path))
