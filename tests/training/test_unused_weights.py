"""Keras' missing-gradient warning is hidden only when it names poolers."""

import warnings

import pytest

from albert_keras.training.unused_weights import unused_pooler_quiet


@pytest.mark.parametrize("names, hidden", [
    ("'encoder/pooler/pooler_dense/kernel'", True),
    ("'head/dense/kernel', 'head/norm/gamma'", True),  # ModernBERT's pooler (lite pretraining)
    ("'encoder/embeddings/position_embedding/embeddings'", True),
    ("'mlm_head/transform_dense/kernel'", False),  # a head that should have learned
    ("'head/dense/kernel', 'classifier/kernel'", False),
])
def test_only_a_pooler_only_warning_is_hidden(names, hidden):
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with unused_pooler_quiet():
            warnings.warn(f"Gradients do not exist for variables [{names}] when minimizing "
                          "the loss.", UserWarning)
    assert (len(shown) == 0) == hidden, [str(w.message) for w in shown]
