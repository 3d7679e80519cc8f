"""Every reader of user files meets random and mutated files with either a
result or a one-line error naming the file: never a traceback, a hang or a
partial output.

Each reader starts from a valid file, which hypothesis cuts short, flips
bytes in, splices random bytes into or replaces outright. CI runs a bounded
sample (``FUZZ_EXAMPLES``, default 25 per reader); raise it for a long run:

    FUZZ_EXAMPLES=2000 python -m pytest tests/fuzz -q
"""

import json
import math
import os
import shutil
import tempfile

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from albert_keras.config_dicts import ConfigError
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.data.corpus import CorpusError
from albert_keras.data.corpus import read_documents
from albert_keras.data.reader import DataError
from albert_keras.data.reader import verify_shards
from albert_keras.models.albert.config_files import read_config_file
from albert_keras.tasks.readers import TaskDataError
from albert_keras.tasks.readers import discover_labels
from albert_keras.tasks.readers import label_ids
from albert_keras.tasks.readers import read_choices
from albert_keras.tasks.readers import read_conll
from albert_keras.tasks.readers import read_squad
from albert_keras.tasks.readers import read_text_table
from albert_keras.tasks.readers import regression_targets
from albert_keras.text.spm_model import TokenizerError
from albert_keras.text.spm_model import read_model_proto

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=not os.environ.get(
    "FUZZ_EXAMPLES"), suppress_health_check=[HealthCheck.too_slow])
# The one-line errors: every one names the file it is about.
ALLOWED = (CorpusError, TaskDataError, DataError, ConfigError, ConversionError,
           TokenizerError)


@st.composite
def mutated(draw, seed):
    """A valid file's bytes, cut, flipped, spliced or replaced."""
    data = bytearray(seed)
    how = draw(st.sampled_from(["cut", "flip", "splice", "replace", "same"]))
    if how == "cut":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "flip":
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(0, max(len(data) - 1, 0)))
            if data:
                data[i] = draw(st.integers(0, 255))
    elif how == "splice":
        i = draw(st.integers(0, len(data)))
        data[i:i] = draw(st.binary(min_size=1, max_size=40))
    elif how == "replace":
        data = bytearray(draw(st.binary(max_size=300)))
    return bytes(data)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


@st.composite
def json_mutated(draw, seed):
    """Valid JSON with one value deleted or swapped for another type."""
    value = json.loads(seed)
    paths = [p for p in _paths(value) if p]
    path = draw(st.sampled_from(paths))
    parent = value
    for key in path[:-1]:
        parent = parent[key]
    if draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(st.sampled_from([None, "x", -1, 0, 1e9, [], {}, [1, "a"],
                                                 True]))
    return json.dumps(value).encode()


def _check(call, data, name):
    """Runs ``call(path)`` on ``data`` written as ``name``: a result, or an
    allowed one-line error that names the file."""
    folder = tempfile.mkdtemp()
    try:
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(data)
        try:
            call(path)
        except ALLOWED as e:
            message = str(e)
            assert "\n" not in message, message
            assert name in message or folder in message, message
    finally:
        shutil.rmtree(folder)


_CORPUS = "One sentence here. Another one there!\nA third line.\n\nDoc two. Yes.\n".encode()
_JSONL_CORPUS = b'{"text": "One. Two."}\n{"text": "Three. Four."}\n'
_CSV = b'text,label\n"a good film",pos\n"bad, bad",neg\n'
_TSV = b"text\tlabel\na good film\tpos\nbad\tneg\n"
_JSONL = b'{"text": "a good film", "label": "pos"}\n{"text": "bad", "label": "neg"}\n'
_CONLL = b"-DOCSTART- O\n\nEU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\n"
_SQUAD = json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{
    "context": "The cat sat on the mat.", "qas": [
        {"id": "1", "question": "Where?", "answers": [{"text": "the mat",
                                                       "answer_start": 15}]},
        {"id": "2", "question": "Who?", "is_impossible": True, "answers": []}]}]}]}).encode()
_CHOICE = (b'{"context": "It rained.", "question": "So?", "choices": ["wet", "dry"], '
           b'"label": 0}\n')
_CONFIG = json.dumps({"vocab_size": 30000, "embedding_size": 128, "hidden_size": 768,
                      "num_hidden_layers": 12, "num_attention_heads": 12,
                      "intermediate_size": 3072, "hidden_act": "gelu",
                      "max_position_embeddings": 512, "type_vocab_size": 2}).encode()


@pytest.mark.parametrize("layout,name,seed", [
    ("lines", "c.txt", _CORPUS), ("file", "c.txt", _CORPUS), ("jsonl", "c.jsonl", _JSONL_CORPUS),
    ("auto", "c.jsonl", _JSONL_CORPUS)])
def test_corpus_reader(layout, name, seed):
    @FUZZ
    @given(data=mutated(seed))
    def run(data):
        _check(lambda p: list(read_documents([p], layout=layout)), data, name)

    run()


@pytest.mark.parametrize("name,seed", [("t.csv", _CSV), ("t.tsv", _TSV), ("t.jsonl", _JSONL)])
def test_text_table_reader(name, seed):
    @FUZZ
    @given(data=mutated(seed))
    def run(data):
        _check(read_text_table, data, name)

    run()


# Any JSON value, in the text and label fields of a JSONL task file.
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                  max_size=3),
    max_leaves=5)


def _labels_of(path, regression):
    examples = read_text_table(path)
    if regression:
        values = regression_targets(path, examples)
        assert all(math.isfinite(v) for v in values)
        return
    assert all(isinstance(t, str) and t.strip() for t in examples.texts)
    names = discover_labels(examples.labels)
    # equal values are one label, and every row finds its own
    assert len(set(names)) == len(names)
    assert len(label_ids(path, examples, names)) == len(examples.texts)


