"""A data folder whose records disagree with its manifest or tokenizer is named
before training (or, for a record deep in a shard, when training meets it)."""

import json
import os
import shutil

import pytest
import tensorflow as tf

from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from albert_keras.data.reader import DataError
from albert_keras.data.reader import verify_shards
from albert_keras.data.record_check import find_bad_record
from albert_keras.files import sha256_file
from albert_keras.training.pretrain import TrainingError
from albert_keras.training.pretrain import pretrain
from albert_keras.training.pretrain_config import PretrainConfig
from tests.helpers import SMALL


@pytest.fixture(scope="module")
def made(tmp_path_factory, corpus_file, spm_path):
    out = tmp_path_factory.mktemp("check") / "data"
    create_pretraining_data([corpus_file], spm_path, str(out),
                            DataConfig(max_seq_length=32, max_predictions=5, dupe_factor=1,
                                       examples_per_shard=40))
    return str(out)


@pytest.fixture
def data(made, tmp_path):
    copy = str(tmp_path / "data")
    shutil.copytree(made, copy)
    return copy


def _edit_manifest(data, **changes):
    path = os.path.join(data, "manifest.json")
    manifest = json.load(open(path))
    for key, value in changes.items():
        if key in manifest:
            manifest[key] = value
        else:
            manifest["config"][key] = value
    json.dump(manifest, open(path, "w"))
    return manifest


def _replace_record(data, index, make_bad, shard_index=0):
    """Rewrites a shard with record ``index`` broken; the manifest's checksum
    is updated, so only parsing can tell."""
    manifest = json.load(open(os.path.join(data, "manifest.json")))
    shard = manifest["splits"]["train"]["shards"][shard_index]
    path = os.path.join(data, shard["file"])
    records = [r.numpy() for r in tf.data.TFRecordDataset(path)]
    records[index] = make_bad(records[index])
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    shard.update(bytes=os.path.getsize(path), sha256=sha256_file(path))
    json.dump(manifest, open(os.path.join(data, "manifest.json"), "w"))
    return path


def _short_token_ids(raw):
    example = tf.train.Example.FromString(raw)
    del example.features.feature["token_ids"].int64_list.value[-4:]
    return example.SerializeToString()


def test_a_vocabulary_that_disagrees_with_the_tokenizer_is_named(data):
    _edit_manifest(data, vocab_size=30000)
    with pytest.raises(DataError, match=r"manifest.json: vocab_size 30000 but its tokenizer"):
        verify_shards(data, "train")


def test_a_sequence_length_that_disagrees_with_the_shards_is_named(data):
    _edit_manifest(data, max_seq_length=64)
    with pytest.raises(DataError, match=r"train-00000-of-\d+\.tfrecord: record 0 does not "
                                        r"match the manifest \(sequence 64"):
        verify_shards(data, "train")


def test_a_bad_record_deep_in_a_shard_is_named_when_training_meets_it(data, tmp_path):
    # in every shard, so that the shuffled batches of a short run meet one
    shards = len(json.load(open(os.path.join(data, "manifest.json")))["splits"]["train"][
        "shards"])
    path = [_replace_record(data, 7, _short_token_ids, i) for i in range(shards)][0]
    verify_shards(data, "train")  # the first records of each shard are fine
    bad = find_bad_record(data, json.load(open(os.path.join(data, "manifest.json"))), "train")
    assert str(bad).startswith(f"{path}: record 7 does not match the manifest")
    out = str(tmp_path / "run")
    with pytest.raises(TrainingError) as error:
        pretrain(data, out, PretrainConfig(
            model_overrides=SMALL, batch_size=8, total_steps=20, steps_per_epoch=10,
            warmup_steps=1, eval_steps=0, steps_per_execution=1, precision="float32",
            dynamic_masking=False))
    assert str(error.value) == str(bad)
    assert not os.path.exists(out)  # failed before its first checkpoint: no folder left


def test_a_record_that_is_not_an_example_is_named(data):
    path = _replace_record(data, 0, lambda raw: b"\x01\x02 not a proto")
    with pytest.raises(DataError, match=f"{path}: record 0 does not match the manifest"):
        verify_shards(data, "train")
