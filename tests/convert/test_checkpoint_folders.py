"""A published checkpoint folder (HF, WordPiece vocabulary) goes straight
into every command: finetune -> evaluate -> predict -> export
--with-tokenizer, fill-mask and embed, with no convert step."""

import json
import os

import numpy as np
import pytest

from albert_keras.cli import main
from albert_keras.export.runtime import TFLiteRunner
from tests.helpers import make_hf_model
from tests.helpers import make_wordpiece_vocab


def _string_in_tflite_predicts_as_predict(out, eval_csv, tmp_path, transform=None):
    """`predict` on the folder, then `export --with-tokenizer`: the .tflite fed
    the raw texts (through ``transform``) gives the same probabilities."""
    predictions_path = str(tmp_path / "p.jsonl")
    assert main(["predict", out, "--input", eval_csv, "--out", predictions_path]) == 0
    predicted = [json.loads(line) for line in open(predictions_path, encoding="utf-8")]
    tflite = str(tmp_path / "cls.tflite")
    assert main(["export", out, "--out", tflite, "--with-tokenizer", "--examples", "16"]) == 0
    runner = TFLiteRunner(tflite)
    texts = [line.split(",")[0] for line in open(eval_csv, encoding="utf-8")][1:]
    for text, row in zip(texts, predicted):
        logits = runner({"text": transform(text) if transform else text})["logits"][0]
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        expected = np.array([row["probabilities"][label] for label in sorted(row["probabilities"])])
        np.testing.assert_allclose(probabilities, expected, atol=1e-4)


def _published(folder, cls_name):
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    make_hf_model(cls_name, folder, vocab_size=size, max_position_embeddings=64)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    return str(folder)


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    return _published(tmp_path_factory.mktemp("bert-published"), "BertForPreTraining")


@pytest.fixture(scope="module")
def electra_folder(tmp_path_factory):
    return _published(tmp_path_factory.mktemp("electra-published"), "ElectraForPreTraining")


@pytest.mark.sampled(keep=2, group="published_folders")  # CI: 2 of the published-folder end-to-end runs per commit
def test_a_published_electra_discriminator_fine_tunes_and_exports(electra_folder, task_files,
                                                                  tmp_path, capsys):
    out = str(tmp_path / "cls")
    assert main(["finetune", "--init", electra_folder, "--task", "classify",
                 "--train", task_files["cls_train"], "--out", out, "--epochs", "1",
                 "--batch-size", "8", "--seq-length", "32"]) == 0
    assert main(["export", out, "--out", str(tmp_path / "e.tflite"), "--with-tokenizer",
                 "--examples", "8", "--validation-data", task_files["cls_eval"]]) == 0
    capsys.readouterr()
    # A discriminator has no masked-LM head: one line, exit 1.
    assert main(["fill-mask", electra_folder, "a [MASK]"]) != 0
    assert "has no masked-LM head" in capsys.readouterr().err


@pytest.mark.sampled(keep=2, group="published_folders")  # CI: 2 of the published-folder end-to-end runs per commit
def test_a_published_bert_folder_goes_through_every_command(bert_folder, task_files, tmp_path,
                                                           capsys):
    out = str(tmp_path / "cls")
    assert main(["finetune", "--init", bert_folder, "--task", "classify",
                 "--train", task_files["cls_train"], "--eval", task_files["cls_eval"],
                 "--out", out, "--epochs", "2", "--batch-size", "8",
                 "--seq-length", "32", "--learning-rate", "1e-3"]) == 0
    # The fine-tuned folder keeps the checkpoint's own vocabulary and ids.
    record = json.load(open(os.path.join(out, "tokenizer_kind.json")))
    assert record["kind"] == "wordpiece" and record["options"]["lowercase"] is True
    assert main(["evaluate", out, task_files["cls_eval"]]) == 0
    _string_in_tflite_predicts_as_predict(out, task_files["cls_eval"], tmp_path)

    capsys.readouterr()
    assert main(["fill-mask", bert_folder, "the quick brown [MASK] jumps", "--top-k", "3"]) == 0
    assert "[MASK] 1: " in capsys.readouterr().out
    embeddings = str(tmp_path / "e.npy")
    texts_file = tmp_path / "texts.txt"
    texts_file.write_text("the fox\nnaïve café\n", encoding="utf-8")
    assert main(["embed", bert_folder, "--input", str(texts_file), "--out", embeddings]) == 0
    assert np.load(embeddings).shape == (2, 32)


def test_fill_mask_and_embed_equal_transformers(bert_folder):
    """The folder's own model, converted on the fly, scores as HF's does."""
    import torch
    import transformers

    from albert_keras.drivers import inference

    text = "the quick brown [MASK] jumps"
    ours = inference.fill_mask(bert_folder, [text], top_k=3)[0][0]
    hf_tokenizer = transformers.AutoTokenizer.from_pretrained(bert_folder)
    model = transformers.BertForMaskedLM.from_pretrained(bert_folder).eval()
    batch = hf_tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits[0]
    position = int((batch["input_ids"][0] == hf_tokenizer.mask_token_id).nonzero()[0, 0])
    probabilities = torch.softmax(logits[position], -1).numpy()
    best = np.argsort(probabilities)[::-1][:3]
    assert [r["id"] for r in ours] == best.tolist()
    np.testing.assert_allclose([r["probability"] for r in ours], probabilities[best], atol=1e-5)


