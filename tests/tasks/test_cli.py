"""The fine-tuning commands through ``albert_keras.cli.main``."""

import csv
import json
import os

import numpy as np
import pytest

from albert_keras.cli import main


def test_finetune_evaluate_predict_commands(init_folder, task_files, tmp_path, capsys):
    out = str(tmp_path / "cls")
    code = main(["finetune", "--task", "classify", "--init", init_folder,
                 "--train", task_files["cls_train"], "--eval", task_files["cls_eval"],
                 "--out", out, "--epochs", "1", "--batch-size", "8", "--seq-length", "32"])
    assert code == 0
    printed = capsys.readouterr().out
    assert '"accuracy"' in printed and f"model folder: {out}" in printed
    # each command says where it runs, in one line (JSON output keeps stdout)
    where = "1 CPU device(s) on tensorflow, 1 replica(s): global batch"
    assert f"{where} 8, precision float32" in printed.splitlines()
    assert main(["evaluate", out, task_files["cls_eval"]]) == 0
    said = capsys.readouterr()
    assert json.loads(said.out)["examples"] == 16
    assert f"{where} 64, precision float32\n" in said.err
    predictions = str(tmp_path / "p.jsonl")
    assert main(["predict", out, "--input", task_files["cls_eval"], "--out", predictions]) == 0
    assert f"{where} 64, precision float32" in capsys.readouterr().out
    rows = [json.loads(line) for line in open(predictions, encoding="utf-8")]
    assert len(rows) == 16 and {r["label"] for r in rows} <= {"dog", "fox"}

    # never over an existing file without --overwrite, never over an input
    before = open(task_files["cls_eval"], "rb").read()
    capsys.readouterr()
    assert main(["predict", out, "--input", task_files["cls_eval"], "--out", predictions]) == 2
    assert f"{predictions} exists; pass --overwrite" in capsys.readouterr().err
    for target in (task_files["cls_eval"], os.path.join(out, "task.json")):
        assert main(["predict", out, "--input", task_files["cls_eval"], "--out", target,
                     "--overwrite"]) == 2
        assert "is an input of this command" in capsys.readouterr().err
    assert open(task_files["cls_eval"], "rb").read() == before
    json.load(open(os.path.join(out, "task.json")))
    assert main(["predict", out, "--input", task_files["cls_eval"], "--out", predictions,
                 "--overwrite"]) == 0


