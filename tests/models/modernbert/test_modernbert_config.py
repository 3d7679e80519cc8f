"""A ModernBERT ``config.json`` with a bad value is one line naming the file
and the field (each of these was an internal error: ZeroDivisionError,
TypeError, Keras' own message)."""

import json

import pytest

from albert_keras.cli import main
from albert_keras.config_dicts import ConfigError
from albert_keras.models.modernbert.checkpoints import config_from_hf
from albert_keras.models.modernbert.modernbert_config import ModernBertConfig

GOOD = {"vocab_size": 99, "hidden_size": 32, "intermediate_size": 48,
        "num_hidden_layers": 3, "num_attention_heads": 4, "max_position_embeddings": 64,
        "local_attention": 16}


@pytest.mark.parametrize("field, value, message", [
    ("global_attn_every_n_layers", 0, "global_attn_every_n_layers must be a positive integer"),
    ("num_attention_heads", 0, "num_attention_heads must be a positive integer"),
    ("hidden_size", "768", "hidden_size must be a int, not str"),
    ("num_hidden_layers", -1, "num_hidden_layers must be a positive integer"),
    ("embedding_size", 0, "embedding_size must be a positive integer"),
    ("attention_dropout", 1.5, "attention_dropout must be in [0, 1)"),
    ("norm_eps", 0, "norm_eps must be positive"),
    ("norm_bias", "no", "norm_bias must be true or false"),
])
def test_a_bad_value_names_the_file_and_the_field(field, value, message):
    with pytest.raises(ConfigError) as found:
        config_from_hf({**GOOD, field: value}, "folder/config.json")
    line = str(found.value)
    assert "\n" not in line and line.startswith("folder/config.json: ") and message in line


def test_a_bad_value_in_python_is_a_config_error_too():
    with pytest.raises(ConfigError, match="global_attn_every_n_layers must be a positive"):
        ModernBertConfig(**{**GOOD, "global_attn_every_n_layers": 0})
    assert ModernBertConfig(**GOOD).layer_types == ["full_attention", "sliding_attention",
                                                    "sliding_attention"]


@pytest.mark.parametrize("break_it", ["config", "merges"])
def test_a_folder_with_a_bad_field_or_tokenizer_is_one_line_before_work(tmp_path, capsys,
                                                                       break_it):
    from tokenizers import Tokenizer

    from tests.helpers import make_bpe_file

    folder = tmp_path / "modernbert"
    folder.mkdir()
    tokenizer = Tokenizer.from_file(make_bpe_file(folder))
    config = {**GOOD, "model_type": "modernbert", "vocab_size": tokenizer.get_vocab_size(),
              "pad_token_id": tokenizer.token_to_id("[PAD]"),
              "architectures": ["ModernBertForMaskedLM"]}
    if break_it == "config":
        config["global_attn_every_n_layers"] = 0
    else:  # a tokenizer.json whose BPE model lost its merges
        spec = json.loads((folder / "tokenizer.json").read_text())
        del spec["model"]["merges"]
        (folder / "tokenizer.json").write_text(json.dumps(spec))
    (folder / "config.json").write_text(json.dumps(config))
    if break_it == "merges":  # the config must be whole for the tokenizer to be read
        import torch
        import transformers

        torch.manual_seed(0)
        fields = {k: v for k, v in config.items() if k not in ("model_type", "architectures")}
        transformers.ModernBertForMaskedLM(transformers.ModernBertConfig(**fields)) \
            .save_pretrained(str(folder))
    out = tmp_path / "out.keras"
    capsys.readouterr()  # transformers' own lines from writing the folder
    assert main(["convert", str(folder), "--to", "keras", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "internal error" not in err, err
    expected = ("config.json: global_attn_every_n_layers" if break_it == "config"
                else "tokenizer.json: not a tokenizer")
    assert expected in err, err
    assert not out.exists()
