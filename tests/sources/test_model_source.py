"""A published checkpoint's encoder, built once with the run's settings."""

import numpy as np
import pytest

from albert_keras.models.encoder_settings import EncoderSettings
from albert_keras.sources.checkpoint_reader import model as converted_checkpoint
from albert_keras.sources.model_rebuild import rebuilt_encoder
from albert_keras.sources.model_source import ModelSource
from tests.helpers import make_hf_model
from tests.helpers import run_hf
from tests.helpers import sample_inputs
from tests.helpers import write_small_vocab

# Folders with a head of each kind: fine-tuning starts from their encoder.
HEADED = ["BertForMaskedLM", "BertForSequenceClassification", "ElectraForPreTraining",
          "AlbertForPreTraining", "DebertaV2ForMaskedLM", "DebertaV2ForSequenceClassification",
          "MobileBertForPreTraining"]


def _state(states, i):
    """Layer ``i``'s states: ours are stacked after the rows, or a list."""
    return states[i] if isinstance(states, (list, tuple)) else np.asarray(states)[:, i]


def _relative_difference(ours, theirs, mask):
    theirs = theirs.detach().numpy()
    keep = mask.astype(bool)
    return float(np.abs(np.asarray(ours) - theirs)[keep].max() / max(1.0, np.abs(theirs).max()))


@pytest.mark.parametrize("cls_name", HEADED)
def test_an_hf_folders_encoder_is_built_with_the_runs_settings(cls_name, tmp_path):
    hf_model = make_hf_model(cls_name, tmp_path)
    write_small_vocab(tmp_path)
    encoder = ModelSource(str(tmp_path)).encoder(dtype="float32", dropout=0.05,
                                                 output_hidden_states=True)
    assert encoder.config.hidden_dropout_prob == 0.05
    assert encoder.config.attention_probs_dropout_prob == 0.05
    assert encoder.dtype_policy.name == "float32"
    assert encoder.tokenizer is not None  # the folder's vocab.txt came along

    inputs = sample_inputs()
    theirs = run_hf(hf_model, inputs).hidden_states
    ours = encoder(inputs)["hidden_states"]
    for i, state in enumerate(theirs):
        assert _relative_difference(_state(ours, i), state, inputs["padding_mask"]) < 1e-5, i


def test_the_built_encoder_holds_what_converting_then_rebuilding_gave(tmp_path):
    make_hf_model("BertForSequenceClassification", tmp_path)
    settings = EncoderSettings(dtype="mixed_bfloat16", dropout=0.0)
    once = ModelSource(str(tmp_path)).encoder(dtype="mixed_bfloat16", dropout=0.0)
    twice = rebuilt_encoder(converted_checkpoint(str(tmp_path)), str(tmp_path), settings)
    assert once.dtype_policy.name == twice.dtype_policy.name == "mixed_bfloat16"
    # the same settings (the name is Keras' own counter)
    assert {**once.get_config(), "name": ""} == {**twice.get_config(), "name": ""}
    assert len(once.weights) == len(twice.weights)
    for a, b in zip(once.weights, twice.weights):
        assert a.path == b.path
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_each_kind_of_source_is_read_by_its_reader(tmp_path, init_folder):
    """The registry's first reader that claims a path reads it; a path no
    reader claims is one line naming it."""
    from albert_keras import Backbone
    from albert_keras.sources import checkpoint_reader
    from albert_keras.sources import preset_reader
    from albert_keras.sources import saved_reader
    from albert_keras.sources import tokenizer_file_reader
    from albert_keras.sources.registry import reader_of

    vocab = write_small_vocab(tmp_path / "tokenizer_only", size=40)
    hf = tmp_path / "hf"
    make_hf_model("BertModel", hf, vocab_size=128)
    assert reader_of("bert_tiny") is preset_reader
    assert reader_of(init_folder) is saved_reader
    assert reader_of(str(hf)) is checkpoint_reader
    assert reader_of(vocab) is tokenizer_file_reader
    assert reader_of(str(tmp_path / "tokenizer_only")) is tokenizer_file_reader
    with pytest.raises(FileNotFoundError, match="nope: no such file or folder"):
        reader_of(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="empty: no model here"):
        reader_of(str(tmp_path / "empty"))
    with pytest.raises(FileNotFoundError, match="a tokenizer and no model"):
        ModelSource(vocab).model
    # a preset name: its architecture with new weights, and the tokenizer given
    encoder = Backbone.from_preset("bert_tiny", tokenizer=vocab)
    assert encoder.config.hidden_size == 128 and encoder.tokenizer.vocabulary_size == \
        sum(1 for _ in open(vocab, encoding="utf-8"))
    assert Backbone.from_preset("bert_tiny").tokenizer is None
    assert ModelSource("bert_tiny").task_spec == {} and not ModelSource("bert_tiny").is_checkpoint
    assert ModelSource(str(hf)).is_checkpoint
