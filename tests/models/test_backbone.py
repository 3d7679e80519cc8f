"""The backbone entry's perturbation switch (what adversarial fine-tuning
uses) against each family's own graph."""

import keras
import numpy as np
import pytest

from albert_keras.families import build_backbone
from albert_keras.families import preset_config
from albert_keras.presets import get_preset


def _inputs():
    ids = np.random.default_rng(0).integers(5, 90, (2, 8)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 5:] = 0
    return {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": mask}


@pytest.mark.parametrize("preset,options", [
    ("albert_tiny", {"output_hidden_states": True}),
    ("bert_tiny", {"cls_only": True}),
    ("deberta_v3_tiny", {}),
    ("mobilebert_tiny", {}),
])
def test_perturbing_runs_the_graph_through_the_entry(preset, options):
    encoder = build_backbone(get_preset(preset), **options)
    inputs = _inputs()
    clean = encoder(inputs)
    with encoder.perturbing(lambda e: e):  # the entry's path, nothing added
        same = encoder(inputs)
    with encoder.perturbing(lambda e: e + 0.5):
        moved = encoder(inputs)
    after = encoder(inputs)  # the switch is off again on leaving
    for name in clean:
        np.testing.assert_allclose(np.asarray(same[name]), np.asarray(clean[name]), atol=1e-6,
                                   err_msg=name)
        np.testing.assert_array_equal(np.asarray(after[name]), np.asarray(clean[name]))
    assert np.abs(np.asarray(moved["pooled_output"]) - np.asarray(clean["pooled_output"])).max() > 1e-3
    assert keras.ops.shape(same["sequence_output"]) == keras.ops.shape(clean["sequence_output"])


# each family's encoder whose pooled output reads the first row (ModernBERT's
# with ``cls`` pooling)
@pytest.mark.parametrize("preset,overrides", [
    ("albert_tiny", {}), ("bert_tiny", {}), ("deberta_v3_tiny", {}), ("mobilebert_tiny", {}),
    ("modernbert_tiny", {"classifier_pooling": "cls"}),
])
def test_reading_first_row_keeps_the_pooled_output(preset, overrides):
    keras.utils.set_random_seed(0)
    encoder = build_backbone(preset_config(preset, **overrides))
    inputs = _inputs()
    full = encoder(inputs)
    with encoder.reading_first_row():
        cut = encoder(inputs)
    after = encoder(inputs)
    np.testing.assert_allclose(np.asarray(cut["pooled_output"]),
                               np.asarray(full["pooled_output"]), atol=1e-5)
    np.testing.assert_allclose(np.asarray(cut["sequence_output"]),
                               np.asarray(full["sequence_output"])[:, :1], atol=1e-5)
    assert tuple(after["sequence_output"].shape) == tuple(full["sequence_output"].shape)


def test_reading_first_row_leaves_every_hidden_state_when_they_are_asked_for():
    encoder = build_backbone(get_preset("bert_tiny"), output_hidden_states=True)
    inputs = _inputs()
    with encoder.reading_first_row():
        cut = encoder(inputs)
    assert tuple(cut["sequence_output"].shape)[:2] == (2, 8)
    assert tuple(cut["hidden_states"].shape)[:3] == (2, 3, 8)