def test_predict_precision_of_a_bf16_folder(init_folder, task_files, tmp_path, capsys,
                                            monkeypatch):
    """A folder fine-tuned in bf16, on a CPU that multiplies bf16 natively
    (pretended: the tests run TensorFlow without oneDNN): ``predict`` runs
    a full batch in bf16 by default and in float32 with ``--precision
    float32``, whose scores are those of the rows one by one (small
    batches run in float32 either way)."""
    from albert_keras.data import length_buckets

    out = str(tmp_path / "bf16")
    assert main(["finetune", "--task", "classify", "--init", init_folder, "--train",
                 task_files["cls_train"], "--out", out, "--epochs", "1", "--batch-size", "8",
                 "--seq-length", "32", "--precision", "mixed_bfloat16"]) == 0
    assert json.load(open(os.path.join(out, "metrics.json")))["precision"] == "mixed_bfloat16"
    monkeypatch.setattr(length_buckets, "machine_precision", lambda: ("mixed_bfloat16", False))

    rows = list(csv.DictReader(open(task_files["cls_eval"], encoding="utf-8")))
    many = str(tmp_path / "many.csv")  # 64 rows: one batch of several hundred pieces
    with open(many, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows((rows * 4)[:64])

    def scores(*flags):
        path = str(tmp_path / f"p{len(flags)}{flags[-1] if flags else ''}.jsonl")
        assert main(["predict", out, "--input", many, "--out", path, *flags]) == 0
        return np.array([max(json.loads(line)["probabilities"].values())
                         for line in open(path, encoding="utf-8")])

    auto, exact, single = scores(), scores("--precision", "float32"), scores(
        "--batch-size", "1")
    assert np.abs(single - exact).max() < 1e-6
    assert 1e-5 < np.abs(auto - exact).max() < 0.05
    with pytest.raises(SystemExit):
        main(["predict", out, "--precision", "bfloat16"])
    assert "--precision: invalid choice: 'bfloat16'" in capsys.readouterr().err


def test_errors_are_one_line_naming_the_file(init_folder, task_files, tmp_path, capsys):
    out = str(tmp_path / "x")
    code = main(["finetune", "--task", "classify", "--init", init_folder,
                 "--train", task_files["cls_train"], "--out", out,
                 "--text-column", "sentence"])
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("albert-keras finetune: error: ") and "cls_train.csv" in err
    assert "no column 'sentence'" in err
    assert not os.path.exists(out)


def test_fill_mask_and_embed_commands(init_folder, tmp_path, capsys):
    assert main(["fill-mask", init_folder, "the quick [MASK] fox", "--top-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "the quick [MASK] fox" and lines[1].startswith("  [MASK] 1: ")
    assert "\u2581" not in lines[1]  # candidates as text, not SentencePiece pieces
    texts = tmp_path / "texts.txt"
    texts.write_text("the quick fox\na lazy dog\n", encoding="utf-8")
    out = str(tmp_path / "e.npy")
    assert main(["embed", init_folder, "--input", str(texts), "--out", out,
                 "--layers", "1,2", "--pooling", "cls"]) == 0
    import numpy as np

    assert np.load(out).shape == (2, 64)


def test_embed_never_writes_over_files_and_names_an_empty_input(init_folder, tmp_path,
                                                                capsys):
    texts = tmp_path / "texts.txt"
    texts.write_text("the quick fox\n", encoding="utf-8")
    existing = tmp_path / "old.jsonl"
    existing.write_text("keep me\n", encoding="utf-8")
    tokenizer = os.path.join(init_folder, "spm.model")
    cases = [
        ([str(texts), str(existing)], "old.jsonl exists; pass --overwrite"),
        ([str(texts), str(texts), "--overwrite"], "is an input of this command"),
        ([str(texts), tokenizer, "--overwrite"], "is an input of this command"),
    ]
    for (source, out, *flags), message in cases:
        capsys.readouterr()
        assert main(["embed", init_folder, "--input", source, "--out", out, *flags]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0]
    assert existing.read_text(encoding="utf-8") == "keep me\n"
    assert texts.read_text(encoding="utf-8") == "the quick fox\n"
    empty = tmp_path / "empty.txt"
    empty.write_text("\n  \n", encoding="utf-8")
    assert main(["embed", init_folder, "--input", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"albert-keras embed: error: {empty}: no text to embed (every line is "
                   "empty)"]


def test_sotu_task_is_split_by_speech(tmp_path, capsys):
    out = str(tmp_path / "party")
    assert main(["data", "sotu-task", "--out", out, "--labeling", "party",
                 "--max-train", "500"]) == 0
    def read(split):
        with open(os.path.join(out, f"{split}.csv"), encoding="utf-8", newline="") as f:
            return list(csv.DictReader(f))
    train, evaluation = read("train"), read("eval")
    assert len(train) == 500 and len(evaluation) > 100
    assert not {r["speech"] for r in train} & {r["speech"] for r in evaluation}
    assert {r["label"] for r in train + evaluation} == {"Democratic", "Republican"}
    assert main(["data", "sotu-task", "--out", out]) == 2  # exists, no --overwrite


def test_sotu_pairs_are_a_paragraphs_first_sentence_and_the_rest(tmp_path, capsys):
    from albert_keras.tasks.embed.pairs import read_pairs

    out = str(tmp_path / "pairs")
    assert main(["data", "sotu-task", "--out", out, "--labeling", "pairs",
                 "--max-train", "300"]) == 0
    assert "300 training and" in capsys.readouterr().out
    train = read_pairs(os.path.join(out, "train.csv"))
    evaluation = read_pairs(os.path.join(out, "eval.csv"))
    assert len(train) == 300 and len(evaluation) > 100
    with open(os.path.join(out, "train.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(out, "eval.csv"), encoding="utf-8", newline="") as f:
        held = {r["speech"] for r in csv.DictReader(f)}
    assert not {r["speech"] for r in rows} & held
    for row in rows[:50]:
        first = row["anchor"]
        assert len(first.split()) >= 4 and first[-1] in ".!?" and row["positive"]
        assert first not in row["positive"]


def test_predict_reads_stdin(init_folder, task_files, tmp_path, capsys, monkeypatch):
    import io

    out = str(tmp_path / "cls")
    assert main(["finetune", "--task", "classify", "--init", init_folder,
                 "--train", task_files["cls_train"], "--out", out, "--epochs", "1",
                 "--batch-size", "8", "--seq-length", "32"]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.StringIO('{"text": "the fox"}\n{"text": "a dog"}\n'))
    assert main(["predict", out]) == 0
    said = capsys.readouterr()
    assert "device(s) on tensorflow" in said.err  # stdout is the predictions alone
    lines = said.out.strip().splitlines()
    records = [json.loads(line) for line in lines]
    assert [set(r) for r in records] == [{"row", "text", "label", "probabilities"}] * 2
    assert [(r["row"], r["text"]) for r in records] == [(0, "the fox"), (1, "a dog")]
    monkeypatch.setattr("sys.stdin", io.StringIO('{"label": "x"}\n'))
    assert main(["predict", out]) == 2
    assert "<stdin>: no column 'text'" in capsys.readouterr().err


@pytest.mark.sampled(keep=2, group="jax_torch_runs")  # CI: 2 of the JAX/torch runs per commit
def test_finetune_on_the_jax_backend(init_folder, task_files, tmp_path, capsys):
    """--backend jax reruns the command under JAX; the folder it writes is an
    ordinary one that evaluate (here, TensorFlow) reads."""
    out = str(tmp_path / "cls_jax")
    code = main(["finetune", "--task", "classify", "--init", init_folder,
                 "--train", task_files["cls_train"], "--eval", task_files["cls_eval"],
                 "--out", out, "--epochs", "1", "--batch-size", "8", "--seq-length", "32",
                 "--backend", "jax", "--strategy", "data_parallel"])
    assert code == 0
    capsys.readouterr()
    assert main(["evaluate", out, task_files["cls_eval"]]) == 0
    assert json.loads(capsys.readouterr().out)["examples"] == 16
