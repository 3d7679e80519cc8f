import numpy as np
import pytest
import tensorflow as tf

from albert_keras.data.reader import DataError
from albert_keras.data.reader import pretraining_dataset
from albert_keras.data.create import DataConfig
from albert_keras.data.create import create_pretraining_data


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, corpus_file, spm_path):
    out = tmp_path_factory.mktemp("reader") / "data"
    create_pretraining_data(
        [corpus_file], spm_path, str(out),
        DataConfig(max_seq_length=48, max_predictions=8, dupe_factor=3,
                   eval_fraction=0.1, examples_per_shard=60),
        log=lambda *a: None)
    return str(out)


def test_features_are_int32_with_static_shapes(data_dir):
    ds = pretraining_dataset(data_dir, batch_size=4)
    spec = ds.element_spec
    expected = {"token_ids": 48, "segment_ids": 48, "padding_mask": 48,
                "masked_positions": 8, "masked_ids": 8, "masked_weights": 8}
    for name, width in expected.items():
        assert spec[name].shape.as_list() == [4, width], name
    assert spec["sop_label"].shape.as_list() == [4]
    assert all(spec[k].dtype == tf.int32 for k in expected if k != "masked_weights")
    batch = next(iter(ds))
    tokens = batch["token_ids"].numpy()
    assert (tokens[:, 0] == 2).all()  # [CLS]
    assert set(np.unique(batch["sop_label"])) <= {0, 1}


def test_eval_split_without_repeat_sees_every_example_once(data_dir):
    import json
    import os

    manifest = json.load(open(os.path.join(data_dir, "manifest.json")))
    count = manifest["splits"]["eval"]["examples"]
    ds = pretraining_dataset(data_dir, "eval", batch_size=5, shuffle=False,
                             repeat=False, drop_remainder=False)
    assert sum(int(b["sop_label"].shape[0]) for b in ds) == count


def test_input_context_shards_between_pipelines(data_dir):
    seen = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                             num_replicas_in_sync=2)
        ds = pretraining_dataset(data_dir, batch_size=1, shuffle=False, repeat=False,
                                 drop_remainder=False, input_context=context)
        seen.append({tuple(b["token_ids"].numpy()[0]) for b in ds})
    full = pretraining_dataset(data_dir, batch_size=1, shuffle=False, repeat=False,
                               drop_remainder=False)
    everything = {tuple(b["token_ids"].numpy()[0]) for b in full}
    assert seen[0] and seen[1] and not (seen[0] & seen[1])
    assert seen[0] | seen[1] == everything


def test_dynamic_masking_keeps_the_sequences(data_dir):
    static = next(iter(pretraining_dataset(data_dir, batch_size=16, shuffle=False)))
    dynamic_ds = pretraining_dataset(data_dir, batch_size=16, shuffle=False,
                                     dynamic_masking=True, seed=1)
    it = iter(dynamic_ds)
    first = next(it)

    def original(batch):
        tokens = batch["token_ids"].numpy().copy()
        for row in range(tokens.shape[0]):
            w = batch["masked_weights"].numpy()[row] > 0
            tokens[row, batch["masked_positions"].numpy()[row][w]] = (
                batch["masked_ids"].numpy()[row][w])
        return tokens

    np.testing.assert_array_equal(original(first), original(static))
    np.testing.assert_array_equal(first["sop_label"], static["sop_label"])
    assert not np.array_equal(first["masked_positions"], static["masked_positions"])


def test_corrupted_shard_is_named(data_dir, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(data_dir, copy)
    shard = sorted(p for p in copy.iterdir() if p.name.startswith("train-"))[0]
    data = bytearray(shard.read_bytes())
    data[100] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(DataError, match=f"{shard.name}: corrupted shard"):
        pretraining_dataset(str(copy))
    shard.write_bytes(bytes(data[:-10]))
    with pytest.raises(DataError, match=f"{shard.name}: corrupted shard"):
        pretraining_dataset(str(copy))


def test_not_a_data_folder(tmp_path):
    with pytest.raises(DataError, match="no manifest"):
        pretraining_dataset(str(tmp_path))
