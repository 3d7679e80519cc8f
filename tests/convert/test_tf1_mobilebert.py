"""Original google-research MobileBERT TF1 checkpoints, written here with the
original variable names.

The weights come from a random HF transformers MobileBERT, renamed by the
scopes of google-research ``mobilebert/modeling.py`` and
``run_pretraining.py`` (``FakeLayerNorm``, ``ffn_layer_N``,
``extra_output_weights``), so the loaded model is compared against
transformers on the same weights.
"""

import json
import re

import numpy as np
import pytest

from albert_keras.config_dicts import ConfigError
from albert_keras.convert import load_checkpoint
from albert_keras.convert import load_tf1
from albert_keras.models.mobilebert.tf1 import config_from_original
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from tests.helpers import MOBILEBERT
from tests.helpers import all_positions
from tests.helpers import make_hf_model
from tests.helpers import relative_max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs
from tests.helpers import write_tf1_checkpoint

# HF name -> the original scope, per modeling.py's variable_scope calls
RULES = [
    (r"^mobilebert\.embeddings\.(\w+_embeddings)\.weight$", r"bert/embeddings/\1"),
    (r"^mobilebert\.embeddings\.", r"bert/embeddings/"),
    (r"^mobilebert\.encoder\.layer\.(\d+)\.", r"bert/encoder/layer_\1/"),
    (r"^mobilebert\.pooler\.dense\.", r"bert/pooler/dense/"),
    (r"/ffn\.(\d+)\.", r"/ffn_layer_\1/"),
    (r"^cls\.predictions\.transform\.", r"cls/predictions/transform/"),
]
ORIGINAL_KEYS = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                 "intermediate_size", "max_position_embeddings", "type_vocab_size",
                 "initializer_range", "embedding_size", "trigram_input", "use_bottleneck",
                 "intra_bottleneck_size", "use_bottleneck_attention",
                 "key_query_shared_bottleneck", "num_feedforward_networks",
                 "normalization_type", "classifier_activation")


def to_original(state_dict, no_norm):
    """The TF1 variables of an HF ``MobileBertForPreTraining`` state dict."""
    special = {"cls.predictions.bias": ("cls/predictions/output_bias", False),
               "cls.predictions.dense.weight": ("cls/predictions/extra_output_weights", True),
               "cls.seq_relationship.weight": ("cls/seq_relationship/output_weights", False),
               "cls.seq_relationship.bias": ("cls/seq_relationship/output_bias", False)}
    out = {}
    for name, tensor in state_dict.items():
        value = tensor.numpy()
        if name.endswith("position_ids") or ".decoder." in name:
            continue  # a buffer; the decoder is the tied word table
        if name in special:
            target, transpose = special[name]
            out[target] = value.T if transpose else value
            continue
        for pattern, repl in RULES:
            name = re.sub(pattern, repl, name)
        name = name.replace(".", "/")
        if "/LayerNorm/" in name:
            norm = "FakeLayerNorm" if no_norm and not name.startswith("cls/") else "LayerNorm"
            name = name.replace("/LayerNorm/", f"/{norm}/")
            name = name.replace("/weight", "/gamma").replace("/bias", "/beta")
        elif name.endswith("/weight") and not name.endswith("_embeddings"):
            name, value = name[: -len("/weight")] + "/kernel", value.T
        out[name] = value
    return out


def original_config(hf_config, hidden_act):
    data = {k: getattr(hf_config, k) for k in ORIGINAL_KEYS}
    return {**data, "hidden_act": hidden_act, "hidden_dropout_prob": 0.0,
            "attention_probs_dropout_prob": 0.0}


