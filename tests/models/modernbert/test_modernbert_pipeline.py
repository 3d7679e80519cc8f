"""A ModernBERT checkpoint with its byte-level BPE tokenizer through the
pipeline: fine-tuned from an HF ``ModernBertForMaskedLM`` folder, predicted,
exported to a validated ``.tflite`` and written back as an HF folder whose
``pipeline`` gives our predictions."""

import csv
import json
import os

import numpy as np
import pytest
import torch
import transformers

from albert_keras.cli import main
from albert_keras.drivers.finetune import finetune
from albert_keras.drivers.inference import predict
from albert_keras.export import ExportConfig
from albert_keras.export import export_tflite
from albert_keras.tasks.finetune_config import FinetuneConfig
from tests.helpers import make_bpe_file

WORDS = "the quick brown lazy jumps over runs a little big red old".split()


def _rows(path, count, seed):
    """Texts naming a dog or a fox among other words, labelled by it."""
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["text", "label"])
        for _ in range(count):
            label = str(rng.choice(["dog", "fox"]))
            words = list(rng.choice(WORDS, 5, replace=False))
            words.insert(int(rng.integers(6)), label)
            out.writerow([" ".join(words), label])
    return str(path)


@pytest.fixture(scope="module")
def modernbert_folder(tmp_path_factory):
    """A random HF ModernBERT masked LM with a BPE tokenizer beside it."""
    from tokenizers import Tokenizer

    folder = tmp_path_factory.mktemp("modernbert")
    tokenizer = Tokenizer.from_file(make_bpe_file(folder))
    torch.manual_seed(0)
    config = transformers.ModernBertConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=64, intermediate_size=96,
        num_hidden_layers=3, num_attention_heads=4, max_position_embeddings=128,
        local_attention=16, pad_token_id=tokenizer.token_to_id("[PAD]"))
    transformers.ModernBertForMaskedLM(config).save_pretrained(str(folder))
    return str(folder)


@pytest.fixture(scope="module")
def modernbert_classifier(modernbert_folder, tmp_path_factory):
    """``(folder, held-out file, metrics)``: a classifier fine-tuned here."""
    where = tmp_path_factory.mktemp("modernbert-cls")
    train, held_out = _rows(where / "train.csv", 200, 1), _rows(where / "eval.csv", 60, 2)
    out = str(where / "cls")
    metrics = finetune(modernbert_folder, train, held_out, out, FinetuneConfig(
        task="classify", epochs=6, batch_size=16, sequence_length=32, learning_rate=1e-3))
    return out, held_out, metrics


def test_a_checkpoint_fine_tunes_exports_and_goes_back_to_transformers(modernbert_classifier,
                                                                        tmp_path):
    out, held_out, metrics = modernbert_classifier
    # the label word is in the text: a model that learns nothing stays near 0.5
    assert metrics["accuracy"] >= 0.9
    rows = predict(out, held_out)
    # validated against Keras at each length (the windows' masks as static ops)
    sidecar = export_tflite(out, str(tmp_path / "cls.tflite"),
                            ExportConfig(examples=16, lengths=[8, 16]))
    assert sidecar["kind"] == "classifier" and sidecar["labels"] == ["dog", "fox"]
    assert sidecar["family"] == "modernbert"  # the model card names it
    assert main(["convert", out, "--to", "hf", "--out", str(tmp_path / "hf")]) == 0
    pipe = transformers.pipeline("text-classification", model=str(tmp_path / "hf"), top_k=None)
    theirs = pipe([row["text"] for row in rows])
    assert [max(t, key=lambda d: d["score"])["label"] for t in theirs] == \
        [row["label"] for row in rows]
    for mine, their in zip(rows, theirs):
        for d in their:
            assert d["score"] == pytest.approx(mine["probabilities"][d["label"]], abs=1e-5)


def test_quantization_aware_training_fake_quantizes_every_dense_layer_and_exports(
        modernbert_classifier, tmp_path):
    """``--quantize qat``: the copy fake-quantizes each dense layer the float
    model has (per block ``Wqkv``, ``Wo``, ``Wi``, ``Wo``; the head's dense
    layer, the classifier), saves and loads with its ranges, and the file it
    gives is validated and keeps the float model's held-out accuracy."""
    import keras

    from albert_keras.export.qat import quantization_aware_copy
    from albert_keras.layers.quantized_dense import QuantizedDense
    from albert_keras.saving import save_model

    out, held_out, metrics = modernbert_classifier
    model = keras.saving.load_model(os.path.join(out, "model.keras"))
    qat = quantization_aware_copy(model)
    dense = [layer for layer in model._flatten_layers() if isinstance(layer, keras.layers.Dense)]
    quantized = [layer for layer in qat._flatten_layers() if isinstance(layer, QuantizedDense)]
    assert len(quantized) == len(dense) == 3 * 4 + 1 + 1
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 200, (4, 16)).astype("int32"),
         "segment_ids": np.zeros((4, 16), "int32"), "padding_mask": np.ones((4, 16), "int32")}
    qat(x, training=True)  # the activation ranges from one batch
    want = keras.ops.convert_to_numpy(qat(x)["logits"])
    save_model(qat, str(tmp_path / "qat.keras"))
    again = keras.saving.load_model(str(tmp_path / "qat.keras"))
    assert again.encoder.quantize_aware
    np.testing.assert_allclose(keras.ops.convert_to_numpy(again(x)["logits"]), want, atol=1e-5)
    sidecar = export_tflite(out, str(tmp_path / "qat.tflite"), ExportConfig(
        quantize="qat", qat_epochs=1, qat_learning_rate=1e-4, examples=16))
    assert sidecar["validation"]["passed"] and sidecar["quantize"] == "qat"
    # the label word is in the text: the float model is at >= 0.9, chance 0.5
    assert sidecar["validation"]["tflite_accuracy"] >= metrics["accuracy"] - 0.1


