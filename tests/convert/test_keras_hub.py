"""A second oracle: keras-hub's AlbertBackbone loads the same HF folder with
its own converter; our encoder must agree with it."""

import keras_hub
import numpy as np

from albert_keras.convert import load_hf
from tests.helpers import make_hf_model
from tests.helpers import sample_inputs


def test_agrees_with_keras_hub_albert_backbone(tmp_path, capsys):
    # keras-hub reads the "albert." prefix, so save a pretraining model.
    make_hf_model("AlbertForPreTraining", tmp_path)
    theirs = keras_hub.models.AlbertBackbone.from_preset(str(tmp_path))
    assert (theirs.num_groups, theirs.num_inner_repetitions) == (2, 2)
    ours, _ = load_hf(str(tmp_path))
    inputs = sample_inputs()
    a = ours.encoder(inputs)
    b = theirs(inputs)
    mask = inputs["padding_mask"].astype(bool)
    seq = np.abs(a["sequence_output"].numpy() - np.asarray(b["sequence_output"]))[mask].max()
    pooled = np.abs(a["pooled_output"].numpy() - np.asarray(b["pooled_output"])).max()
    with capsys.disabled():
        print(f"\nkeras-hub AlbertBackbone max|diff|: sequence {seq:.2e}, pooled {pooled:.2e}")
    assert seq <= 1e-5 and pooled <= 1e-5
