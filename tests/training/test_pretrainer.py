"""``Pretrainer`` and the pretraining-data functions: Python documents in,
the command line's model folder out, and the command line's training."""

import random

import keras
import numpy as np
import pytest

import albert_keras
from albert_keras.training.pretrain import PretrainConfig
from albert_keras.training.pretrain import pretrain
from tests.helpers import SMALL

RUN = {"model_overrides": SMALL, "batch_size": 8, "total_steps": 6, "steps_per_epoch": 3,
       "warmup_steps": 2, "eval_steps": 0, "steps_per_execution": 3, "learning_rate": 2e-3}


@pytest.fixture(autouse=True)
def _float32_policy():
    yield
    keras.mixed_precision.set_global_policy("float32")


# each first word has one second word: a masked word is predictable from its
# neighbour, which a model that learned nothing cannot use
_PAIRS = (("quick", "fox"), ("lazy", "dog"), ("brown", "windows"), ("people", "talk"),
          ("weather", "markets"), ("congress", "nation"), ("freedom", "union"),
          ("data", "model"))


def _documents(n, seed):
    rng = random.Random(seed)

    def sentence():
        return " ".join(" ".join(rng.choice(_PAIRS)) for _ in range(3)).capitalize() + "."

    return [" ".join(sentence() for _ in range(rng.randint(4, 10))) for _ in range(n)]


def test_fit_on_a_data_folder_takes_the_command_lines_steps(data_dir, spm_path, tmp_path):
    """The same settings and data give the weights ``albert-keras pretrain``
    gives: one model, optimizer and input pipeline."""
    cli = tmp_path / "cli"
    pretrain(data_dir, str(cli), PretrainConfig(**RUN))
    pretrainer = albert_keras.Pretrainer.from_preset("albert_tiny", tokenizer=spm_path, **RUN)
    history = pretrainer.fit(data_dir, epochs=2, steps_per_epoch=3, verbose=0)
    assert len(history.history["loss"]) == 2
    expected = keras.saving.load_model(str(cli / "encoder.keras")).get_weights()
    got = pretrainer.encoder.get_weights()
    assert int(pretrainer.model.optimizer.iterations.numpy()) == 6
    assert max(float(np.abs(a - b).max()) for a, b in zip(expected, got)) < 1e-6


def test_documents_in_a_model_folder_out_that_fine_tunes(spm_path, tmp_path):
    data = tmp_path / "data"
    manifest = albert_keras.pretraining_data(_documents(60, seed=1), spm_path, str(data),
                                             max_seq_length=32, max_predictions=5,
                                             dupe_factor=3, eval_fraction=0.15)
    assert manifest["splits"]["eval"]["examples"] > 0
    x, y = next(iter(albert_keras.pretraining_inputs(str(data), "mlm_sop", batch_size=4)))
    assert x["token_ids"].shape == (4, 32) and set(y) == {"masked_ids", "masked_weights",
                                                          "sop_label"}
    pretrainer = albert_keras.Pretrainer.from_preset(
        "albert_tiny", tokenizer=spm_path, **{**RUN, "total_steps": None, "warmup_steps": 20,
                                              "learning_rate": 5e-3})
    pretrainer.fit(str(data), epochs=4, steps_per_epoch=50, verbose=0)
    held_out = pretrainer.evaluate(str(data))
    # an untrained model's masked-LM loss is about log(vocabulary); the
    # training path itself is the command line's (the test above), so here
    # the bound only has to tell a model that trained from one that did not
    vocabulary = pretrainer.encoder.config.vocab_size
    assert held_out["masked_lm_loss"] < np.log(vocabulary) - 0.6, held_out
    assert held_out["masked_lm_accuracy"] >= held_out["most_frequent_token_accuracy"]
    folder = pretrainer.save_to_preset(str(tmp_path / "model"))
    classifier = albert_keras.TextClassifier.from_preset(folder, num_classes=2,
                                                         sequence_length=32)
    assert classifier.predict(["A text to classify."]).shape == (1, 2)


def test_fit_on_raw_documents_continues_a_model_folder(init_folder, tmp_path):
    pretrainer = albert_keras.Pretrainer.from_preset(init_folder, sequence_length=32,
                                                     batch_size=4, steps_per_execution=1)
    before = [w.copy() for w in pretrainer.encoder.get_weights()]
    original = keras.saving.load_model(init_folder + "/encoder.keras").get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(before, original))
    pretrainer.fit(_documents(12, seed=2), epochs=1, steps_per_epoch=2, verbose=0)
    assert any(not np.array_equal(a, b) for a, b in zip(before, pretrainer.encoder.get_weights()))


def test_bad_python_input_is_one_value_error(spm_path, tmp_path):
    with pytest.raises(ValueError, match="documents: an empty list"):
        albert_keras.pretraining_data([], spm_path, str(tmp_path / "a"))
    with pytest.raises(ValueError, match=r"documents\[1\]: int"):
        albert_keras.pretraining_data(["a text.", 3], spm_path, str(tmp_path / "b"))
    with pytest.raises(ValueError, match="a new model needs tokenizer="):
        albert_keras.Pretrainer.from_preset("albert_tiny")
    with pytest.raises(ValueError, match="unknown setting 'epochz'"):
        albert_keras.Pretrainer.from_preset("albert_tiny", tokenizer=spm_path, epochz=3)
    with pytest.raises(ValueError, match="fit first"):
        albert_keras.Pretrainer.from_preset("albert_tiny", tokenizer=spm_path).save_to_preset(
            str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()