@pytest.mark.parametrize("regression", [False, True])
def test_task_files_with_mixed_json_types(regression):
    @FUZZ
    @given(rows=st.lists(st.fixed_dictionaries({"text": _JSON_VALUES, "label": _JSON_VALUES}),
                         min_size=1, max_size=6))
    def run(rows):
        data = "\n".join(json.dumps(r) for r in rows).encode()
        _check(lambda p: _labels_of(p, regression), data, "t.jsonl")

    run()


@pytest.mark.parametrize("reader,name,seed", [
    (read_conll, "t.conll", _CONLL), (read_squad, "t.json", _SQUAD),
    (read_choices, "t.jsonl", _CHOICE), (read_config_file, "albert_config.json", _CONFIG),
    (read_config_file, "config.json", json.dumps({**json.loads(_CONFIG),
                                                  "model_type": "albert"}).encode())],
    ids=["conll", "squad", "choice", "config", "hf_config"])
def test_task_and_config_readers(reader, name, seed):
    @FUZZ
    @given(data=mutated(seed) | (json_mutated(seed) if name.endswith(".json") else
                                 mutated(seed)))
    def run(data):
        _check(reader, data, name)

    run()


def test_safetensors_header(tmp_path_factory):
    import numpy as np
    from safetensors.numpy import save_file

    from albert_keras.convert.hf import _read_safetensors

    path = str(tmp_path_factory.mktemp("st") / "model.safetensors")
    save_file({"a.weight": np.ones((3, 4), np.float32), "b": np.arange(5, dtype=np.int64)},
              path)
    seed = open(path, "rb").read()

    @FUZZ
    @given(data=mutated(seed))
    def run(data):
        _check(_read_safetensors, data, "model.safetensors")

    run()


def test_sentencepiece_model(spm_path):
    """Our hand-written reader of SentencePiece files (text/spm_model.py)."""
    seed = open(spm_path, "rb").read()

    @FUZZ
    @given(data=mutated(seed))
    def run(data):
        _check(read_model_proto, data, "spm.model")

    run()


def test_manifest(tmp_path_factory, corpus_file, spm_path):
    from albert_keras.data.create import create_pretraining_data
    from albert_keras.data.data_config import DataConfig

    made = str(tmp_path_factory.mktemp("fuzz") / "data")
    create_pretraining_data([corpus_file], spm_path, made,
                            DataConfig(max_seq_length=32, max_predictions=5, dupe_factor=1))
    seed = open(os.path.join(made, "manifest.json"), "rb").read()

    @FUZZ
    @given(data=mutated(seed) | json_mutated(seed))
    def run(data):
        folder = tempfile.mkdtemp()
        try:
            copy = os.path.join(folder, "data")
            shutil.copytree(made, copy)
            with open(os.path.join(copy, "manifest.json"), "wb") as f:
                f.write(data)
            try:
                verify_shards(copy, "train")
            except ALLOWED as e:
                assert "\n" not in str(e) and copy in str(e), str(e)
        finally:
            shutil.rmtree(folder)

    run()


_VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n##s\nfox\ncafé\n".encode()


@pytest.mark.parametrize("name", ["vocab.txt", "tokenizer.json"])
def test_wordpiece_vocabulary_readers(name):
    """A damaged vocab.txt or HF tokenizer.json loads or fails in one line
    that names it (a ValueError, as every tokenizer reader raises)."""
    from albert_keras.text.wordpiece_tokenizer import WordPiece

    vocab = [line for line in _VOCAB.decode().splitlines()]
    seed = _VOCAB if name == "vocab.txt" else json.dumps({
        "model": {"type": "WordPiece", "unk_token": "[UNK]",
                  "vocab": {p: i for i, p in enumerate(vocab)}},
        "normalizer": {"type": "BertNormalizer", "lowercase": True}}).encode()

    def load(path):
        try:
            WordPiece(path).encode(["the foxes café"])
        except ValueError as e:
            assert "\n" not in str(e) and name in str(e), str(e)

    @FUZZ
    @given(mutated(seed))
    def run(data):
        _check(load, data, name)

    run()


# Each Beam run starts a pipeline (seconds), so fewer examples than the readers get.
BEAM_EXAMPLES = max(1, EXAMPLES // 8)


def test_beam_data_creation(spm_path):
    """The Beam runner meets the mutated corpora too: a data folder or one line
    on stderr naming the file, exit status 2, never a traceback or a folder
    left behind."""
    import subprocess
    import sys

    @settings(max_examples=BEAM_EXAMPLES, deadline=None, derandomize=not os.environ.get(
        "FUZZ_EXAMPLES"), suppress_health_check=[HealthCheck.too_slow])
    @given(data=mutated(_CORPUS))
    def run(data):
        folder = tempfile.mkdtemp()
        try:
            corpus, out = os.path.join(folder, "c.txt"), os.path.join(folder, "data")
            with open(corpus, "wb") as f:
                f.write(data)
            done = subprocess.run([sys.executable, "-m", "albert_keras_cli", "data", "create",
                                   "--input", corpus, "--tokenizer", spm_path, "--out", out,
                                   "--runner", "beam", "--max-seq-length", "32"],
                                  capture_output=True, text=True, timeout=600)
            if done.returncode == 0:
                assert os.path.isfile(os.path.join(out, "manifest.json"))
            else:
                lines = done.stderr.strip().splitlines()
                assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
                assert "c.txt" in lines[0] and not os.path.exists(out), lines[0]
        finally:
            shutil.rmtree(folder)

    run()
