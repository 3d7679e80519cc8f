"""sentence-transformers folders read as their modules say: the same
vectors as sentence-transformers' own ``encode`` on the same folder."""

import json
import os

import numpy as np
import pytest

from albert_keras.tasks.embed.st_folder import read_st_folder
from tests.helpers import make_hf_model
from tests.helpers import make_wordpiece_vocab

TEXTS = ["the quick fox jumps", "a dog sleeps under the table today", "fox"]


@pytest.fixture(scope="module")
def hf_bert(tmp_path_factory):
    import transformers

    folder = str(tmp_path_factory.mktemp("st") / "bert")
    os.makedirs(folder)
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    make_hf_model("BertModel", folder, vocab_size=size, max_position_embeddings=64)
    transformers.BertTokenizerFast(vocab, do_lower_case=True).save_pretrained(folder)
    return folder


def _st_folder(hf_bert, out, pooling, normalize):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import models

    transformer = models.Transformer(hf_bert, max_seq_length=48)
    modules = [transformer, models.Pooling(transformer.get_word_embedding_dimension(), pooling)]
    model = SentenceTransformer(modules=modules + ([models.Normalize()] if normalize else []),
                                device="cpu")
    model.save(out)
    return model


@pytest.mark.parametrize("pooling, normalize", [("mean", True), ("cls", False), ("max", True)])
def test_the_folder_embeds_as_sentence_transformers_does(hf_bert, tmp_path, pooling, normalize):
    from albert_keras import TextEmbedder

    out = str(tmp_path / "st")
    theirs = _st_folder(hf_bert, out, pooling, normalize).encode(TEXTS)
    model = TextEmbedder.from_preset(out, sequence_length=48)
    assert (model.embedder.pooling, model.embedder.normalize) == (pooling, normalize)
    np.testing.assert_allclose(model.predict(TEXTS), theirs, atol=1e-5)


def test_older_folders_flags_and_a_transformer_subfolder_are_read(hf_bert, tmp_path):
    """Folders written by sentence-transformers 2-4 (all-MiniLM-L6-v2's):
    one flag per pooling mode, the transformer in ``0_Transformer/``."""
    import shutil

    from albert_keras import TextEmbedder

    out = tmp_path / "old"
    shutil.copytree(hf_bert, out / "0_Transformer")
    (out / "1_Pooling").mkdir()
    (out / "1_Pooling" / "config.json").write_text(json.dumps(
        {"word_embedding_dimension": 32, "pooling_mode_cls_token": False,
         "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
         "pooling_mode_mean_sqrt_len_tokens": False}))
    (out / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_Transformer",
         "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}]))
    assert read_st_folder(str(out)) == {"encoder": str(out / "0_Transformer"),
                                        "pooling": "mean", "normalize": True}
    vectors = TextEmbedder.from_preset(str(out), sequence_length=48).predict(TEXTS)
    plain = TextEmbedder.from_preset(hf_bert, pooling="mean", sequence_length=48).predict(TEXTS)
    np.testing.assert_allclose(vectors, plain / np.linalg.norm(plain, axis=1, keepdims=True),
                               atol=1e-6)


@pytest.mark.parametrize("modules, pooling, message", [
    ([("Transformer", ""), ("Pooling", "1_Pooling"), ("Dense", "2_Dense")], {"pooling_mode": "mean"},
     r"modules.json: module Dense \(2_Dense\) is not read here"),
    ([("Transformer", "")], None, "modules.json: no Pooling module"),
    ([("Transformer", ""), ("Pooling", "1_Pooling")], {"pooling_mode": "lasttoken"},
     "config.json: pooling lasttoken; an embedder here pools one of mean, cls, max"),
    ([("Transformer", ""), ("Pooling", "1_Pooling")],
     {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True},
     "config.json: pooling mean\\+cls"),
])
def test_folders_we_cannot_read_as_their_author_meant_are_one_line_errors(
        tmp_path, modules, pooling, message):
    (tmp_path / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
         for i, (kind, path) in enumerate(modules)]))
    if pooling is not None:
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(ValueError, match=message):
        read_st_folder(str(tmp_path))


def test_an_embedder_fine_tuned_from_the_folder_keeps_its_pooling(hf_bert, tmp_path):
    """``--pooling auto`` continues the folder's own embedder (cls here),
    where a plain encoder would get mean pooling."""
    import csv

    from albert_keras import TextEmbedder
    from albert_keras.cli import main

    st = str(tmp_path / "st")
    _st_folder(hf_bert, st, "cls", True)
    pairs = tmp_path / "pairs.csv"
    with open(pairs, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["anchor", "positive"])
        writer.writerows([(f"the fox {i}", f"a dog {i} sleeps") for i in range(32)])
    out = str(tmp_path / "tuned")
    assert main(["finetune", "--task", "embed", "--init", st, "--train", str(pairs), "--out",
                 out, "--epochs", "1", "--batch-size", "16", "--seq-length", "32"]) == 0
    model = TextEmbedder.from_preset(out)
    assert (model.embedder.pooling, model.embedder.normalize) == ("cls", True)


def test_matryoshka_training_loss_is_sentence_transformers_on_the_same_folder(hf_bert, tmp_path):
    """``InBatchNegatives(dims=...)`` with its loss weight, against
    sentence-transformers' ``MatryoshkaLoss`` over
    ``MultipleNegativesRankingLoss`` (its dims: the full width, then ours)
    on the same folder, texts and token ids, dropout off."""
    import keras
    import torch
    from sentence_transformers.sentence_transformer.losses import MatryoshkaLoss
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from albert_keras import TextEmbedder
    from albert_keras.models.task_models.in_batch_negatives import InBatchNegatives
    from albert_keras.text.packer import pack_texts
    from tests.helpers import make_sentences

    st = _st_folder(hf_bert, str(tmp_path / "st"), "mean", True)
    st.eval()
    embedder = TextEmbedder.from_preset(str(tmp_path / "st"), sequence_length=48).embedder
    sentences = make_sentences(8, seed=4, low=5, high=12)
    columns = {name: pack_texts(embedder.encoder.tokenizer,
                                [" ".join(s.split()[part::2]) for s in sentences], None, 48)
               for part, name in enumerate(("anchor", "positive"))}
    width, dims = embedder.width, (8, 16)
    scorer = InBatchNegatives(embedder, dims=dims)
    labels = np.tile(np.arange(8), scorer.copies)
    ours = (1 + len(dims)) * float(keras.losses.SparseCategoricalCrossentropy(
        from_logits=True)(labels, scorer(columns)))
    features = [{"input_ids": torch.tensor(np.asarray(c["token_ids"])).long(),
                 "attention_mask": torch.tensor(np.asarray(c["padding_mask"])).long(),
                 "token_type_ids": torch.tensor(np.asarray(c["segment_ids"])).long()}
                for c in columns.values()]
    reference = MatryoshkaLoss(st, MultipleNegativesRankingLoss(st), [width, 16, 8])
    with torch.no_grad():
        theirs = float(reference(features, torch.arange(8)))
    assert ours == pytest.approx(theirs, rel=1e-4)
