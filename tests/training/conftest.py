"""Pretraining data shared by the training tests."""

import pytest

from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig


def _make_data(tmp_path_factory, corpus_file, spm_path, name, max_seq_length, max_predictions):
    out = tmp_path_factory.mktemp("pretrain") / name
    create_pretraining_data(
        [corpus_file], spm_path, str(out),
        DataConfig(max_seq_length=max_seq_length, max_predictions=max_predictions,
                   dupe_factor=2, eval_fraction=0.1))
    return str(out)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, corpus_file, spm_path):
    return _make_data(tmp_path_factory, corpus_file, spm_path, "data", 32, 5)


@pytest.fixture(scope="module")
def short_data_dir(tmp_path_factory, corpus_file, spm_path):
    """The same corpus and tokenizer as ``data_dir``, in sequences of 16."""
    return _make_data(tmp_path_factory, corpus_file, spm_path, "data_16", 16, 3)
