"""A file that carries several input lengths (``lengths``): one signature
each, sharing the weights, each validated; the sidecar names them."""

import json
import os

import numpy as np
import pytest

from albert_keras.export import ExportConfig
from albert_keras.export import ExportError
from albert_keras.export import export_tflite
from albert_keras.export.runtime import TFLiteRunner
from albert_keras.export.runtime import make_interpreter
from albert_keras.saving import load_model
from albert_keras.text.packer import pack_texts
from albert_keras.text.sentencepiece_tokenizer import SentencePiece

QUIET = dict(examples=16)
TEXTS = ["fox the quick brown fox jumps", "dog café naïve 😀", "x"]


def test_each_length_is_a_signature_that_matches_keras(classifier_folder, tmp_path):
    out = str(tmp_path / "many.tflite")
    sidecar = export_tflite(classifier_folder, out, ExportConfig(lengths=[16, 8], **QUIET))
    assert sidecar["signatures"] == {"length_8": 8, "length_16": 16, "serving_default": 32}
    assert json.load(open(out[:-len(".tflite")] + ".json"))["signatures"] == \
        sidecar["signatures"]
    for length in ("8", "16"):
        report = sidecar["validation"]["lengths"][length]
        assert report["examples"] == 16 and report["outputs"]["logits"]["max_abs_diff"] < 1e-4
    # against the Keras model itself, on texts packed at each length
    model = load_model(os.path.join(classifier_folder, "model.keras"))
    tokenizer = SentencePiece(os.path.join(classifier_folder, "spm.model"))
    for name, length in sidecar["signatures"].items():
        packed = pack_texts(tokenizer, TEXTS, None, length)
        expected = np.asarray(model.predict(dict(packed), verbose=0)["logits"])
        runner = TFLiteRunner(out, signature=name)
        for i in range(len(TEXTS)):
            got = runner({"ids": packed["token_ids"][i:i + 1],
                          "mask": packed["padding_mask"][i:i + 1],
                          "segment_ids": packed["segment_ids"][i:i + 1]})["logits"]
            np.testing.assert_allclose(got[0], expected[i], atol=1e-4)
    # A runtime that names no signature runs the first subgraph: the converter
    # orders them by name as text ("length_16" before "length_8"), so that is
    # one of the extra lengths, not serving_default (docs/on-device.md says so).
    plain = make_interpreter(out)
    assert [list(d["shape"]) for d in plain.get_input_details()] == [[1, 16]] * 3


def test_the_signatures_share_the_weights():
    """Three more lengths add op records to the file, not copies of the
    layers' weights."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras.export.converter import convert
    from albert_keras.export.converter import prepare_for_export
    from albert_keras.export.converter import serving_function
    from albert_keras.export.lengths import endpoints

    config = AlbertConfig(vocab_size=100, embedding_size=16, hidden_size=128,
                          num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                          max_position_embeddings=64, num_hidden_groups=2)
    encoder = prepare_for_export(AlbertEncoder(config))
    sizes = [len(convert(encoder, endpoints(lambda n: serving_function(encoder, n), 64,
                                            lengths), "none"))
             for lengths in ([], [8, 16, 32])]
    layer_params = sum(int(np.prod(w.shape)) for w in encoder.transformer.weights)
    assert layer_params > 390_000
    assert sizes[1] - sizes[0] < 0.1 * 4 * layer_params, sizes  # float32: 4 bytes a weight


@pytest.mark.parametrize("changes, message", [
    (dict(lengths=[32]), "--lengths 32 is not below --seq-length 32"),
    (dict(lengths=[16], quantize="int8"), "int8 calibration covers one signature"),
    (dict(lengths=[16], with_tokenizer=True), "string-in file packs its text"),
    (dict(lengths=[4]), "--lengths must be at least 8, got 4"),
])
def test_lengths_that_cannot_be_carried_are_refused_before_work(classifier_folder, tmp_path,
                                                                changes, message):
    from albert_keras.options import command_line_names

    out = tmp_path / "m.tflite"
    with command_line_names(), pytest.raises((ExportError, ValueError), match=message):
        export_tflite(classifier_folder, str(out), ExportConfig(**changes, **QUIET))
    assert not os.listdir(tmp_path)
