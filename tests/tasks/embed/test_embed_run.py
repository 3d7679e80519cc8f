"""``finetune --task embed`` end to end: pairs in, an embedder folder out
that ``evaluate``, ``embed`` and ``TextEmbedder`` read as it was trained."""

import csv
import json
import os
import random

import numpy as np
import pytest

from albert_keras.cli import main
from tests.helpers import make_sentences

# Each anchor's positive is its words put through a fixed mapping of the
# vocabulary and shuffled: no word in common, so an untrained encoder ranks
# the positives at chance, and the mapping is learnable from the pairs and
# holds for pairs never seen (the eval file's).
_WORDS = sorted({w.strip(".").lower() for s in make_sentences(400, seed=5) for w in s.split()})


def _pairs(n, seed):
    rng = random.Random(seed)
    mapping = dict(zip(_WORDS, _WORDS[7:] + _WORDS[:7]))
    rows = []
    for sentence in make_sentences(n, seed=seed, low=4, high=7):
        words = [w.strip(".").lower() for w in sentence.split()]
        mapped = [mapping[w] for w in words]
        rng.shuffle(mapped)
        rows.append((" ".join(words), " ".join(mapped)))
    return rows


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pairs")
    files = {}
    for split, n, seed in (("train", 192, 1), ("eval", 48, 2)):
        path = folder / f"{split}.csv"
        with open(path, "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["anchor", "positive"])
            writer.writerows(_pairs(n, seed))
        files[split] = str(path)
    return files


@pytest.fixture(scope="module")
def embed_folder(tmp_path_factory, init_folder, pair_files):
    out = str(tmp_path_factory.mktemp("embed") / "model")
    code = main(["finetune", "--task", "embed", "--init", init_folder, "--train",
                 pair_files["train"], "--eval", pair_files["eval"], "--out", out,
                 "--epochs", "8", "--batch-size", "16", "--learning-rate", "3e-3",
                 "--seq-length", "24", "--precision", "float32"])
    assert code == 0
    return out


def _untrained_scores(init_folder, path):
    from albert_keras import TextEmbedder
    from albert_keras.tasks.embed.pairs import corpus_of
    from albert_keras.tasks.embed.pairs import read_pairs
    from albert_keras.tasks.retrieval_metrics import retrieval_scores

    pairs = read_pairs(path)
    texts, relevant = corpus_of(pairs)
    model = TextEmbedder.from_preset(init_folder, sequence_length=24)
    return retrieval_scores(model.predict(pairs.columns["anchor"]), model.predict(texts),
                            relevant)


def test_an_embedder_learns_to_retrieve_held_out_pairs(embed_folder, init_folder, pair_files):
    """The eval pairs were never trained on; a loss with the wrong targets,
    or vectors that ignore the text, stay near chance (measured: nDCG@10
    0.17 untrained, 0.98 after 8 epochs of a hidden-size-32 model; the
    best epoch by nDCG@10 is the last)."""
    metrics = json.load(open(os.path.join(embed_folder, "metrics.json")))
    before = _untrained_scores(init_folder, pair_files["eval"])
    assert before["ndcg@10"] < 0.3, before
    assert metrics["ndcg@10"] > before["ndcg@10"] + 0.5, (before, metrics)
    assert metrics["recall@1"] > 0.6 and metrics["train_loss"] < 0.5, metrics
    assert metrics["select_metric"] == "ndcg@10" and metrics["corpus"] == 48
    assert len(metrics["eval_history"]) == metrics["train_steps"] // 12


def test_evaluate_and_embed_read_the_folder_as_trained(embed_folder, pair_files, tmp_path,
                                                       capsys):
    from albert_keras import TextEmbedder

    capsys.readouterr()
    assert main(["evaluate", embed_folder, pair_files["eval"]]) == 0
    scored = json.loads(capsys.readouterr().out)
    metrics = json.load(open(os.path.join(embed_folder, "metrics.json")))
    assert scored["ndcg@10"] == pytest.approx(metrics["ndcg@10"], abs=1e-6)
    # embed: the folder's pooling and unit length, without flags
    lines = tmp_path / "texts.txt"
    lines.write_text("the quick fox\nmarkets and weather\n", encoding="utf-8")
    out = str(tmp_path / "v.npy")
    assert main(["embed", embed_folder, "--input", str(lines), "--out", out]) == 0
    vectors = np.load(out)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    model = TextEmbedder.from_preset(embed_folder)
    assert model.embedder.normalize and model.embedder.pooling == "mean"
    np.testing.assert_allclose(model.predict(["the quick fox", "markets and weather"]),
                               vectors, atol=1e-5)
    # a choice given still wins over the folder's
    raw = TextEmbedder.from_preset(embed_folder, normalize=False).predict(["the quick fox"])
    assert abs(np.linalg.norm(raw) - 1.0) > 1e-3


@pytest.mark.parametrize("argv, message", [
    (["--dropout", "0.2"], "--dropout does not apply to --task embed"),
    (["--text-column", "query"], "--text-column does not apply to --task embed"),
    (["--pooling", "both"], "pooling 'both' is a classifier's"),
    (["--batch-size", "500"], "192 training pairs, fewer than one batch of 500; lower "
                              "--batch-size"),
])
def test_settings_an_embedder_has_no_use_for_are_refused(init_folder, pair_files, tmp_path,
                                                         capsys, argv, message):
    out = str(tmp_path / "m")
    code = main(["finetune", "--task", "embed", "--init", init_folder, "--train",
                 pair_files["train"], "--out", out, "--epochs", "1", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not os.path.exists(out)


def test_embed_settings_are_refused_for_other_tasks_and_bad_files_named(
        init_folder, pair_files, task_files, tmp_path, capsys):
    out = str(tmp_path / "m")
    assert main(["finetune", "--task", "classify", "--init", init_folder, "--train",
                 task_files["cls_train"], "--out", out, "--scale", "5"]) == 2
    assert "--scale is for task embed, not classify" in capsys.readouterr().err
    # a classification file given as pairs: the missing column, named
    assert main(["finetune", "--task", "embed", "--init", init_folder, "--train",
                 task_files["cls_train"], "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"{task_files['cls_train']}: no column 'anchor' (set --anchor-column)" in err
    assert not os.path.exists(out)


def test_predict_and_distill_on_an_embed_folder_say_so(embed_folder, pair_files, tmp_path,
                                                        capsys):
    assert main(["predict", embed_folder, "--input", pair_files["eval"]]) == 2
    err = capsys.readouterr().err
    assert "the embed task has no task object" in err and "albert-keras embed" in err
    out = str(tmp_path / "student")
    assert main(["distill", "--teacher", embed_folder, "--train", pair_files["train"],
                 "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert "embed folders are not distilled here yet" in err and len(err.splitlines()) == 1
    assert not os.path.exists(out)


def test_the_folder_exports_as_a_text_embedder_validated_on_its_pairs(embed_folder, pair_files,
                                                                     tmp_path, capsys):
    """The phone file of a trained embedder: its own pooling and unit
    length, checked by cosine against Keras on the pairs' texts by the
    export, and here once more through LiteRT on texts of our own."""
    from albert_keras import TextEmbedder
    from albert_keras.export.runtime import TFLiteRunner
    from albert_keras.text.packer import pack_texts

    out = str(tmp_path / "embedder.tflite")
    capsys.readouterr()
    assert main(["export", embed_folder, "--out", out, "--validation-data",
                 pair_files["eval"]]) == 0
    printed = capsys.readouterr().out
    assert "validated on 96 examples" in printed, printed
    model = TextEmbedder.from_preset(embed_folder, sequence_length=24)
    texts = ["the quick fox", "markets and weather talk"]
    packed = pack_texts(model.tokenizer, texts, None, 24)
    runner = TFLiteRunner(out)
    for row, expected in enumerate(model.predict(texts)):
        # the phone file's input names (MediaPipe's): ids, mask, segment_ids
        feed = {"ids": packed["token_ids"], "mask": packed["padding_mask"],
                "segment_ids": packed["segment_ids"]}
        feed = {name: value[row:row + 1] for name, value in feed.items()}
        found = runner(feed)["embeddings"][0]
        assert abs(np.linalg.norm(found) - 1) < 1e-5
        assert float(np.dot(found, expected)) > 0.9999


def test_convert_to_hf_writes_a_folder_sentence_transformers_loads(embed_folder, tmp_path,
                                                                   capsys):
    """The trained embedder goes out as sentence-transformers' folder: its
    encode gives our vectors, and the folder reads back as it was."""
    from sentence_transformers import SentenceTransformer

    from albert_keras import TextEmbedder

    out = str(tmp_path / "st")
    capsys.readouterr()
    assert main(["convert", "--to", "hf", embed_folder, "--out", out]) == 0
    assert "sentence-transformers modules: mean pooling, normalized" in capsys.readouterr().out
    texts = ["the quick fox", "markets and weather talk", "union"]
    ours = TextEmbedder.from_preset(embed_folder, sequence_length=24).predict(texts)
    theirs = SentenceTransformer(out, device="cpu").encode(texts)
    np.testing.assert_allclose(theirs, ours, atol=1e-5)
    back = TextEmbedder.from_preset(out, sequence_length=24)
    assert (back.embedder.pooling, back.embedder.normalize) == ("mean", True)
    np.testing.assert_allclose(back.predict(texts), ours, atol=1e-5)


def test_matryoshka_dims_train_short_vectors_that_still_retrieve(
        embed_folder, init_folder, pair_files, tmp_path, capsys):
    """The same run with ``--matryoshka-dims 4 8``: held-out nDCG@10 of the
    first 4 of 32 features far above the plain run's cut (measured 0.74 and
    0.72 plain against 0.97 and 0.99 over two seeds), the full vector as
    good; ``embed --dimensions`` and ``export --dimensions`` give the cut
    vectors, and a cut that is no embedder's is refused in one line."""
    from albert_keras import TextEmbedder
    from albert_keras.export.runtime import TFLiteRunner
    from albert_keras.tasks.embed.pairs import corpus_of
    from albert_keras.tasks.embed.pairs import read_pairs
    from albert_keras.tasks.retrieval_metrics import retrieval_scores
    from albert_keras.text.packer import pack_texts

    out = str(tmp_path / "nested")
    assert main(["finetune", "--task", "embed", "--init", init_folder, "--train",
                 pair_files["train"], "--out", out, "--epochs", "8", "--batch-size", "16",
                 "--learning-rate", "3e-3", "--seq-length", "24", "--precision", "float32",
                 "--matryoshka-dims", "8", "4"]) == 0
    pairs = read_pairs(pair_files["eval"])
    texts, relevant = corpus_of(pairs)

    def ndcg(folder, dimensions):
        model = TextEmbedder.from_preset(folder, dimensions=dimensions, sequence_length=24)
        return retrieval_scores(model.predict(pairs.columns["anchor"]), model.predict(texts),
                                relevant)["ndcg@10"]

    plain, nested = ndcg(embed_folder, 4), ndcg(out, 4)
    assert nested > 0.9 and nested > plain + 0.1, (plain, nested)
    assert ndcg(out, None) > ndcg(embed_folder, None) - 0.05
    cut = TextEmbedder.from_preset(out, dimensions=4, sequence_length=24)
    lines = tmp_path / "texts.txt"
    lines.write_text("the quick fox\nmarkets and weather\n", encoding="utf-8")
    assert main(["embed", out, "--input", str(lines), "--out", str(tmp_path / "v.npy"),
                 "--dimensions", "4"]) == 0
    vectors = np.load(tmp_path / "v.npy")
    np.testing.assert_allclose(vectors, cut.predict(["the quick fox", "markets and weather"]),
                               atol=1e-5)
    phone = str(tmp_path / "cut.tflite")
    assert main(["export", out, "--out", phone, "--dimensions", "4", "--validation-data",
                 pair_files["eval"]]) == 0
    packed = pack_texts(cut.tokenizer, ["the quick fox"], None, 24)
    found = TFLiteRunner(phone)({"ids": packed["token_ids"], "mask": packed["padding_mask"],
                                 "segment_ids": packed["segment_ids"]})["embeddings"][0]
    assert found.shape == (4,) and float(np.dot(found, vectors[0])) > 0.9999
    capsys.readouterr()
    assert main(["export", out, "--out", str(tmp_path / "wide.tflite"), "--dimensions",
                 "64"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--dimensions: dimensions 64 is not within this embedder's 32 features" in err
    assert len(err.splitlines()) == 1
    assert main(["finetune", "--task", "embed", "--init", init_folder, "--train",
                 pair_files["train"], "--out", str(tmp_path / "bad"),
                 "--matryoshka-dims", "32"]) == 2
    assert "--matryoshka-dims: 32 is not below the embedder's 32 features" in (
        capsys.readouterr().err)
    assert not os.path.exists(tmp_path / "bad")


def _sts_file(pair_files, folder):
    """The eval pairs as scored pairs: each anchor with its own positive
    (5) and with the next row's (0)."""
    rows = list(csv.DictReader(open(pair_files["eval"], encoding="utf-8")))
    path = folder / "sts.csv"
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["anchor", "positive", "score"])
        for i, row in enumerate(rows):
            writer.writerow([row["anchor"], row["positive"], 5])
            writer.writerow([row["anchor"], rows[(i + 1) % len(rows)]["positive"], 0])
    return str(path)


def test_scored_pairs_are_scored_by_spearman_and_choose_the_epoch(
        embed_folder, init_folder, pair_files, tmp_path, capsys):
    """A pairs file with a ``score`` column is STS: ``evaluate`` reports
    Spearman's correlation of each pair's cosine with its score (the trained
    embedder's far above the untrained one's: it ranks true pairs above
    mismatched ones), ``--eval`` with it chooses the epoch by it, and it
    trains nothing."""
    from albert_keras import TextEmbedder
    from albert_keras.tasks.retrieval_metrics import sts_spearman

    sts = _sts_file(pair_files, tmp_path)
    capsys.readouterr()
    assert main(["evaluate", embed_folder, sts]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["pairs"] == 96 and "ndcg@10" not in scored
    rows = list(csv.DictReader(open(sts, encoding="utf-8")))
    untrained = TextEmbedder.from_preset(init_folder, sequence_length=24)
    before = sts_spearman(untrained.predict([r["anchor"] for r in rows]),
                          untrained.predict([r["positive"] for r in rows]),
                          [float(r["score"]) for r in rows])
    assert scored["spearman"] > 0.6 and scored["spearman"] > before + 0.4, (before, scored)
    out = str(tmp_path / "chosen")
    assert main(["finetune", "--task", "embed", "--init", init_folder, "--train",
                 pair_files["train"], "--eval", sts, "--out", out, "--epochs", "2",
                 "--batch-size", "16", "--learning-rate", "3e-3", "--seq-length", "24"]) == 0
    metrics = json.load(open(os.path.join(out, "metrics.json")))
    assert metrics["select_metric"] == "spearman" and len(metrics["eval_history"]) == 2
    capsys.readouterr()
    assert main(["finetune", "--task", "embed", "--init", init_folder, "--train", sts,
                 "--out", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err.strip()
    assert "score an embedder but train none" in err and len(err.splitlines()) == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("anchor,positive,score\na b,c d,high\n", encoding="utf-8")
    assert main(["evaluate", embed_folder, str(bad)]) == 2
    assert f"{bad}:2: column 'score' holds 'high', not a number" in capsys.readouterr().err


def test_an_embed_folder_goes_to_transformers_js_as_onnx(embed_folder, tmp_path, capsys):
    """``convert --to hf --onnx`` of a trained embedder (it refused: an
    embedder names no transformers outputs): the ONNX file is its encoder,
    whose last hidden states, mean-pooled and normalized as the folder's
    sentence-transformers modules say (and transformers.js'
    feature-extraction options), are our vectors in ONNX Runtime."""
    import onnxruntime

    from albert_keras import TextEmbedder
    from albert_keras.text.packer import pack_texts

    out = str(tmp_path / "hf")
    capsys.readouterr()
    assert main(["convert", "--to", "hf", embed_folder, "--out", out, "--onnx"]) == 0
    printed = capsys.readouterr().out
    assert "sentence-transformers modules: mean pooling, normalized" in printed, printed
    texts = ["the quick fox", "markets and weather talk", "union"]
    model = TextEmbedder.from_preset(embed_folder, sequence_length=24)
    packed = pack_texts(model.tokenizer, texts, None, 24)
    session = onnxruntime.InferenceSession(os.path.join(out, "onnx", "model.onnx"))
    names = {i.name for i in session.get_inputs()}
    feed = {"input_ids": packed["token_ids"], "attention_mask": packed["padding_mask"],
            "token_type_ids": packed["segment_ids"]}
    hidden = session.run(None, {k: np.asarray(v, np.int64) for k, v in feed.items()
                                if k in names})[0]
    mask = np.asarray(packed["padding_mask"], np.float32)[:, :, None]
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    np.testing.assert_allclose(pooled, model.predict(texts), atol=1e-4)


def test_export_web_corpus_writes_a_search_page_that_finds_the_answers(embed_folder,
                                                                       pair_files, tmp_path):
    """The fourth command: a search page over the eval pairs' positives.
    In Chromium, the page embeds each anchor with the exported file and
    ranks the corpus as the Keras embedder's vectors rank it (the same top
    text, cosines within 1e-3); the trained embedder's top hit is the
    anchor's own positive for most anchors."""
    from albert_keras import TextEmbedder
    from albert_keras.tasks.embed.pairs import read_pairs
    from tests.web.driver import run_page

    pairs = read_pairs(pair_files["eval"])
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(pairs.columns["positive"]) + "\n", encoding="utf-8")
    site = str(tmp_path / "site")
    assert main(["export", embed_folder, "--web", site, "--web-corpus", str(corpus),
                 "--validation-data", pair_files["eval"]]) == 0
    assert json.load(open(os.path.join(site, "model.json")))["corpus"] == "corpus.json"
    queries = pairs.columns["anchor"][:16]
    results = run_page(site, queries)
    model = TextEmbedder.from_preset(embed_folder, sequence_length=24)
    ours = model.predict(queries) @ model.predict(pairs.columns["positive"]).T
    found = 0
    for row, result in enumerate(results):
        hits = result["result"]["hits"]
        assert len(hits) == 5 and hits[0]["score"] >= hits[-1]["score"]
        best = int(np.argmax(ours[row]))
        assert hits[0]["text"] == pairs.columns["positive"][best], result["text"]
        assert abs(hits[0]["score"] - ours[row, best]) < 1e-3
        found += hits[0]["text"] == pairs.columns["positive"][row]
    assert found >= 10, found


@pytest.mark.parametrize("argv, message", [
    (["--web-corpus", "CORPUS"], "--web-corpus is for --web (the page searches it)"),
    (["--web", "SITE", "--web-corpus", "MISSING"], "no such file (--web-corpus)"),
])
def test_a_search_page_request_that_cannot_work_is_refused_before_work(
        embed_folder, classifier_folder, tmp_path, capsys, argv, message):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a text\n", encoding="utf-8")
    names = {"CORPUS": str(corpus), "SITE": str(tmp_path / "site"),
             "MISSING": str(tmp_path / "missing.txt")}
    argv = [names.get(a, a) for a in argv]
    capsys.readouterr()
    assert main(["export", embed_folder, "--out", str(tmp_path / "e.tflite"), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1, err
    # a classifier has no vectors to search with
    assert main(["export", classifier_folder, "--web", str(tmp_path / "site"),
                 "--web-corpus", str(corpus)]) == 2
    assert "--web-corpus: the page searches with an embedder; this is a classifier" in (
        capsys.readouterr().err)
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt"]
