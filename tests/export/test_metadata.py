"""Exports for app runtimes, proven by running MediaPipe Tasks' Python API (the
C++ core that Android, iOS and the web run): its TextClassifier and
TextEmbedder, tokenizing the texts themselves, give the labels of
``albert-keras predict`` and the vectors of ``albert-keras embed``."""

import json
import os
import unicodedata

import numpy as np
import pytest

# MediaPipe is in the test extra: a missing install fails here, never skips
from mediapipe.tasks.python.core.base_options import BaseOptions
from mediapipe.tasks.python.text import text_classifier
from mediapipe.tasks.python.text import text_embedder

from albert_keras.drivers import inference
from albert_keras.export import ExportConfig
from albert_keras.export import export_tflite
from albert_keras.export.converter import ExportError
from albert_keras.export.metadata import read_metadata
from tests.helpers import make_hf_model
from tests.helpers import make_sentences
from tests.helpers import make_wordpiece_vocab

# held-out texts with accents, Hangul, punctuation, digits, CJK and emoji (the
# WordPiece tests use the subset MediaPipe's WordPiece tokenizer agrees on)
TEXTS = [t + suffix for t, suffix in zip(
    make_sentences(60, seed=11),
    ["", " Hello, World!", " (really) 42 times.", " 東京 data 😀", " don't; stop."] * 12)]


# What uncased WordPiece and MediaPipe's WordPiece tokenizer agree on: no
# character that Unicode decomposition changes (accents, Hangul), which HF's
# accent stripping rewrites and MediaPipe leaves as it is.
PLAIN_TEXTS = [t + suffix for t, suffix in zip(
    [t for t in make_sentences(800, seed=12) if unicodedata.normalize("NFD", t) == t],
    ["", " Hello, World!", " (really) 42 times.", " 東京 data 😀", " don't; stop."] * 12)]


def _texts_file(folder, texts=TEXTS, table=True):
    """The texts as a task table (a classifier's validation file) or as lines."""
    import csv

    path = os.path.join(folder, "texts.csv" if table else "texts.txt")
    with open(path, "w", encoding="utf-8", newline="") as f:
        if table:
            writer = csv.writer(f)
            writer.writerows([["text"], *[[t] for t in texts]])
        else:
            f.write("\n".join(texts) + "\n")
    return path


def _text(value):
    """A flatbuffer string field (the generated classes give bytes)."""
    return value.decode() if isinstance(value, bytes) else value


def _classify(path, texts):
    task = text_classifier.TextClassifier.create_from_options(text_classifier.TextClassifierOptions(
        base_options=BaseOptions(model_asset_path=path)))
    out = []
    for text in texts:
        categories = task.classify(text).classifications[0].categories
        out.append({c.category_name: c.score for c in categories})
    task.close()
    return out


def _predictions(folder, texts, tmp_path):
    os.makedirs(tmp_path / "predict", exist_ok=True)
    return inference.predict(folder, _texts_file(str(tmp_path / "predict"), texts))


def _assert_same_as_predict(tflite, folder, texts, tmp_path, score_atol):
    got = _classify(tflite, texts)
    want = _predictions(folder, texts, tmp_path)
    same = [max(g, key=g.get) == w["label"] for g, w in zip(got, want)]
    assert np.mean(same) >= 0.99, np.mean(same)
    diffs = [abs(g[name] - p) for g, w in zip(got, want) for name, p in w["probabilities"].items()]
    assert max(diffs) <= score_atol, max(diffs)
    # not vacuous: the scores move from text to text
    assert np.std([w["probabilities"][want[0]["label"]] for w in want]) > 1e-3


