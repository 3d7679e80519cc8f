"""``data create --runner beam`` makes the bytes of the in-process path."""

import json
import os

import pytest

from albert_keras.data.beam_pipeline import create_pretraining_data_beam
from albert_keras.data.corpus import CorpusError
from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from tests.helpers import folder_bytes
from tests.helpers import make_sentences


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory, corpus_file):
    """Several files and layouts, so documents are numbered across files."""
    root = tmp_path_factory.mktemp("beam_corpus")
    docs = open(corpus_file, encoding="utf-8").read().strip().split("\n\n")
    for i in range(3):
        (root / f"part-{i}.txt").write_text("\n\n".join(docs[i::3]) + "\n", encoding="utf-8")
    records = [{"text": "\n".join(make_sentences(5, seed=500 + i))} for i in range(6)]
    (root / "extra.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n",
                                      encoding="utf-8")
    (root / "short.txt").write_text("One lonely sentence.\n\n\n", encoding="utf-8")
    return str(root)


CONFIG = dict(max_seq_length=48, max_predictions=8, dupe_factor=2, eval_fraction=0.1,
              examples_per_shard=60, seed=7)


@pytest.mark.parametrize(("workers", "random_next"), [(1, False), (1, True), (2, False)])
def test_beam_shards_and_manifest_are_byte_identical(corpus_dir, spm_path, tmp_path,
                                                     workers, random_next):
    config = DataConfig(**CONFIG, random_next=random_next)
    local = create_pretraining_data([corpus_dir], spm_path, str(tmp_path / "local"), config)
    beam = create_pretraining_data_beam([corpus_dir], spm_path, str(tmp_path / "beam"),
                                        config, workers=workers)
    assert beam == local
    assert local["corpus"]["files"] == 5 and local["corpus"]["skipped_one_sentence"] == 1
    assert len(local["splits"]["train"]["shards"]) > 1  # several shards to assign
    assert folder_bytes(tmp_path / "beam") == folder_bytes(tmp_path / "local")


def test_bad_input_is_named_and_nothing_is_left(spm_path, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "good.txt").write_text("\n".join(make_sentences(6)) + "\n", encoding="utf-8")
    (corpus / "bad.txt").write_bytes(b"A fine first line.\nThen \xff\xfe bytes.\n")
    out = tmp_path / "out"
    with pytest.raises(CorpusError, match=r"bad\.txt:2: .*UTF-8") as error:
        create_pretraining_data_beam([str(corpus)], spm_path, str(out), DataConfig())
    assert "\n" not in str(error.value)
    assert sorted(os.listdir(tmp_path)) == ["corpus"]


def test_no_usable_document_says_so(spm_path, tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("Just one sentence.\n\nAnother lonely one.\n")
    with pytest.raises(CorpusError, match=r"tiny\.txt: no usable document.*2 one-sentence"):
        create_pretraining_data_beam([str(path)], spm_path, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_cli_runner_beam_writes_the_local_bytes(corpus_dir, spm_path, tmp_path, capsys):
    from albert_keras.cli import main

    common = ["data", "create", "--input", corpus_dir, "--tokenizer", spm_path,
              "--max-seq-length", "48", "--max-predictions", "8", "--dupe-factor", "1",
              "--eval-fraction", "0.1", "--seed", "3"]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    assert main([*common, "--out", str(tmp_path / "beam"), "--runner", "beam"]) == 0
    assert folder_bytes(tmp_path / "beam") == folder_bytes(tmp_path / "local")
    capsys.readouterr()
    assert main([*common, "--out", str(tmp_path / "x"),
                 "--beam-options=--runner=DirectRunner"]) == 2
    assert "--beam-options needs --runner beam" in capsys.readouterr().err
