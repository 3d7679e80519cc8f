"""saving.load_model: a damaged .keras file is one line naming it."""

import os

import pytest

from albert_keras import AlbertEncoder
from albert_keras.config import AlbertConfig
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