@pytest.fixture(scope="module")
def trained_classifier(tmp_path_factory, init_folder, task_files):
    """A SentencePiece classifier trained until its scores depend on the text
    (the label is the first word), so that agreeing with it means something."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    out = str(tmp_path_factory.mktemp("trained") / "cls")
    finetune(init_folder, task_files["cls_train"], task_files["cls_eval"], out, FinetuneConfig(
        task="classify", epochs=12, batch_size=8, sequence_length=32, learning_rate=3e-3,
        pooling="mean"))
    return out


def test_a_sentencepiece_classifier_runs_in_mediapipe_with_predicts_labels(
        trained_classifier, tmp_path):
    out = str(tmp_path / "cls.tflite")
    sidecar = export_tflite(trained_classifier, out, ExportConfig(
        metadata=True, validation_data=_texts_file(str(tmp_path)), sequence_length=32,
        examples=60))
    assert sidecar["outputs"] == ["probability"] and sidecar["validation"]["mediapipe"]["ran"]
    _assert_same_as_predict(out, trained_classifier, TEXTS, tmp_path, score_atol=1e-4)
    metadata, files = read_metadata(open(out, "rb").read())
    graph = metadata.subgraphMetadata[0]
    assert sorted(_text(t.name) for t in graph.inputTensorMetadata) == [
        "ids", "mask", "segment_ids"]
    assert files["labels.txt"].decode().split() == sidecar["labels"]
    assert "spm.model" in files and _text(metadata.minParserVersion) == "1.1.0"


@pytest.mark.parametrize("quantize", ["float16", "dynamic", "int8", "int4"])
@pytest.mark.sampled(keep=2)  # CI: 2 of these sets per commit
def test_every_quantization_mode_runs_in_mediapipe(trained_classifier, tmp_path, quantize):
    """Float inputs and outputs in every mode: MediaPipe reads the probabilities
    as scores, and with its own tokenizer gives LiteRT's answers on our ids."""
    out = str(tmp_path / f"{quantize}.tflite")
    texts = _texts_file(str(tmp_path))
    sidecar = export_tflite(trained_classifier, out, ExportConfig(
        metadata=True, quantize=quantize, validation_data=texts, representative=texts,
        sequence_length=32, examples=30, min_agreement=0.5, max_probability_diff=0.5,
        max_accuracy_drop=0.5))
    report = sidecar["validation"]["mediapipe"]
    assert report["ran"] and report["top1_agreement"] == 1.0
    assert report["max_score_diff"] < 1e-5, report


def test_an_embedder_runs_in_mediapipe_with_embeds_vectors(init_folder, tmp_path):
    out = str(tmp_path / "embedder.tflite")
    export_tflite(init_folder, out, ExportConfig(
        metadata=True, part="embedder", validation_data=_texts_file(str(tmp_path), table=False),
        sequence_length=32, examples=60))
    task = text_embedder.TextEmbedder.create_from_options(text_embedder.TextEmbedderOptions(
        base_options=BaseOptions(model_asset_path=out)))
    got = np.array([task.embed(t).embeddings[0].embedding for t in TEXTS])
    task.close()
    want = inference.embed(init_folder, TEXTS, sequence_length=32)
    cosines = np.sum(got * want, 1) / np.linalg.norm(got, axis=1) / np.linalg.norm(want, axis=1)
    assert cosines.min() >= 0.99, cosines.min()


