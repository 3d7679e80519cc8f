import numpy as np
import pytest
import tensorflow as tf

from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from albert_keras.data.reader import DataError
from albert_keras.data.reader import pretraining_dataset


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, corpus_file, spm_path):
    out = tmp_path_factory.mktemp("reader") / "data"
    create_pretraining_data(
        [corpus_file], spm_path, str(out),
        DataConfig(max_seq_length=48, max_predictions=8, dupe_factor=3,
                   eval_fraction=0.1, examples_per_shard=60))
    return str(out)


def original(batch):
    """The batch's unmasked tokens (masked ids put back at their positions)."""
    tokens = batch["token_ids"].numpy().copy()
    for row in range(tokens.shape[0]):
        w = batch["masked_weights"].numpy()[row] > 0
        tokens[row, batch["masked_positions"].numpy()[row][w]] = (
            batch["masked_ids"].numpy()[row][w])
    return tokens


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


@pytest.mark.parametrize("local_replicas", [1, 2])
def test_pipelines_split_the_global_batches_of_one_pipeline(data_dir, local_replicas):
    """Two input pipelines (workers), each feeding ``local_replicas`` replicas of
    2 examples, together see each global batch of one pipeline, with its
    dynamic masks: the same steps on one device or many."""
    replicas = 2 * local_replicas
    kwargs = dict(batch_size=2, dynamic_masking=True, seed=3)
    full = list(pretraining_dataset(data_dir, **{**kwargs, "batch_size": 2 * replicas})
                .take(3))
    parts = []
    for pipeline in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=pipeline,
                                             num_replicas_in_sync=replicas)
        parts.append(list(pretraining_dataset(data_dir, input_context=context, **kwargs)
                          .take(3 * local_replicas)))
    for step, batch in enumerate(full):
        # Replica r of worker w holds rows of replica w * local_replicas + r.
        pieces = [parts[w][step * local_replicas + r] for w in range(2)
                  for r in range(local_replicas)]
        for key, value in batch.items():
            np.testing.assert_array_equal(
                np.concatenate([p[key].numpy() for p in pieces]), value.numpy(), err_msg=key)


def test_a_second_iterator_sees_the_same_order(data_dir):
    # Keras makes an extra iterator to build a model under a strategy; the
    # batches must not depend on how many were made before.
    ds = pretraining_dataset(data_dir, batch_size=4, dynamic_masking=True, seed=5)
    first = [b["token_ids"].numpy() for b in ds.take(3)]
    again = [b["token_ids"].numpy() for b in ds.take(3)]
    np.testing.assert_array_equal(np.stack(first), np.stack(again))


def test_skip_batches_resumes_the_stream(data_dir):
    ds = pretraining_dataset(data_dir, batch_size=4, dynamic_masking=True, seed=5)
    later = pretraining_dataset(data_dir, batch_size=4, dynamic_masking=True, seed=5,
                                skip_batches=2)
    expected = list(ds.take(4))[2]
    got = next(iter(later))
    for key in expected:
        np.testing.assert_array_equal(got[key].numpy(), expected[key].numpy(), err_msg=key)


def test_dynamic_masking_keeps_the_sequences(data_dir):
    static = next(iter(pretraining_dataset(data_dir, batch_size=16, shuffle=False)))
    dynamic_ds = pretraining_dataset(data_dir, batch_size=16, shuffle=False,
                                     dynamic_masking=True, seed=1)
    it = iter(dynamic_ds)
    first = next(it)

    np.testing.assert_array_equal(original(first), original(static))
    np.testing.assert_array_equal(first["sop_label"], static["sop_label"])
    assert not np.array_equal(first["masked_positions"], static["masked_positions"])


def test_a_higher_mask_rate_masks_more_of_the_same_sequences(data_dir):
    # The data were made at 15% with 8 slots per 48 tokens; at 40% the slots
    # grow in that ratio (8 * 0.4 / 0.15 = 21) and the rows are unchanged.
    kwargs = dict(batch_size=16, shuffle=False, dynamic_masking=True, seed=1)
    base = next(iter(pretraining_dataset(data_dir, **kwargs)))
    high = next(iter(pretraining_dataset(data_dir, masked_lm_prob=0.4, **kwargs)))
    assert high["masked_positions"].shape.as_list() == [16, 21]
    real = base["padding_mask"].numpy().sum(axis=1)
    masked_base = (base["masked_weights"].numpy() > 0).sum(axis=1)
    masked_high = (high["masked_weights"].numpy() > 0).sum(axis=1)
    # Whole words stop short of the budget, never past it; 2 of each row's
    # tokens ([CLS], [SEP]) are never masked.
    assert (masked_high <= np.minimum(21, np.round(0.4 * real))).all()
    assert masked_high.sum() > 2 * masked_base.sum()
    assert (masked_high.sum() / (real - 3).sum()) > 0.3

    np.testing.assert_array_equal(original(high), original(base))
    with pytest.raises(ValueError, match="masked_lm_prob"):
        pretraining_dataset(data_dir, masked_lm_prob=1.5, **kwargs)


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


@pytest.mark.parametrize("verify", [True, False])
def test_a_missing_split_is_one_line_naming_the_folder(tmp_path, data_dir, verify):
    """Unverified reads too (held-out scoring reads with ``verify=False``):
    a folder made without an eval split said only ``KeyError: 'eval'``."""
    import json
    import shutil

    folder = tmp_path / "data"
    shutil.copytree(data_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    del manifest["splits"]["eval"]
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match=rf"^{folder}: no 'eval' split \(has \['train'\]\)$"):
        pretraining_dataset(str(folder), "eval", batch_size=2, verify=verify)