@pytest.mark.parametrize("layout, hidden_act", [
    ({}, "relu"),  # the published layout: no_norm, trigram, shared Q/K bottleneck, 3 FFNs
    # the original's "gelu" is the tanh form; LayerNorm; bottleneck attention; one FFN
    (dict(normalization_type="layer_norm", hidden_act="gelu_new", num_feedforward_networks=1,
          use_bottleneck_attention=True, key_query_shared_bottleneck=False,
          trigram_input=False, classifier_activation=True), "gelu"),
], ids=["published", "layer_norm_gelu"])
def test_original_checkpoint_matches_transformers(tmp_path, layout, hidden_act):
    hf = make_hf_model("MobileBertForPreTraining", tmp_path / "hf", **layout)
    tensors = to_original(hf.state_dict(), hf.config.normalization_type == "no_norm")
    tensors["teacher/bert/embeddings/word_embeddings"] = np.zeros((3, 2), np.float32)
    folder = tmp_path / "tf1"
    folder.mkdir()
    write_tf1_checkpoint(folder, tensors, original_config(hf.config, hidden_act),
                         "bert_config.json")
    model, report = load_tf1(str(folder))
    assert isinstance(model, EncoderPretrainer) and report["teacher_left_out"] == 1
    inputs = sample_inputs()
    theirs = run_hf(hf, inputs)
    mask = inputs["padding_mask"]
    ours = model.encoder.encode(inputs)
    for i, (a, b) in enumerate(zip(ours["hidden_states"], theirs.hidden_states, strict=True)):
        assert relative_max_diff(a, b, mask) < 1e-5, i
    out = model({**inputs, "masked_positions": all_positions(inputs)})
    assert relative_max_diff(out["mlm_logits"], theirs.prediction_logits, mask) < 1e-5
    assert relative_max_diff(out["sop_logits"], theirs.seq_relationship_logits) < 1e-5
    # the generic entry point finds the format by itself
    again, _ = load_checkpoint(str(folder))
    assert type(again.encoder).__name__ == "MobileBertEncoder"


def test_missing_keys_take_the_original_codes_defaults():
    config = config_from_original({"vocab_size": 100, "hidden_size": 64,
                                   "num_attention_heads": 2, "use_bottleneck": True,
                                   "intra_bottleneck_size": 32})
    assert (config.normalization_type, config.num_feedforward_networks, config.trigram_input,
            config.key_query_shared_bottleneck, config.hidden_act, config.embedding_size,
            config.type_vocab_size) == ("layer_norm", 1, False, False, "gelu_new", 64, 16)


def test_the_quantization_aware_release_config_reads():
    """google-research's ``..._OPT_QAT.json`` form: relu6 and NoNorm."""
    config = config_from_original({**MOBILEBERT, "use_bottleneck": True, "hidden_act": "relu6",
                                   "normalization_type": "no_norm"})
    assert (config.hidden_act, config.normalization_type) == ("relu6", "no_norm")


@pytest.mark.parametrize("change, message", [
    ({"use_quantized_training": True}, "unknown MobileBERT config key 'use_quantized_training'"),
    ({"hidden_act": "swish"}, "hidden_act must be one of"),
    ({"vocab_size": None}, "vocab_size"),
])
def test_bad_original_configs_are_one_line_errors(tmp_path, change, message):
    data = {**MOBILEBERT, "use_bottleneck": True, **change}
    data = {k: v for k, v in data.items() if v is not None}
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=message) as e:
        config_from_original(data, str(path))
    assert str(e.value).startswith(str(path)) and "\n" not in str(e.value)


def test_the_release_layout_goes_straight_into_fill_mask(tmp_path):
    """google-research's release layout (bert_config.json, vocab.txt, the
    checkpoint) in fill-mask with no convert step: the same top tokens as
    transformers on the same weights and tokens."""
    from tests.helpers import assert_fill_mask_is_hfs
    from tests.helpers import make_wordpiece_vocab

    folder = tmp_path / "release"
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=300)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    hf = make_hf_model("MobileBertForPreTraining", tmp_path / "hf", vocab_size=size)
    write_tf1_checkpoint(folder, to_original(hf.state_dict(), True),
                         original_config(hf.config, "relu"), "bert_config.json", slots=False)
    assert_fill_mask_is_hfs(folder, hf, vocab)