@pytest.fixture(scope="module")
def wordpiece_classifier(tmp_path_factory):
    """A BERT-style (WordPiece, uncased) classifier fine-tuned from an HF folder."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    folder = tmp_path_factory.mktemp("bert")
    hf = folder / "bert"
    vocab = make_wordpiece_vocab(hf, lowercase=True, vocab_size=400)
    size = len(open(vocab, encoding="utf-8").read().splitlines())
    make_hf_model("BertModel", str(hf), vocab_size=size, max_position_embeddings=64)
    rows = [f"{'fox' if i % 2 else 'dog'} {t},{'fox' if i % 2 else 'dog'}"
            for i, t in enumerate(make_sentences(160, seed=4))]
    (folder / "train.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    out = str(folder / "cls")
    finetune(str(hf), str(folder / "train.csv"), None, out, FinetuneConfig(
        task="classify", epochs=6, batch_size=8, sequence_length=32, learning_rate=1e-3))
    return out


def test_a_wordpiece_classifier_runs_in_mediapipe_with_predicts_labels(
        wordpiece_classifier, tmp_path):
    assert len(PLAIN_TEXTS) == 60
    out = str(tmp_path / "bert.tflite")
    export_tflite(wordpiece_classifier, out, ExportConfig(
        metadata=True, validation_data=_texts_file(str(tmp_path), PLAIN_TEXTS), examples=60))
    _assert_same_as_predict(out, wordpiece_classifier, PLAIN_TEXTS, tmp_path, score_atol=1e-4)


def test_a_tokenization_mediapipe_does_not_do_is_refused_in_one_line(
        wordpiece_classifier, tmp_path):
    # uncased BERT strips accents; MediaPipe's WordPiece tokenizer does not.
    # The accent is on the word the classifier reads its label from, so the
    # labels move with it (an accent elsewhere flipped one text in 30, or none)
    accented = [f"{'Fóx' if i % 2 else 'Dóg'} {t} Café naïve résumé à Zürich."
                for i, t in enumerate(make_sentences(30, seed=9))]
    texts = _texts_file(str(tmp_path), accented)
    out = str(tmp_path / "bert.tflite")
    with pytest.raises(ExportError) as error:
        export_tflite(wordpiece_classifier, out, ExportConfig(metadata=True,
                                                              validation_data=texts))
    message = str(error.value)
    assert "\n" not in message and "strips no accents" in message
    # from Python the error names the argument, not the flag
    assert "a lower mediapipe_min_agreement" in message and "--" not in message
    assert not os.path.exists(out)


def test_a_qa_export_carries_the_task_librarys_metadata(tmp_path, init_folder, task_files):
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    folder = str(tmp_path / "qa")
    finetune(init_folder, task_files["qa_train"], None, folder, FinetuneConfig(
        task="qa", epochs=1, batch_size=8, sequence_length=48, stride=8))
    out = str(tmp_path / "qa.tflite")
    sidecar = export_tflite(folder, out, ExportConfig(metadata=True, examples=8))
    assert not sidecar["validation"]["mediapipe"]["ran"]
    metadata, files = read_metadata(open(out, "rb").read())
    graph = metadata.subgraphMetadata[0]
    names = sorted(_text(t.name) for t in graph.outputTensorMetadata)
    assert names == ["end_logits", "start_logits"]
    assert graph.inputProcessUnits and "spm.model" in files


def test_every_export_has_a_model_card_that_names_no_local_path(classifier_folder, tmp_path):
    out = str(tmp_path / "plain.tflite")
    sidecar = export_tflite(classifier_folder, out, ExportConfig(examples=8))
    card = open(str(tmp_path / "plain.md"), encoding="utf-8").read()
    for text in (card, json.dumps(sidecar)):
        assert str(tmp_path) not in text and os.path.dirname(classifier_folder) not in text
    assert card.startswith("---\nlibrary_name: litert") and "## Validation" in card
    assert "A classifier of the albert family" in card and sidecar["family"] == "albert"
    assert sidecar["source"] == os.path.basename(classifier_folder)
    # the checkpoint it was fine-tuned from is named, in the card's front matter too
    with open(os.path.join(classifier_folder, "train_config.json"), encoding="utf-8") as f:
        init = os.path.basename(json.load(f)["init"])
    assert sidecar["base_model"] == init and f"base_model: {init}\n" in card
    assert f"fine-tuned from `{init}`" in card


def test_metadata_without_mediapipe_is_refused_before_any_work(classifier_folder, tmp_path,
                                                               monkeypatch):
    """The extra's absence is said at once, not after converting."""
    import builtins

    from albert_keras.export import export_model

    real_import = builtins.__import__

    def no_mediapipe(name, *args, **kwargs):
        if name.startswith("mediapipe"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mediapipe)
    monkeypatch.setattr(export_model, "_load", lambda *a: pytest.fail("the model was loaded"))
    with pytest.raises(ExportError, match=r"metadata writes MediaPipe's metadata schema: pip "
                                          r"install 'albert-keras\[mediapipe\]'"):
        export_tflite(classifier_folder, str(tmp_path / "m.tflite"), ExportConfig(metadata=True))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("extra, words", [
    ({"with_tokenizer": True}, "drop with_tokenizer$"),  # Python names the argument
    ({"part": "encoder"}, "this model is an encoder model"),
])
def test_what_app_runtimes_cannot_run_is_refused_before_work(init_folder, tmp_path,
                                                             extra, words):
    with pytest.raises(ExportError, match=words):
        export_tflite(init_folder, str(tmp_path / "x.tflite"),
                      ExportConfig(metadata=True, sequence_length=32, **extra))
    assert os.listdir(tmp_path) == []