def test_a_web_page_tokenizes_byte_level_bpe_as_ours(modernbert_classifier, tmp_path):
    """``export --web``: tokenizers.js reads the BPE ``tokenizer.json`` in
    Chromium to our ids on hard texts (accents, CJK, emoji, odd spaces, a
    text longer than the model's input), and LiteRT.js gives our runner's
    logits."""
    from tests.export.test_web_folder import TEXTS
    from tests.export.test_web_folder import _check_page

    out = modernbert_classifier[0]
    site = str(tmp_path / "site")
    sidecar = export_tflite(out, None, ExportConfig(examples=8, web=site))
    assert sidecar["tokenizer"] == "bpe"
    results = _check_page(out, site, TEXTS)
    assert {r["result"]["label"] for r in results} <= {"dog", "fox"}


def test_a_modernbert_teacher_distils_into_a_modernbert_student(modernbert_classifier,
                                                                 modernbert_folder, tmp_path):
    """``distill`` with ModernBERT on both sides: the fine-tuned classifier
    teaches a student started from the (HF) masked LM's weights."""
    from albert_keras.drivers.distill import distill
    from albert_keras.drivers.distill_config import DistillConfig

    teacher, held_out, _ = modernbert_classifier
    train = _rows(tmp_path / "train.csv", 200, 3)
    metrics = distill(teacher, train, held_out, str(tmp_path / "student"), DistillConfig(
        student_init=modernbert_folder, epochs=4, batch_size=16, learning_rate=1e-3))
    # the label word is in the text: a student that learns nothing stays near 0.5
    assert metrics["teacher_accuracy"] >= 0.9 and metrics["accuracy"] >= 0.9, metrics


def test_shrink_distils_into_a_smaller_pretrained_modernbert_folder(modernbert_classifier,
                                                                      modernbert_folder,
                                                                      tmp_path):
    """``shrink`` with an Ettin-like student: a smaller pretrained HF
    ModernBERT folder (Ettin's encoders are ModernBERT folders; here the
    teacher's masked LM with its last layer dropped, as DistilBERT was
    made) with the teacher's tokenizer, distilled from the fine-tuned
    classifier, exported, validated and scored: it keeps the teacher's
    accuracy in a smaller file and is recommended."""
    import shutil

    from albert_keras.drivers.shrink import shrink
    from albert_keras.drivers.shrink_config import ShrinkConfig

    teacher, held_out, _ = modernbert_classifier
    student = tmp_path / "ettin_like"
    full = transformers.ModernBertForMaskedLM.from_pretrained(modernbert_folder)
    config = full.config
    config.num_hidden_layers -= 1
    config.layer_types = config.layer_types[:config.num_hidden_layers]
    smaller = transformers.ModernBertForMaskedLM(config)
    missing = smaller.load_state_dict(full.state_dict(), strict=False).missing_keys
    assert not missing, missing
    smaller.save_pretrained(str(student))
    for name in os.listdir(modernbert_folder):
        if name.startswith("tokenizer"):
            shutil.copy(os.path.join(modernbert_folder, name), student / name)
    train = _rows(tmp_path / "train.csv", 200, 4)
    out = str(tmp_path / "shrink")
    result = shrink(teacher, train, held_out, out, ShrinkConfig(
        students=(str(student),), modes=("none", "dynamic"), epochs=20, runs=3, baselines=False,
        tolerance=0.05))
    rows = {(r["candidate"], r["mode"]): r for r in result["rows"]}
    mine = rows[("ettin_like", "none")]
    assert mine["validated"] and rows[("ettin_like", "dynamic")]["validated"]
    # the label word is in the text: a student that learned nothing stays near 0.5
    assert mine["tflite_accuracy"] >= 0.9, mine
    assert mine["size_bytes"] < rows[("teacher", "none")]["size_bytes"]
    assert result["recommended"]["candidate"] == "ettin_like"


