"""Prediction in LiteRT (``use_runtime("litert")``, ``predict --runtime
litert``): LiteRT's XNNPACK kernels give the Keras model's numbers, for each
task's outputs and each encoder family, one text or many."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

import albert_keras
from albert_keras.drivers.inference import evaluate as evaluate_folder
from albert_keras.families import build_backbone
from albert_keras.families import preset_config
from albert_keras.models.task_models.choice_scorer import ChoiceScorer
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.models.task_models.span_extractor import SpanExtractor
from albert_keras.tasks import litert_cache
from albert_keras.tasks import litert_runtime
from albert_keras.tasks.litert_runtime import LiteRTRunner
from albert_keras.tasks.litert_runtime import PredictionRuntime
from tests.helpers import make_sentences

# float32 in both; the kernels sum in other orders
ATOL = 2e-5


@pytest.fixture(autouse=True)
def cache_in_tmp(tmp_path, monkeypatch):
    """Converted files go to the test's folder (also for the command line's
    processes, which inherit the variable), not the user's cache."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(litert_cache.CACHE_ENV, str(folder))
    return folder / "litert"


def _texts():
    """Texts of many lengths (3 to 40 words), so that the runner's input
    is resized between calls."""
    return [" ".join(s.split()[: 3 + 3 * i]) for i, s in
            enumerate(make_sentences(12, seed=3, low=8, high=40))]


def _ids(rows, length, vocab, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, length + 1, rows)
    mask = (np.arange(length)[None] < lengths[:, None]).astype("int32")
    ids = rng.integers(5, vocab, (rows, length)).astype("int32") * mask
    return {"token_ids": ids, "padding_mask": mask, "segment_ids": 0 * ids}


def test_a_classifier_predicts_in_litert_as_in_keras(bert_folder):
    keras.utils.set_random_seed(0)
    model = albert_keras.TextClassifier.from_preset(bert_folder, num_classes=3,
                                                    sequence_length=48)
    texts = _texts()
    keras_probabilities = model.predict(texts)
    assert model.use_runtime("litert") is model
    np.testing.assert_allclose(model.predict(texts), keras_probabilities, atol=ATOL)
    # one text at a time, as a service asks, and without length buckets
    one_by_one = np.concatenate([model.predict([text]) for text in texts])
    np.testing.assert_allclose(one_by_one, keras_probabilities, atol=ATOL)
    data, _ = model._data(texts, None)
    whole = model._predicted(data, 5, length_buckets=False)["logits"]
    keras_whole = model.task_model.predict(data.x, verbose=0)["logits"]
    np.testing.assert_allclose(whole, keras_whole, atol=ATOL)


def test_fit_after_use_runtime_converts_the_new_weights(bert_folder):
    keras.utils.set_random_seed(0)
    model = albert_keras.TextClassifier.from_preset(bert_folder, num_classes=2,
                                                    sequence_length=16, epochs=1,
                                                    learning_rate=1e-2)
    texts = _texts()
    model.use_runtime("litert")
    before = model.predict(texts)
    model.fit(texts, ["a", "b"] * 6, batch_size=4, verbose=0)
    after = model.predict(texts)
    assert np.abs(after - before).max() > 1e-3  # the weights moved (lr 1e-2)
    np.testing.assert_allclose(after, model.use_runtime("keras").predict(texts), atol=ATOL)


def test_taggers_and_span_outputs_along_the_sequence_are_keras(bert_folder):
    keras.utils.set_random_seed(0)
    tagger = albert_keras.TokenClassifier.from_preset(bert_folder, labels=["B-X", "I-X", "O"],
                                                      sequence_length=48)
    data, _ = tagger._data(_texts(), None)
    keras_logits = tagger._predicted(data, 4)["logits"]
    litert_logits = tagger.use_runtime("litert")._predicted(data, 4)["logits"]
    # PAST_THE_ROW beyond each batch's rows, the same places in both
    np.testing.assert_allclose(litert_logits, keras_logits, atol=ATOL)

    encoder = tagger.encoder
    spans = SpanExtractor(encoder)
    x = _ids(5, 24, 300)
    expected = spans.predict(x, verbose=0)
    got = LiteRTRunner(spans)(x)
    assert set(got) == set(expected) == {"start_logits", "end_logits"}
    for name in got:
        np.testing.assert_allclose(got[name], expected[name], atol=ATOL)


