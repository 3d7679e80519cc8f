"""Original TF1 checkpoints, written here with the original variable names.

The weights come from a random HF transformers model, renamed by the rules of
google-research/albert's ``modeling.py`` (the reverse of HF's own TF loader),
so the loaded model is compared against HF on the same weights.
"""

import re

import numpy as np
import pytest

from albert_keras.convert import ConversionError
from albert_keras.convert import load_checkpoint
from albert_keras.convert import load_tf1
from tests.helpers import all_positions
from tests.helpers import make_hf_model
from tests.helpers import max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs
from tests.helpers import write_tf1_checkpoint

ALBERT_RULES = [
    (r"^albert\.embeddings\.(\w+_embeddings)\.weight$", r"bert/embeddings/\1"),
    (r"^albert\.encoder\.albert_layer_groups\.(\d+)\.albert_layers\.(\d+)\.",
     r"bert/encoder/transformer/group_\1/inner_group_\2/"),
    (r"/attention\.(query|key|value)\.", r"/attention_1/self/\1."),
    (r"/attention\.dense\.", r"/attention_1/output/dense."),
    (r"/attention\.LayerNorm\.", r"/LayerNorm."),
    (r"/ffn\.", r"/ffn_1/intermediate/dense."),
    (r"/ffn_output\.", r"/ffn_1/intermediate/output/dense."),
    (r"/full_layer_layer_norm\.", r"/LayerNorm_1."),
    (r"^albert\.encoder\.embedding_hidden_mapping_in\.", r"bert/encoder/embedding_hidden_mapping_in."),
    (r"^albert\.embeddings\.LayerNorm\.", r"bert/embeddings/LayerNorm."),
    (r"^albert\.pooler\.", r"bert/pooler/dense."),
    (r"^predictions\.dense\.", r"cls/predictions/transform/dense."),
    (r"^predictions\.LayerNorm\.", r"cls/predictions/transform/LayerNorm."),
    (r"^predictions\.bias$", r"cls/predictions/output_bias"),
]
BERT_RULES = [
    (r"^bert\.embeddings\.(\w+_embeddings)\.weight$", r"bert/embeddings/\1"),
    (r"^bert\.embeddings\.LayerNorm\.", r"bert/embeddings/LayerNorm."),
    (r"^bert\.encoder\.layer\.(\d+)\.", r"bert/encoder/layer_\1/"),
    (r"/attention\.self\.(query|key|value)\.", r"/attention/self/\1."),
    (r"/attention\.output\.(dense|LayerNorm)\.", r"/attention/output/\1."),
    (r"/intermediate\.dense\.", r"/intermediate/dense."),
    (r"/output\.(dense|LayerNorm)\.", r"/output/\1."),
    (r"^bert\.pooler\.dense\.", r"bert/pooler/dense."),
    (r"^cls\.predictions\.transform\.(dense|LayerNorm)\.", r"cls/predictions/transform/\1."),
    (r"^cls\.predictions\.bias$", r"cls/predictions/output_bias"),
]


def to_tf1(state_dict, rules, seq_relationship):
    out = {}
    for name, tensor in state_dict.items():
        value = tensor.numpy()
        if name.endswith("position_ids") or ".decoder." in name:
            continue
        if name.startswith(seq_relationship):
            # The original stores these as output_weights [2, H] / output_bias.
            leaf = "output_weights" if name.endswith("weight") else "output_bias"
            out[f"cls/seq_relationship/{leaf}"] = value
            continue
        for pattern, repl in rules:
            name = re.sub(pattern, repl, name)
        if re.search(r"LayerNorm(_1)?\.weight$", name):
            name = name[: -len(".weight")] + "/gamma"
        elif re.search(r"LayerNorm(_1)?\.bias$", name):
            name = name[: -len(".bias")] + "/beta"
        elif name.endswith(".weight"):
            name, value = name[: -len(".weight")] + "/kernel", value.T
        elif name.endswith(".bias"):
            name = name[: -len(".bias")] + "/bias"
        assert "." not in name, name
        out[name] = value
    return out


def albert_original_config(hf_config):
    return {
        "attention_probs_dropout_prob": 0.0,
        "hidden_act": "gelu",  # the TF1 code's gelu is the tanh form
        "hidden_dropout_prob": 0.0,
        "embedding_size": hf_config.embedding_size,
        "hidden_size": hf_config.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": hf_config.intermediate_size,
        "max_position_embeddings": hf_config.max_position_embeddings,
        "num_attention_heads": hf_config.num_attention_heads,
        "num_hidden_layers": hf_config.num_hidden_layers,
        "num_hidden_groups": hf_config.num_hidden_groups,
        "inner_group_num": hf_config.inner_group_num,
        "net_structure_type": 0,
        "gap_size": 0,
        "num_memory_blocks": 0,
        "down_scale_factor": 1,
        "type_vocab_size": hf_config.type_vocab_size,
        "vocab_size": hf_config.vocab_size,
    }


