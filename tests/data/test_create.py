import os

import pytest

import albert_keras.data.create as create_module
from albert_keras.data.corpus import CorpusError
from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from tests.helpers import folder_bytes


@pytest.fixture(scope="module")
def made(tmp_path_factory, corpus_file, spm_path):
    root = tmp_path_factory.mktemp("create")
    config = DataConfig(max_seq_length=48, max_predictions=8, dupe_factor=2,
                        eval_fraction=0.1, examples_per_shard=100, seed=7)
    manifests = {}
    for name, workers, seed in (("w1", 1, 7), ("w2", 2, 7), ("seed8", 1, 8)):
        config.seed = seed
        manifests[name] = create_pretraining_data(
            [corpus_file], spm_path, str(root / name), config, workers=workers)
    return root, manifests


def test_same_seed_same_bytes_whatever_the_workers(made):
    root, _ = made
    one, two = folder_bytes(root / "w1"), folder_bytes(root / "w2")
    assert [n for n in one if n.endswith(".tfrecord")]
    assert one == two


def test_different_seed_different_bytes(made):
    root, _ = made
    one, other = folder_bytes(root / "w1"), folder_bytes(root / "seed8")
    shards = [n for n in one if n.startswith("train-")]
    assert any(one[n] != other.get(n) for n in shards)


def test_manifest(made):
    root, manifests = made
    m = manifests["w1"]
    assert m["corpus"]["documents"] == 40
    train, held = m["splits"]["train"], m["splits"]["eval"]
    assert train["documents"] == 36 and held["documents"] == 4
    assert train["examples"] == sum(s["examples"] for s in train["shards"])
    assert len(train["shards"]) == -(-train["examples"] // 100)
    assert abs(train["sop_label_1_fraction"] - 0.5) < 0.1
    assert 0.12 < train["mask_rate"] < 0.16
    assert m["config"]["seed"] == 7 and m["config"]["dupe_factor"] == 2
    assert os.path.isfile(root / "w1" / "spm.model")


def test_no_usable_document(tmp_path, spm_path):
    path = tmp_path / "tiny.txt"
    path.write_text("Just one sentence.\n\nAnother lonely one.\n")
    with pytest.raises(CorpusError, match="no usable document.*2 one-sentence"):
        create_pretraining_data([str(path)], spm_path, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_crash_leaves_nothing_half_written(tmp_path, corpus_file, spm_path, monkeypatch):
    real = create_module.write_shard

    def crashing(*args):
        real(*args)
        raise KeyboardInterrupt("killed while writing")

    monkeypatch.setattr(create_module, "write_shard", crashing)
    with pytest.raises(KeyboardInterrupt):
        create_pretraining_data([corpus_file], spm_path, str(tmp_path / "out"),
                                DataConfig(max_seq_length=48, dupe_factor=1))
    assert os.listdir(tmp_path) == []


def test_existing_output_needs_overwrite(made, corpus_file, spm_path):
    root, _ = made
    with pytest.raises(FileExistsError, match="--overwrite"):
        create_pretraining_data([corpus_file], spm_path, str(root / "w1"))


def test_same_bytes_in_another_process(made, corpus_file, spm_path, tmp_path):
    """Protobuf map order may follow the process's string hashing; the shards must not."""
    import subprocess
    import sys

    root, _ = made
    script = (
        "import sys\n"
        "from albert_keras.data.data_config import DataConfig\n"
        "from albert_keras.data.create import create_pretraining_data\n"
        "config = DataConfig(max_seq_length=48, max_predictions=8, dupe_factor=2,\n"
        "                    eval_fraction=0.1, examples_per_shard=100, seed=7)\n"
        "create_pretraining_data([sys.argv[1]], sys.argv[2], sys.argv[3], config)\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345", "TF_CPP_MIN_LOG_LEVEL": "3"}
    subprocess.run([sys.executable, "-c", script, corpus_file, spm_path, str(tmp_path / "p")],
                   check=True, env=env, capture_output=True, timeout=300)
    assert folder_bytes(tmp_path / "p") == folder_bytes(root / "w1")


def test_progress_lines_give_documents_and_examples_per_second(
        tmp_path, corpus_file, spm_path, caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="albert_keras"):
        create_pretraining_data([corpus_file], spm_path, str(tmp_path / "d"),
                                DataConfig(max_seq_length=32, max_predictions=5, dupe_factor=1),
                                workers=1)  # the `made` fixture runs a pool
    lines = [r.getMessage() for r in caplog.records]
    tokenizing = [m for m in lines if m.startswith("tokenizing: ")]
    making = [m for m in lines if m.startswith("making examples: ")]
    # at least the final line of each stage, with its rate
    assert tokenizing[-1].startswith("tokenizing: 40/40 documents") and "documents/s" in \
        tokenizing[-1]
    assert making[-1].startswith("making examples: 40/40 documents") and "examples/s" in \
        making[-1]
