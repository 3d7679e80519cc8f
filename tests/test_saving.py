"""saving.load_model: a damaged .keras file is one line naming it."""

import os

import pytest

from albert_keras import AlbertEncoder
from albert_keras.models.albert.albert_config import AlbertConfig
from albert_keras.saving import load_model
from albert_keras.saving import save_model
from tests.helpers import SMALL


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("saving") / "encoder.keras")
    save_model(AlbertEncoder(AlbertConfig(vocab_size=50, **SMALL)),
               path)
    return path


def test_round_trip(saved):
    assert load_model(saved).config.vocab_size == 50


@pytest.mark.parametrize("how", ["half", "junk", "corrupt"])
def test_a_damaged_keras_file_is_named(saved, tmp_path, how):
    data = bytearray(open(saved, "rb").read())
    if how == "half":
        data = data[: len(data) // 2]
    elif how == "junk":
        data = bytearray(b"not a model")
    else:  # bytes inside the archive, its directory intact
        for i in range(100, 1500):
            data[i] ^= 0x55
    path = str(tmp_path / "broken.keras")
    open(path, "wb").write(bytes(data))
    with pytest.raises(ValueError) as error:
        load_model(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert "File not found" not in message  # Keras' words for a file that is there
    assert os.path.exists(path)


_SAVED = os.path.join(os.path.dirname(__file__), "saved_models")
# file -> the inputs its outputs were computed on (written at commit a945a1c, before
# the renaming: git show a945a1c:tests/saved_models/write_files.py)
_SAVED_INPUTS = {"encoder": "inputs", "pretrainer": "pretraining", "classifier": "inputs",
                 "tagger": "inputs", "qa": "inputs", "choice": "choices",
                 "discriminator": "inputs", "embedder": "inputs",
                 "mobilebert_classifier": "inputs"}


@pytest.mark.parametrize("name", sorted(_SAVED_INPUTS))
def test_files_written_before_the_renaming_load_with_the_same_outputs(name):
    """.keras files written by the release before the generic parts got
    generic names (their classes saved as SequenceClassifier, EncoderPretrainer,
    ...) load, tokenizer and training state included, and compute what they
    computed then."""
    import numpy as np

    stored = np.load(os.path.join(_SAVED, "outputs.npz"))
    prefix = _SAVED_INPUTS[name]
    inputs = {k.split("/", 1)[1]: stored[k] for k in stored.files if k.startswith(prefix + "/")}
    model = load_model(os.path.join(_SAVED, f"{name}.keras"))
    outputs = model(inputs, training=False)
    outputs = outputs if isinstance(outputs, dict) else {"out": outputs}
    expected = {k.split("/", 1)[1]: stored[k] for k in stored.files if k.startswith(name + "/")}
    assert set(outputs) == set(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(np.asarray(outputs[key]), value, atol=1e-6, rtol=0)
    encoder = getattr(model, "encoder", model)
    assert encoder.tokenizer is not None and encoder.tokenizer.vocabulary_size == 60
    if name == "classifier":  # a training checkpoint: its optimizer came back too
        assert model.optimizer is not None and model.optimizer.iterations.numpy() == 1
        assert model.labels == ("neg", "pos")


def test_a_file_written_when_albert_config_held_debertas_fields_loads_as_deberta():
    """A classifier whose ``AlbertConfig`` had relative attention on, saved
    before those fields moved to ``DebertaConfig`` (written at f348750 by
    ``git show 5eecfe9:tests/saved_models/write_albert_relative.py``), loads
    as DeBERTa's class with every field and the logits it computed then."""
    import dataclasses

    import numpy as np

    from albert_keras import DebertaConfig

    stored = np.load(os.path.join(_SAVED, "albert_relative_outputs.npz"))
    inputs = {k.split("/", 1)[1]: stored[k] for k in stored.files if k.startswith("inputs/")}
    model = load_model(os.path.join(_SAVED, "albert_relative_classifier.keras"))
    config = model.encoder.config
    assert type(config) is DebertaConfig
    assert (config.sharing, config.embedding_size, config.position_buckets,
            config.share_att_key, config.position_biased_input) == ("all", 16, 4, True, False)
    assert dataclasses.asdict(config)["pooler_hidden_act"] == "tanh"  # ALBERT's, not DeBERTa's
    np.testing.assert_allclose(np.asarray(model(inputs, training=False)["logits"]), stored["logits"],
                               atol=1e-6, rtol=0)
