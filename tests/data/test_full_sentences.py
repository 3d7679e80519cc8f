import dataclasses
import os

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from albert_keras.data.full_sentences import pack_full_sentences
from albert_keras.data.reader import pretraining_dataset
from albert_keras.training.objectives import get_objective
from albert_keras.training.pipeline import resolved_data_config
from albert_keras.training.pretrain_config import PretrainConfig
from tests.helpers import folder_bytes

SEP = 3

# -- packing -----------------------------------------------------------------------------------

documents_strategy = st.lists(  # ids from 5 up, so none is the separator
    st.lists(st.lists(st.integers(5, 50), min_size=0, max_size=12), max_size=6), max_size=6)


def _units(documents, limit):
    """(document, ids) of every sentence piece, in reading order."""
    return [(d, s[i:i + limit]) for d, doc in enumerate(documents) for s in doc
            for i in range(0, len(s), limit)]


@settings(max_examples=200, deadline=None)
@given(documents=documents_strategy, max_seq_length=st.integers(3, 20))
def test_packing_is_greedy_over_whole_sentences(documents, max_seq_length):
    limit = max_seq_length - 2
    inputs = pack_full_sentences(documents, max_seq_length, SEP)
    units = _units(documents, limit)
    i = 0
    for n, packed in enumerate(inputs):
        assert 0 < len(packed) <= limit
        # the input is a run of consecutive pieces, with one separator where
        # the document changes
        expected, first = [], i
        while i < len(units) and len(expected) < len(packed):
            if i > first and units[i][0] != units[i - 1][0]:
                expected.append(SEP)
            expected += units[i][1]
            i += 1
        assert packed == expected
        # and the next piece would not have fitted
        if i < len(units):
            extra = len(units[i][1]) + (units[i][0] != units[i - 1][0])
            assert len(packed) + extra > limit
    assert i == len(units)


def test_sentences_stay_whole_and_documents_are_separated():
    documents = [[[5, 6, 7], [8, 9]], [[10, 11]], [[12, 13, 14, 15]]]
    assert pack_full_sentences(documents, 10, SEP) == [
        [5, 6, 7, 8, 9, SEP, 10, 11], [12, 13, 14, 15]]
    # no room for the separator and [10, 11]: the next input starts there
    assert pack_full_sentences(documents, 8, SEP) == [
        [5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15]]


def test_a_sentence_longer_than_an_input_is_cut_into_pieces():
    assert pack_full_sentences([[[5, 6, 7, 8, 9, 10, 11]]], 5, SEP) == [
        [5, 6, 7], [8, 9, 10], [11]]


def test_max_seq_length_below_three_is_refused():
    with pytest.raises(ValueError, match="at least 3"):
        pack_full_sentences([[[5]]], 2, SEP)


# -- data folders ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def packed_dirs(tmp_path_factory, corpus_file, spm_path):
    root = tmp_path_factory.mktemp("packed")
    config = DataConfig(max_seq_length=48, max_predictions=8, dupe_factor=2, eval_fraction=0.1,
                        examples_per_shard=100, seed=7, packing="full_sentences")
    manifests = {w: create_pretraining_data([corpus_file], spm_path, str(root / f"w{w}"),
                                            config, workers=w) for w in (1, 2)}
    pairs = create_pretraining_data([corpus_file], spm_path, str(root / "pairs"),
                                    dataclasses.replace(config, packing="pairs"))
    return root, manifests, pairs


def test_packed_folder_is_the_same_whatever_the_workers(packed_dirs):
    root, _, _ = packed_dirs
    assert folder_bytes(root / "w1") == folder_bytes(root / "w2")