@pytest.mark.sampled(keep=2, group="published_folders")  # CI: 2 of the published-folder end-to-end runs per commit
def test_a_published_albert_folder_goes_through_every_command(task_files, tmp_path, capsys):
    """HF AlbertForPreTraining + spiece.model (HF's tokenizer defaults:
    lower-case, strip accents): finetune, predict and a string-in export
    that predicts as `predict` does."""
    from albert_keras.text.spm_trainer import train_sentencepiece
    from tests.helpers import make_sentences

    folder = tmp_path / "albert-published"
    folder.mkdir()
    texts = [t.lower() for t in make_sentences(2000)] + ["cafe naive"] * 20
    train_sentencepiece(texts, str(folder / "spiece.model"), vocab_size=99, lowercase=False)
    make_hf_model("AlbertForPreTraining", folder, vocab_size=99)
    out = str(tmp_path / "cls")
    assert main(["finetune", "--init", str(folder), "--task", "classify",
                 "--train", task_files["cls_train"], "--eval", task_files["cls_eval"],
                 "--out", out, "--epochs", "1", "--batch-size", "8", "--seq-length", "32"]) == 0
    record = json.load(open(os.path.join(out, "tokenizer_kind.json")))
    assert record["kind"] == "sentencepiece" and record["options"]["lowercase"] is True
    # upper case in: the tokenizer lower-cases inside the .tflite
    _string_in_tflite_predicts_as_predict(out, task_files["cls_eval"], tmp_path, str.upper)


@pytest.mark.sampled(keep=2, group="published_folders")  # CI: 2 of the published-folder end-to-end runs per commit
def test_a_deberta_v3_folder_goes_through_every_command(task_files, tmp_path, capsys):
    """HF DebertaV2ForMaskedLM (v3 layout) + spm.model with DeBERTa's special
    pieces: finetune, evaluate, predict, a string-in export validated like
    every other (it runs the relative attention through TFLite builtins),
    fill-mask and embed."""
    import sentencepiece as spm

    from tests.helpers import make_sentences

    folder = tmp_path / "deberta-v3-published"
    folder.mkdir()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(make_sentences(2000)))
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "spm"), vocab_size=98,
        model_type="unigram", pad_id=0, pad_piece="[PAD]", bos_id=1, bos_piece="[CLS]",
        eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]", minloglevel=2)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False}))
    make_hf_model("DebertaV2ForMaskedLM", folder, vocab_size=99)  # [MASK] = 98
    out = str(tmp_path / "cls")
    assert main(["finetune", "--init", str(folder), "--task", "classify",
                 "--train", task_files["cls_train"], "--eval", task_files["cls_eval"],
                 "--out", out, "--epochs", "1", "--batch-size", "8", "--seq-length", "32"]) == 0
    assert main(["evaluate", out, task_files["cls_eval"]]) == 0
    _string_in_tflite_predicts_as_predict(out, task_files["cls_eval"], tmp_path)
    capsys.readouterr()
    assert main(["fill-mask", str(folder), "the quick brown [MASK] jumps", "--top-k", "3"]) == 0
    assert "[MASK] 1: " in capsys.readouterr().out
    embeddings = str(tmp_path / "e.npy")
    texts_file = tmp_path / "texts.txt"
    texts_file.write_text("the fox\nthe dog\n", encoding="utf-8")
    assert main(["embed", str(folder), "--input", str(texts_file), "--out", embeddings]) == 0
    assert np.load(embeddings).shape == (2, 32)


@pytest.fixture(scope="module")
def bert_ids_folder(tmp_path_factory):
    """A BERT folder whose special tokens sit where BERT's do ([UNK] 100,
    [CLS] 101, [SEP] 102, [MASK] 103), not at ALBERT's 1-4."""
    folder = tmp_path_factory.mktemp("bert-ids")
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    pieces = [line.rstrip("\n") for line in open(vocab, encoding="utf-8")]
    specials = ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    rest = [p for p in pieces if p not in specials]
    pieces = rest[:100] + specials + rest[100:]
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("".join(p + "\n" for p in pieces))
    make_hf_model("BertForPreTraining", folder, vocab_size=len(pieces),
                  max_position_embeddings=64)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    return str(folder)