@pytest.mark.parametrize("preset", ["deberta_v3_tiny", "modernbert_tiny", "albert_tiny"])
def test_each_family_converts_for_any_length(preset):
    """DeBERTa's relative table and ModernBERT's window and rotary positions
    are cut to the length the runner is given, not a length fixed at
    conversion."""
    keras.utils.set_random_seed(0)
    config = preset_config(preset, vocab_size=300, max_position_embeddings=64)
    classifier = SequenceClassifier(build_backbone(config), 2)
    runner = LiteRTRunner(classifier, threads=1)
    for length in (7, 30, 64):  # ModernBERT-tiny's window is shorter than 64
        x = _ids(3, length, 300, seed=length)
        np.testing.assert_allclose(runner(x)["logits"],
                                   classifier.predict(x, verbose=0)["logits"], atol=ATOL)


def test_multiple_choice_is_refused_in_one_line_before_converting(bert_folder):
    encoder = albert_keras.TextClassifier.from_preset(bert_folder, num_classes=2).encoder
    with pytest.raises(ValueError, match=r"^runtime litert: a choice model does not run in "
                                         r"LiteRT here; use runtime keras$"):
        LiteRTRunner(ChoiceScorer(encoder))


def test_a_wrong_runtime_or_thread_count_is_refused_before_any_work(tmp_path):
    with pytest.raises(ValueError, match=r"^runtime: 'onnx' is not one of auto, keras, litert$"):
        PredictionRuntime("onnx")
    with pytest.raises(ValueError, match=r"^threads: 0 is not an integer from 1 to 2147483647$"):
        PredictionRuntime("litert", threads=0)
    # refused before the folder is read: this one does not exist
    with pytest.raises(ValueError, match=r"^runtime: 'tflite' is not one of"):
        albert_keras.TextClassifier.load(tmp_path / "missing", runtime="tflite")


def test_predict_on_the_command_line_in_litert_is_keras(classifier_folder, task_files, tmp_path):
    def predicted(*extra):
        done = subprocess.run(
            [sys.executable, "-m", "albert_keras.cli", "predict", classifier_folder,
             "--input", task_files["cls_eval"], *extra], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines()]

    keras_records, litert_records = predicted(), predicted("--runtime", "litert")
    assert [r["label"] for r in litert_records] == [r["label"] for r in keras_records]
    for ours, reference in zip(litert_records, keras_records):
        for name, p in reference["probabilities"].items():
            assert abs(ours["probabilities"][name] - p) < ATOL
    scores = {runtime: evaluate_folder(classifier_folder, task_files["cls_eval"],
                                       runtime=runtime) for runtime in ("keras", "litert")}
    assert scores["litert"] == scores["keras"]
    done = subprocess.run([sys.executable, "-m", "albert_keras.cli", "predict",
                           classifier_folder, "--runtime", "onnx"], capture_output=True,
                          text=True)
    assert done.returncode == 2 and "--runtime: invalid choice: 'onnx'" in done.stderr