@pytest.mark.sampled(keep=2, group="published_folders")  # CI: 2 of the published-folder end-to-end runs per commit
def test_an_hf_mobilebert_folder_finetunes_and_runs_in_mediapipe(tmp_path, capsys):
    """The phone model MediaPipe ships: an HF MobileBERT folder through the
    command line (finetune, evaluate, predict, export --metadata), then
    MediaPipe's TextClassifier gives predict's labels."""
    from albert_keras.cli import main

    hf = tmp_path / "mobilebert"
    vocab = make_wordpiece_vocab(hf, lowercase=True, vocab_size=400)
    size = len(open(vocab, encoding="utf-8").read().splitlines())
    make_hf_model("MobileBertForPreTraining", str(hf), vocab_size=size,
                  max_position_embeddings=64)
    rows = [f"{'fox' if i % 2 else 'dog'} {t},{'fox' if i % 2 else 'dog'}"
            for i, t in enumerate(make_sentences(160, seed=4))]
    (tmp_path / "train.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    (tmp_path / "eval.csv").write_text("text,label\n" + "\n".join(rows[:40]) + "\n")
    out = str(tmp_path / "cls")
    assert main(["finetune", "--init", str(hf), "--task", "classify", "--train",
                 str(tmp_path / "train.csv"), "--out", out, "--epochs", "6", "--batch-size",
                 "8", "--seq-length", "32", "--learning-rate", "1e-3"]) == 0
    capsys.readouterr()
    assert main(["evaluate", out, str(tmp_path / "eval.csv")]) == 0
    # the first word names the label: a model that learned nothing scores 0.5
    assert json.loads(capsys.readouterr().out)["accuracy"] >= 0.9
    tflite = str(tmp_path / "mobilebert.tflite")
    assert main(["export", out, "--out", tflite, "--metadata", "--validation-data",
                 _texts_file(str(tmp_path), PLAIN_TEXTS), "--examples", "60"]) == 0
    _assert_same_as_predict(tflite, out, PLAIN_TEXTS, tmp_path, score_atol=1e-4)
    # the published-style folder's own heads and encoder, through the other commands
    capsys.readouterr()
    assert main(["fill-mask", str(hf), "the quick [MASK] fox", "--top-k", "2"]) == 0
    assert "[MASK] 1: " in capsys.readouterr().out
    assert main(["embed", str(hf), "--input", _texts_file(str(tmp_path), PLAIN_TEXTS[:3],
                                                          table=False),
                 "--out", str(tmp_path / "vectors.npy")]) == 0
    assert np.load(tmp_path / "vectors.npy").shape == (3, 32)
    keras_file = str(tmp_path / "mobilebert.keras")
    assert main(["convert", str(hf), "--out", keras_file]) == 0
    assert main(["convert", keras_file, "--to", "hf", "--out", str(tmp_path / "again")]) == 0
    import torch
    import transformers

    ids = torch.tensor([[2, 40, 41, 42, 3]])
    logits = [transformers.MobileBertForPreTraining.from_pretrained(str(path)).eval()(
        input_ids=ids).prediction_logits.detach().numpy() for path in (hf, tmp_path / "again")]
    np.testing.assert_allclose(logits[1], logits[0], atol=1e-5)
