"""``convert --to hf --onnx``: the folder transformers.js loads. Its ONNX
files, fed by transformers' own tokenizer of the folder, give transformers'
(torch) outputs on the same folder, and transformers.js's pipeline in
Chromium gives their labels."""

import contextlib
import csv
import io
import json
import os

import numpy as np
import pytest

from albert_keras.cli import main
from tests.web.driver import run_transformers_js


def _texts(task_files, count=12):
    with open(task_files["cls_eval"], encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f)][:count]


@pytest.fixture(scope="module")
def onnx_folder(classifier_folder, tmp_path_factory):
    out = str(tmp_path_factory.mktemp("onnx") / "hf")
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["convert", classifier_folder, "--to", "hf", "--onnx", "--out", out]) == 0
    assert "wrote onnx/model.onnx" in said.getvalue(), said.getvalue()
    assert "wrote onnx/model_quantized.onnx" in said.getvalue(), said.getvalue()
    return out


def _torch_logits(folder, texts):
    import torch
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(folder).eval()
    batch = tokenizer(texts, padding=True, return_token_type_ids=True, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits.numpy(), {k: v.numpy() for k, v in batch.items()}


def test_the_onnx_files_give_transformers_outputs(onnx_folder, task_files):
    import onnx
    import onnxruntime
    assert sorted(os.listdir(os.path.join(onnx_folder, "onnx"))) == [
        "model.onnx", "model_quantized.onnx"]
    texts = _texts(task_files)
    want, batch = _torch_logits(onnx_folder, texts)
    for name, atol in (("model.onnx", 1e-4), ("model_quantized.onnx", None)):
        session = onnxruntime.InferenceSession(os.path.join(onnx_folder, "onnx", name))
        names = [i.name for i in session.get_inputs()]
        assert names == ["input_ids", "attention_mask", "token_type_ids"]
        got = session.run(["logits"], {n: batch[n].astype(np.int64) for n in names})[0]
        if atol:
            np.testing.assert_allclose(got, want, atol=atol)
        else:  # int8 weights: the labels
            assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.9
    # int8 matrix products in the quantized file (its size gain shows only at
    # real widths: this model's weights are smaller than the scales' overhead)
    ops = {node.op_type for node in onnx.load(os.path.join(
        onnx_folder, "onnx", "model_quantized.onnx")).graph.node}
    assert {"DynamicQuantizeLinear", "MatMulInteger"} <= ops, ops


@pytest.mark.parametrize("dtype", ["fp32", "q8"])
@pytest.mark.sampled(keep=1)
def test_transformers_js_in_chromium_gives_our_labels(onnx_folder, classifier_folder, task_files,
                                                      dtype):
    """transformers.js's text-classification pipeline, in the browser, on
    the folder as written: transformers' labels (and, in float32, its
    probabilities)."""
    import transformers

    from albert_keras import TextClassifier

    texts = _texts(task_files)
    results = run_transformers_js(onnx_folder, texts, dtype=dtype)
    model = TextClassifier.from_preset(classifier_folder)
    ours = [model.labels[i] for i in model.predict(texts).argmax(-1)]
    reference = transformers.pipeline("text-classification", model=onnx_folder,
                                      framework="pt", top_k=None)(texts)
    tokenizer = transformers.AutoTokenizer.from_pretrained(onnx_folder)
    assert [r["ids"] for r in results] == [tokenizer(t)["input_ids"] for t in texts]
    labels = json.load(open(os.path.join(onnx_folder, "config.json")))["id2label"].values()
    agree = 0
    for got, want in zip([r["result"] for r in results], reference):
        got, want = ({r["label"]: r["score"] for r in found} for found in (got, want))
        assert set(got) == set(want) == set(labels)
        agree += max(got, key=got.get) == max(want, key=want.get)
        if dtype == "fp32":
            for label in want:
                assert abs(got[label] - want[label]) < 1e-4, (label, got, want)
    assert agree == len(texts) if dtype == "fp32" else agree >= 0.9 * len(texts)
    # and our own model's labels, from the folder it was converted from
    got = [max(r["result"], key=lambda x: x["score"])["label"] for r in results]
    same = sum(a == b for a, b in zip(got, ours))
    assert same == len(texts) if dtype == "fp32" else same >= 0.9 * len(texts)


@pytest.mark.parametrize("argv, message", [
    (["--to", "keras", "--onnx"], "--onnx is for --to hf"),
    (["--to", "hf", "--onnx", "--pretrainer"], "this is a mlm model"),
])
def test_what_has_no_onnx_form_is_refused_before_work(classifier_folder, init_folder, tmp_path,
                                                      capsys, argv, message):
    source = init_folder if "--pretrainer" in argv else classifier_folder
    argv = [a for a in argv if a != "--pretrainer"]
    out = str(tmp_path / ("x.keras" if "keras" in argv else "hf"))
    assert main(["convert", source, *argv, "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err, err
    assert not os.path.exists(out) and os.listdir(tmp_path) == []


def _published_bert(folder, cls_name, **config):
    """An HF folder with a lower-casing WordPiece vocabulary, as transformers
    writes one (exact GELU: HF's ``gelu``, what BERT, MiniLM and ELECTRA use)."""
    from tests.helpers import make_hf_model
    from tests.helpers import make_wordpiece_vocab

    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    make_hf_model(cls_name, folder, vocab_size=size, max_position_embeddings=64, **config)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    return str(folder)


@pytest.mark.parametrize("cls_name, config", [
    ("BertForPreTraining", {"hidden_act": "gelu"}),
    ("ElectraForPreTraining", {"hidden_act": "gelu"}),
])
@pytest.mark.sampled(keep=1)
def test_exact_gelu_models_give_transformers_outputs_in_onnx(cls_name, config, task_files,
                                                             tmp_path):
    """Exact GELU is TensorFlow's ``Erfc``, which tf2onnx has no handler for:
    the folder's ONNX file runs in ONNX Runtime with transformers' logits."""
    from albert_keras import TextClassifier

    source = _published_bert(tmp_path / "published", cls_name, **config)
    model = TextClassifier.from_preset(source, num_classes=3, sequence_length=32)
    texts = _texts(task_files)
    got = _onnx_against_transformers(model, texts, tmp_path)
    probabilities = np.exp(got - got.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities, model.predict(texts), atol=1e-4)  # predict's


def test_a_deberta_v3_classifier_gives_transformers_logits_in_onnx(task_files, tmp_path):
    """DeBERTa-v3's disentangled attention (relative positions in buckets,
    content-to-position and position-to-content terms) and its SentencePiece
    tokenizer: a classifier read from transformers' DebertaV2 folder, written
    back with ``--onnx``, runs in ONNX Runtime with transformers' logits on
    the written folder."""
    import sentencepiece as spm

    from albert_keras import TextClassifier
    from tests.helpers import make_hf_model
    from tests.helpers import make_sentences

    published = tmp_path / "published"
    published.mkdir()
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(make_sentences(2000)), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(published / "spm"), vocab_size=120,
        model_type="unigram", pad_id=0, pad_piece="[PAD]", bos_id=1, bos_piece="[CLS]",
        eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]", character_coverage=1.0,
        user_defined_symbols=["[MASK]"], minloglevel=2)
    (published / "spm.vocab").unlink()
    (published / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False,
         "split_by_punct": False}))
    make_hf_model("DebertaV2Model", str(published), vocab_size=120, hidden_act="gelu")
    model = TextClassifier.from_preset(str(published), num_classes=2, sequence_length=32)
    _onnx_against_transformers(model, _texts(task_files), tmp_path)


def _onnx_against_transformers(model, texts, tmp_path):
    """``model`` saved, written with ``--to hf --onnx``; its ONNX logits in
    ONNX Runtime, checked against transformers' on the written folder."""
    import onnxruntime

    keras_folder, out = str(tmp_path / "cls"), str(tmp_path / "hf")
    model.save_to_preset(keras_folder)
    assert main(["convert", keras_folder, "--to", "hf", "--onnx", "--out", out]) == 0
    want, batch = _torch_logits(out, texts)
    session = onnxruntime.InferenceSession(os.path.join(out, "onnx", "model.onnx"))
    names = [i.name for i in session.get_inputs()]
    got = session.run(["logits"], {n: batch[n].astype(np.int64) for n in names})[0]
    np.testing.assert_allclose(got, want, atol=1e-4)
    return got