def test_a_converted_model_is_kept_and_only_that_model_reads_it(bert_folder, cache_in_tmp,
                                                                 monkeypatch):
    keras.utils.set_random_seed(0)
    classifier = SequenceClassifier(
        albert_keras.TextClassifier.from_preset(bert_folder, num_classes=2).encoder, 2)
    x = _ids(3, 20, 300)
    first = LiteRTRunner(classifier)(x)["logits"]
    assert len(list(cache_in_tmp.glob("*.tflite"))) == 1

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    converted = litert_runtime.convert
    monkeypatch.setattr(litert_runtime, "convert", no_conversion)
    np.testing.assert_array_equal(LiteRTRunner(classifier)(x)["logits"], first)
    # one weight changed: its own key and file, and its own numbers
    kernel = classifier.weights[-2]
    kernel.assign(kernel + 0.5)
    with pytest.raises(AssertionError, match="converted again"):
        LiteRTRunner(classifier)
    monkeypatch.setattr(litert_runtime, "convert", converted)
    np.testing.assert_allclose(LiteRTRunner(classifier)(x)["logits"],
                               classifier.predict(x, verbose=0)["logits"], atol=ATOL)
    assert len(list(cache_in_tmp.glob("*.tflite"))) == 2


def test_the_cache_keeps_the_newest_files_and_can_be_turned_off(cache_in_tmp, monkeypatch):
    for i in range(litert_cache.KEEP + 2):
        litert_cache.keep(f"key{i}", b"x" * (i + 1))
        (path,) = cache_in_tmp.glob(f"key{i}-*.tflite")
        os.utime(path, (i, i))  # distinct ages, oldest first
    left = sorted(p.name.split("-")[0] for p in cache_in_tmp.iterdir())
    assert left == [f"key{i}" for i in range(2, litert_cache.KEEP + 2)]
    assert litert_cache.cached("key5") == b"x" * 6 and litert_cache.cached("key0") is None
    monkeypatch.setenv(litert_cache.CACHE_ENV, "")
    assert litert_cache.cache_folder() is None
    litert_cache.keep("off", b"x")
    assert litert_cache.cached("off") is None


@pytest.fixture(scope="module")
def small_classifier(bert_folder):
    keras.utils.set_random_seed(0)
    return SequenceClassifier(
        albert_keras.TextClassifier.from_preset(bert_folder, num_classes=2).encoder, 2)