def _compare(ours, hf_model, inputs):
    hf = run_hf(hf_model, inputs)
    out = ours({**inputs, "masked_positions": all_positions(inputs)})
    mask = inputs["padding_mask"]
    sop = hf.sop_logits if hasattr(hf, "sop_logits") else hf.seq_relationship_logits
    enc = ours.encoder(inputs)
    return {
        "sequence": max_diff(enc["sequence_output"], hf.hidden_states[-1], mask),
        "mlm": max_diff(out["mlm_logits"], hf.prediction_logits, mask),
        "sop": max_diff(out["sop_logits"], sop),
    }


@pytest.mark.parametrize("prefix", ["", "module/"])
def test_albert_tf1_checkpoint_all_groups(tmp_path, prefix, capsys):
    hf_model = make_hf_model("AlbertForPreTraining", tmp_path / "hf")
    tensors = to_tf1(hf_model.state_dict(), ALBERT_RULES, "sop_classifier.classifier")
    assert "bert/encoder/transformer/group_1/inner_group_1/LayerNorm_1/gamma" in tensors
    ckpt = tmp_path / "tf1"
    ckpt.mkdir()
    write_tf1_checkpoint(ckpt, tensors, albert_original_config(hf_model.config),
                         "albert_config.json", prefix=prefix)
    ours, report = load_checkpoint(str(ckpt))  # folder: finds the latest step
    assert report["loaded"] == ["encoder", "mlm", "pooler", "sop"]
    diffs = _compare(ours, hf_model, sample_inputs())
    with capsys.disabled():
        print(f"\nTF1 ALBERT checkpoint vs HF max|diff|: {diffs}")
    assert max(diffs.values()) <= 1e-5, diffs


def bert_original_config(c):
    """google-research/bert's bert_config.json for an HF BertConfig."""
    return {
        "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "hidden_size": c.hidden_size, "initializer_range": 0.02,
        "intermediate_size": c.intermediate_size,
        "max_position_embeddings": c.max_position_embeddings,
        "num_attention_heads": c.num_attention_heads, "num_hidden_layers": c.num_hidden_layers,
        "type_vocab_size": c.type_vocab_size, "vocab_size": c.vocab_size,
    }


def test_bert_tf1_checkpoint(tmp_path):
    # TF1 BERT's gelu is the tanh form too, so the HF oracle uses gelu_new.
    hf_model = make_hf_model("BertForPreTraining", tmp_path / "hf", hidden_act="gelu_new")
    tensors = to_tf1(hf_model.state_dict(), BERT_RULES, "cls.seq_relationship")
    ckpt = tmp_path / "tf1"
    ckpt.mkdir()
    config = bert_original_config(hf_model.config)
    prefix = write_tf1_checkpoint(ckpt, tensors, config, "bert_config.json", slots=False)
    ours, _ = load_tf1(prefix)
    assert ours.config.sharing == "none"
    assert max(_compare(ours, hf_model, sample_inputs()).values()) <= 1e-5


def test_tf1_missing_and_misshapen_tensors(tmp_path):
    hf_model = make_hf_model("AlbertForPreTraining", tmp_path / "hf")
    tensors = to_tf1(hf_model.state_dict(), ALBERT_RULES, "sop_classifier.classifier")
    config = albert_original_config(hf_model.config)
    name = "bert/encoder/transformer/group_1/inner_group_0/attention_1/self/key/kernel"

    (tmp_path / "a").mkdir()
    write_tf1_checkpoint(tmp_path / "a", {k: v for k, v in tensors.items() if k != name},
                         config, "albert_config.json", slots=False)
    with pytest.raises(ConversionError, match=f"missing tensor {name}"):
        load_tf1(str(tmp_path / "a"))

    (tmp_path / "b").mkdir()
    write_tf1_checkpoint(tmp_path / "b", {**tensors, name: np.zeros((3, 32), np.float32)},
                         config, "albert_config.json", slots=False)
    with pytest.raises(ConversionError, match=r"key/kernel has shape \(3, 32\).*\(32, 32\)"):
        load_tf1(str(tmp_path / "b"))


def test_no_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(ConversionError, match="neither an HF folder"):
        load_checkpoint(str(tmp_path))


def test_a_tf1_bert_folder_with_vocab_goes_straight_into_the_commands(tmp_path):
    """The original release layout (bert_config.json, vocab.txt, model.ckpt-*)
    works in fill-mask and embed with no convert step, and scores as HF."""
    from albert_keras.drivers import inference
    from tests.helpers import assert_fill_mask_is_hfs
    from tests.helpers import make_wordpiece_vocab

    ckpt = tmp_path / "tf1"
    vocab = make_wordpiece_vocab(ckpt, lowercase=True, vocab_size=300)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    hf_model = make_hf_model("BertForPreTraining", tmp_path / "hf", hidden_act="gelu_new",
                             vocab_size=size)
    config = bert_original_config(hf_model.config)
    tensors = to_tf1(hf_model.state_dict(), BERT_RULES, "cls.seq_relationship")
    write_tf1_checkpoint(ckpt, tensors, config, "bert_config.json", slots=False)
    assert_fill_mask_is_hfs(ckpt, hf_model, vocab)
    vectors = inference.embed(str(ckpt), ["the fox", "naïve café"])
    assert vectors.shape == (2, hf_model.config.hidden_size)