def test_a_classifier_built_in_python_on_a_checkpoint_exports_with_its_own_ids(
        bert_ids_folder, tmp_path):
    """The new user's case: a classifier built in Python on a BERT folder's
    encoder, saved alone with `model.save`, exports with the checkpoint's
    special ids (as transformers' tokenizer gives them), not ALBERT's; a
    model that carries no tokenizer is refused in one line."""
    import keras
    from transformers import BertTokenizerFast

    from albert_keras import SequenceClassifier
    from albert_keras.export.converter import ExportError
    from albert_keras.export.export_config import ExportConfig
    from albert_keras.export.export_model import export_tflite
    from albert_keras.sources.model_source import ModelSource

    reference = BertTokenizerFast.from_pretrained(bert_ids_folder)
    expected = {"pad": reference.pad_token_id, "unk": reference.unk_token_id,
                "cls": reference.cls_token_id, "sep": reference.sep_token_id,
                "mask": reference.mask_token_id}
    assert expected["cls"] == 101  # the fixture is what it says
    alone = tmp_path / "alone"
    alone.mkdir()
    model = SequenceClassifier(ModelSource(bert_ids_folder).encoder(), 2)
    model.save(str(alone / "cls.keras"))
    texts = ["the quick fox", "a lazy dog sleeps", "the fox", "dogs and foxes"] * 4
    data = tmp_path / "val.csv"
    data.write_text("text,label\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(texts)))
    sidecar = export_tflite(str(alone / "cls.keras"), str(alone / "cls.tflite"),
                            ExportConfig(quantize="dynamic", sequence_length=32,
                                         validation_data=str(data)))
    assert sidecar["special_ids"] == expected and sidecar["tokenizer"] == "wordpiece"
    # classes named by id, so the labelled rows were scored
    assert sidecar["labels"] == ["0", "1"] and "tflite_accuracy" in sidecar["validation"]
    loaded = keras.saving.load_model(str(alone / "cls.keras"))
    assert loaded.tokenizer.encode(texts[:2]) == [
        reference(t, add_special_tokens=False)["input_ids"] for t in texts[:2]]
    # a model that knows no tokenizer: no file, one line naming the model
    bare = tmp_path / "bare"
    bare.mkdir()
    plain = SequenceClassifier(ModelSource(bert_ids_folder).encoder(), 2)
    plain.encoder.tokenizer = None
    plain.save(str(bare / "cls.keras"))
    with pytest.raises(ExportError, match=r"cls\.keras: the model carries no tokenizer .*"
                                          r"pass tokenizer$"):
        export_tflite(str(bare / "cls.keras"), str(bare / "cls.tflite"))
    assert sorted(os.listdir(bare)) == ["cls.keras"]


def test_a_classifier_fine_tuned_with_transformers_predicts_and_exports_with_its_labels(
        tmp_path, capsys):
    """A ``BertForSequenceClassification`` folder, what a hub download of a
    model fine-tuned with transformers leaves: ``TextClassifier.from_preset``
    keeps its head and label names and gives transformers' ``pipeline``
    probabilities; ``albert-keras predict`` names its labels; ``albert-keras
    export`` writes a validated classifier file carrying them."""
    import transformers

    import albert_keras

    folder = tmp_path / "sentiment"
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    labels = ["negative", "positive", "mixed"]
    make_hf_model("BertForSequenceClassification", folder,
                  vocab_size=sum(1 for _ in open(vocab, encoding="utf-8")),
                  max_position_embeddings=64, id2label=dict(enumerate(labels)),
                  label2id={n: i for i, n in enumerate(labels)})
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    texts = ["the quick brown fox", "a lazy dog sleeps all day", "markets and weather"]
    theirs = transformers.pipeline("text-classification", model=str(folder), top_k=None)(texts)
    model = albert_keras.TextClassifier.from_preset(str(folder))
    assert model.labels == tuple(labels)
    ours = model.predict(texts)
    for row, scores in zip(ours, theirs):
        by_name = {s["label"]: s["score"] for s in scores}
        np.testing.assert_allclose([by_name[n] for n in labels], row, atol=1e-5)

    rows = tmp_path / "rows.csv"
    rows.write_text("text\n" + "".join(t + "\n" for t in texts))
    capsys.readouterr()
    assert main(["predict", str(folder), "--input", str(rows)]) == 0
    predicted = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [p["label"] for p in predicted] == [labels[int(np.argmax(r))] for r in ours]

    out = str(tmp_path / "sentiment.tflite")
    assert main(["export", str(folder), "--out", out, "--seq-length", "32"]) == 0
    sidecar = json.load(open(out[:-len(".tflite")] + ".json"))
    assert sidecar["labels"] == labels and sidecar["validation"]["passed"]
    # the file's logits are the model's on the same ids
    ids = albert_keras.Tokenizer.from_preset(str(folder)).encode(texts[:1])[0]
    runner = TFLiteRunner(out)
    token_ids = np.zeros((1, 32), np.int32)
    cls, sep = sidecar["special_ids"]["cls"], sidecar["special_ids"]["sep"]
    piece_ids = [cls, *ids, sep]
    token_ids[0, :len(piece_ids)] = piece_ids
    mask = (token_ids > 0).astype(np.int32)
    got = runner({"ids": token_ids, "mask": mask, "segment_ids": np.zeros_like(token_ids)})
    want = model.task_model({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
                             "padding_mask": mask})["logits"]
    np.testing.assert_allclose(got["logits"], np.asarray(want), atol=1e-4)