@pytest.mark.parametrize("damage", ["flipped", "truncated", "other"])
def test_a_damaged_kept_file_is_converted_again_with_the_same_outputs(
        small_classifier, cache_in_tmp, damage):
    """A kept file whose bytes changed (a flipped byte gave NaN probabilities
    with no error, a truncated one an internal error) is not used: it is
    removed and the model converted again."""
    classifier, x = small_classifier, _ids(3, 20, 300)
    want = LiteRTRunner(classifier)(x)["logits"]
    (path,) = cache_in_tmp.glob("*.tflite")
    blob = bytearray(path.read_bytes())
    if damage == "flipped":
        for i in range(len(blob) // 3, len(blob) // 3 + 4096):
            blob[i] ^= 0xFF
    elif damage == "truncated":
        blob = blob[:len(blob) // 2]
    else:  # a valid file of another model under this model's name
        blob = bytearray(b"not this model")
    path.write_bytes(bytes(blob))
    np.testing.assert_array_equal(LiteRTRunner(classifier)(x)["logits"], want)
    (kept,) = cache_in_tmp.glob("*.tflite")
    assert kept.name == path.name and kept.read_bytes() != bytes(blob)


def test_a_cache_that_cannot_be_written_never_stops_a_prediction(small_classifier,
                                                                 cache_in_tmp, monkeypatch):
    """A read-only cache (EPERM on every change: as root, chmod would not
    stop this process) is read, and a file it cannot replace is skipped."""
    classifier, x = small_classifier, _ids(3, 20, 300)
    want = LiteRTRunner(classifier)(x)["logits"]
    (path,) = cache_in_tmp.glob("*.tflite")

    def refused(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    for name in ("utime", "remove", "replace", "makedirs"):
        monkeypatch.setattr(litert_cache.os, name, refused)
    monkeypatch.setattr(litert_cache.tempfile, "NamedTemporaryFile", refused)
    np.testing.assert_array_equal(LiteRTRunner(classifier)(x)["logits"], want)  # read
    path.write_bytes(b"damaged")  # neither usable nor replaceable
    np.testing.assert_array_equal(LiteRTRunner(classifier)(x)["logits"], want)
    assert path.read_bytes() == b"damaged"


@pytest.mark.parametrize("threads", [0, 2**31, 2**63, 1.5, True])
def test_a_thread_count_that_is_no_c_int_is_refused_in_one_line(threads):
    from albert_keras.tasks.litert_runtime import PredictionRuntime

    with pytest.raises(ValueError, match="threads: .* is not an integer from 1 to"):
        PredictionRuntime("litert", threads)


def test_finetune_keeps_a_litert_copy_that_one_text_runs_in_by_default(
        init_folder, task_files, tmp_path, cache_in_tmp, monkeypatch):
    """``finetune`` converts its folder's model once and keeps the file; a
    new process's ``predict`` of one text (runtime auto) finds it by the
    loaded model's key and runs in LiteRT with Keras' numbers, as does a
    call of up to ``AUTO_MAX_ROWS`` texts; more run on TensorFlow; nothing
    converts again."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    out = str(tmp_path / "cls")
    finetune(init_folder, task_files["cls_train"], task_files["cls_eval"], out,
             FinetuneConfig(task="classify", epochs=1, batch_size=8, sequence_length=32))
    assert len(list(cache_in_tmp.glob("*.tflite"))) == 1
    text = "the one text a service is asked about"
    done = subprocess.run([sys.executable, "-m", "albert_keras.cli", "predict", out],
                          input=json.dumps({"text": text}) + "\n", capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert "LiteRT (XNNPACK)" in done.stderr and "LiteRT model read from" in done.stderr

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted again")

    monkeypatch.setattr(litert_runtime, "convert", no_conversion)
    served = albert_keras.TextClassifier.load(out)  # runtime auto
    calls = []
    run = LiteRTRunner.__call__
    monkeypatch.setattr(LiteRTRunner, "__call__",
                        lambda self, batch: calls.append(len(batch["token_ids"])) or run(self, batch))
    reference = albert_keras.TextClassifier.load(out, runtime="keras")
    np.testing.assert_allclose(served.predict([text]), reference.predict([text]), atol=ATOL)
    assert calls == [1]
    record = json.loads(done.stdout.splitlines()[0])
    assert list(record["probabilities"].values()) == pytest.approx(
        reference.predict([text])[0].tolist(), abs=ATOL)
    few = litert_runtime.AUTO_MAX_ROWS
    served.predict([text] * few)
    assert calls == [1, few]
    served.predict([text] * (few + 1))  # more rows: TensorFlow batches them
    assert calls == [1, few]


def test_auto_without_a_kept_file_runs_on_tensorflow_and_converts_nothing(
        classifier_folder, monkeypatch):
    def no_conversion(*args, **kwargs):
        raise AssertionError("auto converted")

    monkeypatch.setattr(litert_runtime, "convert", no_conversion)
    model = albert_keras.TextClassifier.load(classifier_folder)
    assert model.predict(["one text"]).shape[0] == 1
    assert model._runtime.runner(model.task_model, 1) is None


def test_auto_falls_back_to_tensorflow_when_the_kept_file_cannot_be_used(
        classifier_folder, monkeypatch, caplog):
    """Whatever goes wrong reading a kept file, ``auto`` answers on
    TensorFlow with Keras' numbers and says why in one warning."""
    def broken(*args, **kwargs):
        raise OSError("disk gone")

    monkeypatch.setattr(litert_cache, "cached", broken)
    model = albert_keras.TextClassifier.load(classifier_folder)
    reference = albert_keras.TextClassifier.load(classifier_folder, runtime="keras")
    with caplog.at_level("WARNING"):
        np.testing.assert_allclose(model.predict(["one text"]), reference.predict(["one text"]),
                                   atol=1e-6)
    assert any("OSError: disk gone" in r.getMessage() for r in caplog.records)