def test_a_long_text_run_at_1024_pieces_fine_tunes_on_a_cpu(tmp_path):
    """Fine-tuning and prediction at 1,024 pieces (ModernBERT's positions
    are rotary: the folder says how many it takes); the label word sits
    anywhere in ~1,000 pieces, past every 64-piece local window."""
    from tokenizers import Tokenizer

    folder = tmp_path / "long"
    folder.mkdir()
    tokenizer = Tokenizer.from_file(make_bpe_file(folder))
    torch.manual_seed(0)
    config = transformers.ModernBertConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, intermediate_size=48,
        num_hidden_layers=2, num_attention_heads=2, max_position_embeddings=2048,
        local_attention=64, pad_token_id=tokenizer.token_to_id("[PAD]"))
    transformers.ModernBertForMaskedLM(config).save_pretrained(str(folder))
    rng = np.random.default_rng(0)
    path = tmp_path / "long.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["text", "label"])
        for _ in range(16):
            label = str(rng.choice(["dog", "fox"]))
            words = list(rng.choice(WORDS, 360))
            words.insert(int(rng.integers(360)), label)
            out.writerow([" ".join(words), label])
    pieces = [len(tokenizer.encode(row[0]).ids) for row in csv.reader(open(path))][1:]
    assert 700 < min(pieces) and max(pieces) < 1022  # long, and whole at 1,024
    out = str(tmp_path / "cls")
    metrics = finetune(str(folder), str(path), str(path), out, FinetuneConfig(
        task="classify", epochs=1, batch_size=8, sequence_length=1024))
    assert metrics["examples"] == 16
    rows = predict(out, str(path))
    assert len(rows) == 16 and {r["label"] for r in rows} <= {"dog", "fox"}


def test_fill_mask_encodes_and_fills_as_transformers_pipeline(modernbert_folder, tmp_path):
    """The mask takes the space before it (``lstrip``, as in ModernBERT's
    published tokenizer.json) and the word after it keeps its own: the ids
    of transformers' fill-mask, and its top piece at every mask. A
    tokenizer trained by ``albert-keras`` writes the same flag."""
    from albert_keras.drivers import inference
    from albert_keras.tasks.masked_lm import encode_with_masks
    from albert_keras.text.bpe_trainer import train_byte_bpe
    from albert_keras.text.byte_bpe_tokenizer import ByteLevelBPE
    from albert_keras.text.spm_trainer import TokenizerConfig
    from tests.helpers import make_sentences

    texts = []
    for i, sentence in enumerate(make_sentences(20, seed=5)):
        words = sentence.split()
        words[1 + i % (len(words) - 2)] = "[MASK]"
        texts.append(" ".join(words))
    import shutil

    folder = str(tmp_path / "published")  # with the special tokens named, as published
    shutil.copytree(modernbert_folder, folder)
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "mask_token": "[MASK]",
                   "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                   "unk_token": "[UNK]"}, f)
    ours = ByteLevelBPE(os.path.join(folder, "tokenizer.json"))
    theirs = transformers.AutoTokenizer.from_pretrained(folder)
    for text in texts:
        assert encode_with_masks(ours, text) == theirs(text, add_special_tokens=False)[
            "input_ids"], text
    after = texts[0].split("[MASK]")[1]  # the words after the mask, as plain text encodes them
    assert encode_with_masks(ours, texts[0])[-len(ours.encode([after])[0]):] == ours.encode(
        [after])[0]
    pipeline = transformers.pipeline("fill-mask", model=folder, top_k=1)
    for text, found in zip(texts, inference.fill_mask(folder, texts, top_k=1)):
        assert found[0][0]["id"] == pipeline(text)[0]["token"], text
    trained = train_byte_bpe(make_sentences(200), str(tmp_path / "tokenizer.json"),
                             TokenizerConfig(vocab_size=400))
    added = {t["content"]: t for t in json.load(open(trained))["added_tokens"]}
    assert added["[MASK]"]["lstrip"] is True and added["[CLS]"]["lstrip"] is False


def test_convert_to_hf_with_onnx_runs_in_onnx_runtime_as_transformers(modernbert_classifier,
                                                                      tmp_path):
    """The transformers.js folder of a ModernBERT classifier (exact GELU in
    its GeGLU, local and global attention, rotary positions): ONNX Runtime
    gives transformers' logits on the written HF folder."""
    import onnxruntime

    out, held_out, _ = modernbert_classifier
    hf = str(tmp_path / "hf")
    assert main(["convert", out, "--to", "hf", "--onnx", "--out", hf]) == 0
    texts = [row["text"] for row in csv.DictReader(open(held_out, encoding="utf-8"))][:12]
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf)
    batch = tokenizer(texts, padding=True, return_tensors="np")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(hf).eval()
    with torch.no_grad():
        want = model(**{k: torch.tensor(v) for k, v in batch.items()}).logits.numpy()
    session = onnxruntime.InferenceSession(os.path.join(hf, "onnx", "model.onnx"))
    names = [i.name for i in session.get_inputs()]
    feed = {n: np.asarray(batch[n], np.int64) if n in batch else
            np.zeros_like(batch["input_ids"], np.int64) for n in names}
    got = session.run(["logits"], feed)[0]
    np.testing.assert_allclose(got, want, atol=1e-4)