def test_packed_examples_are_full_one_segment_and_unlabelled(packed_dirs):
    root, manifests, pairs = packed_dirs
    m = manifests[1]
    assert m["config"]["packing"] == "full_sentences"
    assert pairs["config"]["packing"] == "pairs"
    train = m["splits"]["train"]
    assert train["sop_label_1_fraction"] == 0
    assert 0.12 < train["mask_rate"] < 0.16
    # RoBERTa's point: inputs run to the length, where pairs end with their
    # documents (and 10% are cut short on purpose)
    assert train["mean_tokens"] > max(40, pairs["splits"]["train"]["mean_tokens"] + 3), (
        train["mean_tokens"], pairs["splits"]["train"]["mean_tokens"])
    batch = next(iter(pretraining_dataset(str(root / "w1"), batch_size=64, shuffle=False)))
    tokens = batch["token_ids"].numpy()
    mask = batch["padding_mask"].numpy()
    assert (tokens[:, 0] == 2).all()  # [CLS]
    ends = mask.sum(1) - 1
    assert (tokens[np.arange(len(tokens)), ends] == 3).all()  # [SEP] closes every input
    assert (batch["segment_ids"].numpy() == 0).all()
    assert (batch["sop_label"].numpy() == 0).all()
    # some inputs cross a document boundary: a [SEP] inside
    inner = [(row[1:end] == 3).any() for row, end in zip(tokens, ends)]
    assert any(inner)
    # no [SEP] is ever masked
    positions = batch["masked_positions"].numpy()
    weights = batch["masked_weights"].numpy()
    labels = batch["masked_ids"].numpy()
    assert not ((labels == 3) & (weights > 0)).any()
    assert (positions[weights > 0] > 0).all()


def test_held_out_documents_are_the_same_as_with_pairs(packed_dirs):
    _, manifests, pairs = packed_dirs
    assert (manifests[1]["splits"]["eval"]["document_indices"]
            == pairs["splits"]["eval"]["document_indices"])


# -- objectives and the pipeline ---------------------------------------------------------------


def test_sentence_tasks_refuse_packed_data(packed_dirs):
    _, manifests, pairs = packed_dirs
    packed = manifests[1]
    for name in ("mlm_sop", "auto"):
        with pytest.raises(ValueError, match="sentence-order labels.*--packing"):
            get_objective(name, packed, PretrainConfig(objective=name))
    with pytest.raises(ValueError, match="sentence-order labels"):
        get_objective("rtd", packed, PretrainConfig(objective="rtd", rtd_sop=True))
    assert get_objective("mlm", packed, PretrainConfig(objective="mlm")).name == "mlm"
    assert get_objective("rtd", packed, PretrainConfig(objective="rtd")).name == "rtd"
    assert get_objective("mlm_sop", pairs, PretrainConfig()).name == "mlm_sop"


def test_auto_packing_follows_the_objective():
    def packing(objective, **data):
        config = DataConfig(**data) if data else None
        return resolved_data_config(config, PretrainConfig(objective=objective)).packing

    assert packing("mlm") == "full_sentences"
    assert packing("mlm_sop") == "pairs"
    assert packing("rtd") == "pairs"
    assert packing("mlm", packing="pairs") == "pairs"
    assert packing("auto", packing="auto") == "pairs"


def test_nsp_and_full_sentences_are_refused_together():
    with pytest.raises(ValueError, match="--nsp"):
        DataConfig(packing="full_sentences", random_next=True).validate()


def test_beam_refuses_full_sentences(tmp_path, corpus_file, spm_path):
    pytest.importorskip("apache_beam")
    from albert_keras.data.beam_pipeline import create_pretraining_data_beam

    with pytest.raises(ValueError, match="in-process runner"):
        create_pretraining_data_beam([corpus_file], spm_path, str(tmp_path / "out"),
                                     DataConfig(packing="full_sentences"))
    assert not os.path.exists(tmp_path / "out")


def test_mlm_pretrains_on_packed_data(packed_dirs, tmp_path):
    import keras

    from albert_keras.training.pretrain import pretrain
    from tests.helpers import SMALL

    root, _, _ = packed_dirs
    config = PretrainConfig(objective="mlm", model_overrides=SMALL, batch_size=8,
                            total_steps=4, steps_per_epoch=2, warmup_steps=1, eval_steps=1,
                            steps_per_execution=2, precision="float32")
    try:
        metrics = pretrain(str(root / "w1"), str(tmp_path / "run"), config)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert metrics["steps"] == 4 and 0 <= metrics["masked_lm_accuracy"] <= 1
    assert "sop_accuracy" not in metrics
