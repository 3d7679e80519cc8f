"""Fine-tuning and prediction on real text, whole processes: ours against HF.

What a user waits for, start to finish, with an HF folder at a real
checkpoint's size (``--shape``: MiniLM-L6's, 6 layers, hidden 384, or
BERT-base's, with a WordPiece vocabulary trained on the corpus and padded to
BERT's 30,522 pieces; or DeBERTa-v3-xsmall's or -base's, with a
SentencePiece vocabulary padded to DeBERTa-v3's 128,000 pieces and a
128,100-row word table; or Ettin's 17M or 32M encoder's (ModernBERT), with
a byte-level BPE and ModernBERT's 50,368-row word table; random weights,
since no hub is reachable; so the word table, its gradient and its
optimizer slots are a real model's)
and labelled text whose lengths come from a real distribution:

* ``short``: State of the Union sentences (labelled with their paragraph's
  century), lengths like review snippets';
* ``long``: whole paragraphs, a quarter of them longer than 128 pieces;
* ``uniform``: uniformly short sentences, as reviews, tweets and queries
  are (mean about 28 pieces, 95th percentile 43, none over 68): length
  buckets save little there, so the fixed costs decide.

Each side runs as its own process, as a user runs it, interleaved repeat by
repeat: ``albert-keras finetune`` (one epoch) against HF's ``Trainer`` with
``DataCollatorWithPadding`` (each batch padded to its longest row, what HF
users get by default), then ``albert-keras predict`` against HF's
``pipeline("text-classification")``; ours also with ``--no-length-buckets``
(every row padded to ``--seq-length``, as before). Then where our process's
seconds go (import, loading, tokenizing, the first step with its tracing,
the other steps, writing), and one text at a time, as a service answers
requests (``TextClassifier.predict([text])``, on TensorFlow and in LiteRT
(``runtime="litert"``), against ``pipeline([text])``: the median latency,
and the seconds to load). Medians of the repeats; the CPU and its matrix features
are named in the results. Needs the ``bench`` extra (transformers, torch,
accelerate; the rows are fed as lists).

    python benchmarks/real_text.py --out benchmarks/results/real_text.json
    python benchmarks/real_text.py --cases short --repeats 1 --rows 64 --predict-rows 64  # smoke
    python benchmarks/real_text.py --cases uniform --repeats 2 --no-fixed
    python benchmarks/real_text.py --cases uniform --repeats 3 --latency-only
    python benchmarks/real_text.py --shape deberta_v3_xsmall --cases short --repeats 1 --no-fixed
    python benchmarks/real_text.py --shape ettin_encoder_32m --cases short uniform --no-fixed
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from real_folders import ALL_SHAPES  # noqa: E402
from real_folders import cli  # noqa: E402
from real_folders import corpus  # noqa: E402
from real_folders import default_vocab_size  # noqa: E402
from real_folders import family_of  # noqa: E402
from real_folders import model_folder  # noqa: E402
from real_folders import task_files  # noqa: E402

BATCH, PREDICT_BATCH, SEQ = 32, 64, 128
LATENCY_TEXTS = 200

# HF's side, as its users write it: tokenize, pad per batch, Trainer, save;
# then pipeline() on the saved folder.
HF_TRAIN = r"""
import csv, json, sys, time
started = time.time()
import numpy as np, torch
from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                          DataCollatorWithPadding, Trainer, TrainingArguments)
folder, train_csv, eval_csv, out, seq, batch = sys.argv[1:7]
rows = list(csv.DictReader(open(train_csv, encoding="utf-8")))
evals = list(csv.DictReader(open(eval_csv, encoding="utf-8")))
labels = sorted({r["label"] for r in rows})
tokenizer = AutoTokenizer.from_pretrained(folder)
def encode(rs):
    enc = tokenizer([r["text"] for r in rs], truncation=True, max_length=int(seq))
    return [{**{k: enc[k][i] for k in enc.keys()}, "labels": labels.index(r["label"])}
            for i, r in enumerate(rs)]
model = AutoModelForSequenceClassification.from_pretrained(
    folder, num_labels=len(labels), id2label=dict(enumerate(labels)),
    label2id={l: i for i, l in enumerate(labels)})
args = TrainingArguments(out, per_device_train_batch_size=int(batch),
                         per_device_eval_batch_size=64, num_train_epochs=1,
                         learning_rate=5e-5, weight_decay=0.01,
                         warmup_steps=int(0.1 * (len(rows) // int(batch))),
                         save_strategy="no", report_to=[], logging_strategy="no",
                         use_cpu=True, seed=0, disable_tqdm=True)
def accuracy(p):
    return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}
trainer = Trainer(model=model, args=args, train_dataset=encode(rows),
                  eval_dataset=encode(evals), data_collator=DataCollatorWithPadding(tokenizer),
                  compute_metrics=accuracy)
trainer.train()
metrics = trainer.evaluate()
trainer.save_model(out)
tokenizer.save_pretrained(out)
print("RESULT " + json.dumps({"seconds": time.time() - started,
                              "accuracy": metrics["eval_accuracy"]}))
"""

HF_PREDICT = r"""
import csv, json, sys, time
started = time.time()
from transformers import pipeline
folder, path, seq, batch = sys.argv[1:5]
texts = [r["text"] for r in csv.DictReader(open(path, encoding="utf-8"))]
classify = pipeline("text-classification", model=folder, device=-1)
out = classify(texts, batch_size=int(batch), truncation=True, max_length=int(seq))
print("RESULT " + json.dumps({"seconds": time.time() - started, "rows": len(out)}))
"""


# A Keras callback that appends each training step's seconds to `steps`
# (child-process code, shared with finetune_step.py).
STEP_TIMER = r"""
import time, keras
steps = []
class Steps(keras.callbacks.Callback):
    def on_train_batch_begin(self, batch, logs=None):
        self.began = time.perf_counter()
    def on_train_batch_end(self, batch, logs=None):
        steps.append(time.perf_counter() - self.began)
"""

# Child-process code after its imports (``started`` is the process's
# start): ``split`` gets the import time, and ``lap(name, t)`` each step's.
LAPS = r"""
split = {"import": time.time() - started}
def lap(name, since):
    split[name] = time.time() - since
    return time.time()
t = time.time()
"""

# Our process, step by step through the Python API (the same path as
# ``albert-keras finetune``): where the seconds go.
OURS_SPLIT = r"""
import csv, json, sys, time
started = time.time()
import numpy as np, keras
from albert_keras.tasks.classify.text_classifier import TextClassifier
folder, train_csv, out, batch = sys.argv[1:5]
""" + LAPS + r"""
rows = list(csv.DictReader(open(train_csv, encoding="utf-8")))
model = TextClassifier.from_preset(folder)
t = lap("load", t)
texts, labels = [r["text"] for r in rows], [r["label"] for r in rows]
model._data(texts, labels)  # tokenizing and packing alone, timed once
t = lap("tokenize", t)
""" + STEP_TIMER + r"""
model.fit(texts, labels, epochs=1, batch_size=int(batch), callbacks=[Steps()], verbose=0)
t = lap("fit", t)
model.save_to_preset(out)
lap("write", t)
median = float(np.median(steps[1:]))
split.update(steps=len(steps), step_median=median, first_step=steps[0],
             steps_after_first=sum(steps[1:]))
print("RESULT " + json.dumps(split))
"""

# Our prediction process, step by step through the Python API (the path of
# ``albert-keras predict``): import, load, read and tokenize, the first
# batch (tracing the graph), the other batches, records and writing.
OURS_PREDICT_SPLIT = r"""
import json, sys, time
started = time.time()
import numpy as np
from albert_keras.tasks.text_task import TextTask
from albert_keras.data import length_buckets
folder, path, out, batch = sys.argv[1:5]
""" + LAPS + r"""
model = TextTask.load(folder)
t = lap("load", t)
data = model._file_data(path, require_labels=False)
t = lap("tokenize", t)
batches = []
runner = length_buckets._batch_runner
def timed(*args, **kwargs):
    run, any_length = runner(*args, **kwargs)
    def each(batch):
        began = time.perf_counter()
        result = run(batch)
        batches.append(time.perf_counter() - began)
        return result
    return each, any_length
length_buckets._batch_runner = timed
outputs = model._predicted(data, int(batch))
t = lap("predict", t)
records = model.task.records(model.spec, data, outputs)
with open(out, "w", encoding="utf-8") as f:
    f.writelines(json.dumps({"row": i, **r}) + "\n" for i, r in enumerate(records))
lap("write", t)
split.update(batches=len(batches), first_batch=batches[0], batches_after_first=sum(batches[1:]))
print("RESULT " + json.dumps(split))
"""

# One text at a time, as a service answers requests: the median latency.
LATENCY = r"""
import csv, json, sys, time
import numpy as np
side, folder, path, count = sys.argv[1:5]
texts = [r["text"] for r in csv.DictReader(open(path, encoding="utf-8"))][:int(count)]
began = time.perf_counter()
if side.startswith("ours"):  # ours: TensorFlow's graph; ours_litert: LiteRT's XNNPACK
    from albert_keras.tasks.classify.text_classifier import TextClassifier
    model = TextClassifier.load(folder, runtime="litert" if side == "ours_litert" else "keras")
    answer = lambda text: model.predict([text])
else:
    from transformers import pipeline
    classify = pipeline("text-classification", model=folder, device=-1)
    answer = lambda text: classify([text], truncation=True, max_length=128)
load = time.perf_counter() - began
seconds = []
for text in texts:
    began = time.perf_counter()
    answer(text)
    seconds.append(time.perf_counter() - began)
print("RESULT " + json.dumps({"load": load, "first": seconds[0],
                             "median": float(np.median(seconds[5:]))}))
"""


def main():
    args = _parser().parse_args()
    work = tempfile.mkdtemp(prefix="real_text_")
    try:
        _run(args, work)
    finally:
        # the folders, fine-tuned models and predictions take 0.4-1.7 GB a run
        if args.keep:
            print(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def _run(args, work):
    text = corpus(work)
    vocab_size = args.vocab_size or default_vocab_size(args.shape)
    folder = model_folder(work, text["texts"], args.shape, vocab_size)
    results = {"cpu": cpu_with_features(), "cores": os.cpu_count(),
               "batch_size": BATCH, "sequence_length": SEQ, "shape": args.shape,
               "vocab_size": vocab_size,
               "model": f"{family_of(args.shape)}, {args.shape}'s shape, {vocab_size} rows (random weights)",
               "cases": {}}
    for case in args.cases:
        files = task_files(work, text, case, args.rows, args.predict_rows, folder)
        measure = _measure_latency if args.latency_only else _measure
        results["cases"][case] = measure(folder, files, work, case, args)
        _write(args.out, results)
    _print(results)


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=["short", "long", "uniform"],
                   choices=("short", "long", "uniform"))
    p.add_argument("--rows", type=int, default=1500, help="training rows")
    p.add_argument("--predict-rows", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--keep", action="store_true",
                   help="keep the work folder (the model folders, the fine-tuned models, the "
                        "rows) and print where it is; by default it is removed")
    p.add_argument("--shape", default="minilm_l6", choices=sorted(ALL_SHAPES))
    p.add_argument("--vocab-size", type=int, default=None,
                   help="rows of the word table (the corpus's vocabulary, padded; default: "
                        "the family's, 30,522 for BERT, 128,100 for DeBERTa-v3)")
    p.add_argument("--also-precision", default=None, choices=("mixed_bfloat16", "float32"),
                   help="also fine-tune ours at this --precision, once per repeat (bf16 on "
                        "CPUs with AMX)")
    p.add_argument("--no-fixed", action="store_true",
                   help="leave out ours with every row padded to the sequence length (the "
                        "table's before; slow for large shapes)")
    p.add_argument("--latency-only", action="store_true",
                   help="fine-tune each side once (not timed), then only one text at a time")
    p.add_argument("--out", default=None, help="results JSON")
    return p


# -- the runs --------------------------------------------------------------------------------


def _measure(folder, files, work, case, args):
    """Medians over interleaved repeats of each side's whole process."""
    runs = {k: [] for k in ("ours_finetune", "ours_finetune_fixed", "hf_trainer",
                            "ours_predict", "ours_predict_fixed", "hf_pipeline")}
    accuracy = {"ours": [], "hf": []}
    also_precision, fixed = args.also_precision, not args.no_fixed
    for repeat in range(args.repeats):
        out = os.path.join(work, f"{case}_ours_{repeat}")
        seconds, metrics = _ours_finetune(folder, files, out)
        runs["ours_finetune"].append(seconds)
        accuracy["ours"].append(metrics.get("accuracy"))
        if also_precision:
            seconds, metrics = _ours_finetune(folder, files, out + "_" + also_precision,
                                              "--precision", also_precision)
            runs.setdefault(f"ours_finetune_{also_precision}", []).append(seconds)
            accuracy.setdefault(f"ours_{also_precision}", []).append(metrics.get("accuracy"))
        hf_out = os.path.join(work, f"{case}_hf_{repeat}")
        hf = _child(HF_TRAIN, folder, files["train"], files["eval"], hf_out, SEQ, BATCH)
        runs["hf_trainer"].append(hf["seconds"])
        accuracy["hf"].append(hf["accuracy"])
        if repeat == 0 and fixed:  # today's fixed padding, once: the before of the table
            runs["ours_finetune_fixed"].append(
                _ours_finetune(folder, files, out + "_fixed", "--no-length-buckets")[0])
        runs["ours_predict"].append(_ours_predict(out, files["predict"]))
        if also_precision:  # the folder fine-tuned in that precision predicts in it too
            runs.setdefault(f"ours_predict_{also_precision}", []).append(
                _ours_predict(out + "_" + also_precision, files["predict"]))
        runs["hf_pipeline"].append(_child(HF_PREDICT, hf_out, files["predict"], SEQ,
                                          PREDICT_BATCH)["seconds"])
        if repeat == 0 and fixed:
            runs["ours_predict_fixed"].append(
                _ours_predict(out, files["predict"], "--no-length-buckets"))
    split = _child(OURS_SPLIT, folder, files["train"], os.path.join(work, f"{case}_split"),
                   BATCH)
    predict_split = _child(OURS_PREDICT_SPLIT, out, files["predict"],
                           os.path.join(work, f"{case}_predict_split.jsonl"), PREDICT_BATCH)
    latency = _latency(out, hf_out, files["predict"], args.repeats)
    if also_precision:
        latency[f"ours_{also_precision}"] = _child(LATENCY, "ours", out + "_" + also_precision,
                                                   files["predict"], LATENCY_TEXTS)
    medians = {k: statistics.median(v) for k, v in runs.items() if v}
    also = ({f"finetune_{also_precision}_speedup_vs_hf":
             medians["hf_trainer"] / medians[f"ours_finetune_{also_precision}"],
             f"predict_{also_precision}_speedup_vs_hf":
             medians["hf_pipeline"] / medians[f"ours_predict_{also_precision}"],
             f"latency_{also_precision}_speedup_vs_hf":
             latency["hf"]["median"] / latency[f"ours_{also_precision}"]["median"]}
            if also_precision else {})
    return {**also, "pieces": files["pieces"], "runs": runs, "median_s": medians,
            "ours_split_s": split, "ours_predict_split_s": predict_split,
            "one_text_latency_s": latency,
            "latency_speedup_vs_hf": latency["hf"]["median"] / latency["ours"]["median"],
            "latency_litert_speedup_vs_hf":
            latency["hf"]["median"] / latency["ours_litert"]["median"],
            "accuracy": accuracy,
            "finetune_speedup_vs_hf": medians["hf_trainer"] / medians["ours_finetune"],
            "predict_speedup_vs_hf": medians["hf_pipeline"] / medians["ours_predict"],
            **({"finetune_speedup_vs_fixed":
                medians["ours_finetune_fixed"] / medians["ours_finetune"],
                "predict_speedup_vs_fixed":
                medians["ours_predict_fixed"] / medians["ours_predict"]} if fixed else {})}


def _measure_latency(folder, files, work, case, args):
    """``--latency-only``: the fine-tuned folders once, then one text at a time."""
    out, hf_out = os.path.join(work, f"{case}_ours"), os.path.join(work, f"{case}_hf")
    _ours_finetune(folder, files, out)
    _child(HF_TRAIN, folder, files["train"], files["eval"], hf_out, SEQ, BATCH)
    latency = _latency(out, hf_out, files["predict"], args.repeats)
    return {"pieces": files["pieces"], "one_text_latency_s": latency,
            "latency_speedup_vs_hf": latency["hf"]["median"] / latency["ours"]["median"],
            "latency_litert_speedup_vs_hf":
            latency["hf"]["median"] / latency["ours_litert"]["median"]}


def _latency(out, hf_out, path, repeats):
    """One text at a time, each side in its own process, the sides
    interleaved repeat by repeat: ``{side: {load, first, median}}``, the
    medians over the repeats (ours, ours_litert: the same folder in LiteRT,
    hf: the pipeline)."""
    runs = {"ours": [], "ours_litert": [], "hf": []}
    for _ in range(repeats):
        for side in runs:
            runs[side].append(_child(LATENCY, side, hf_out if side == "hf" else out, path,
                                     LATENCY_TEXTS))
    return {side: {k: statistics.median(r[k] for r in results) for k in results[0]}
            for side, results in runs.items()}


def _ours_finetune(folder, files, out, *extra):
    started = time.time()
    cli("finetune", "--task", "classify", "--init", folder, "--train", files["train"],
         "--eval", files["eval"], "--out", out, "--epochs", "1", "--batch-size", str(BATCH),
         "--seq-length", str(SEQ), "--learning-rate", "5e-5", *extra)
    seconds = time.time() - started
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
        return seconds, json.load(f)


def _ours_predict(out, path, *extra):
    started = time.time()
    cli("predict", out, "--input", path, "--out", out + f"_predictions{len(extra)}.jsonl",
         "--batch-size", str(PREDICT_BATCH), *extra)
    return time.time() - started


def _child(code, *argv):
    done = subprocess.run([sys.executable, "-c", code, *map(str, argv)], capture_output=True,
                          text=True)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if done.returncode or line is None:
        raise RuntimeError(f"child process failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(line[len("RESULT "):])


# -- output --------------------------------------------------------------------------------


def _write(path, results):
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2, sort_keys=True)


def _print(results):
    print(f"{results['cpu']}, {results['cores']} cores; {results['model']}; batch "
          f"{BATCH}, sequence length {SEQ}")
    if all("median_s" not in r for r in results["cases"].values()):  # --latency-only
        _table(results, "pieces mean/p95/max | one text: ours / ours in LiteRT / HF (ms) | "
               "HF/ours (LiteRT) | load: ours / LiteRT / HF (s)", "---|---|---:|---",
               _latency_cells)
        return
    _table(results, "pieces mean/p95/max | fine-tune: ours / fixed / HF Trainer (s) | HF/ours "
           "| predict: ours / fixed / HF pipeline (s) | HF/ours", "---|---|---:|---|---:",
           _speed_cells)
    print()
    _table(results, "our process: import / load / tokenize / first step / other steps "
           "(median) / write (s) | one text: ours / ours in LiteRT / HF (ms) | HF/ours "
           "(LiteRT)", "---|---|---:",
           _split_cells)
    print()
    _table(results, "our prediction process: import / load / read and tokenize / first batch "
           "/ other batches / write (s)", "---", _predict_split_cells)


def _table(results, header, rule, cells):
    """A Markdown table with one row per case: ``cells(result)`` after its name."""
    print(f"| case | {header} |")
    print(f"|---|{rule}|")
    for case, r in results["cases"].items():
        print(f"| {case} | {cells(r)} |")


def _speed_cells(r):
    m, p = r["median_s"], r["pieces"]
    fixed = {k: f"{m[k]:.0f}" if k in m else "-" for k in ("ours_finetune_fixed",
                                                            "ours_predict_fixed")}
    return (f"{p['mean']}/{p['p95']}/{p['max']} | {m['ours_finetune']:.0f} / "
            f"{fixed['ours_finetune_fixed']} / {m['hf_trainer']:.0f} | "
            f"{r['finetune_speedup_vs_hf']:.2f}x | {m['ours_predict']:.0f} / "
            f"{fixed['ours_predict_fixed']} / {m['hf_pipeline']:.0f} | "
            f"{r['predict_speedup_vs_hf']:.2f}x")


def _predict_split_cells(r):
    s = r["ours_predict_split_s"]
    return (f"{s['import']:.1f} / {s['load']:.1f} / {s['tokenize']:.1f} / "
            f"{s['first_batch']:.1f} / {s['batches_after_first']:.1f} ({s['batches']} "
            f"batches) / {s['write']:.1f}")


def _latency_cells(r):
    p, lat = r["pieces"], r["one_text_latency_s"]
    sides = ("ours", "ours_litert", "hf")
    return (f"{p['mean']}/{p['p95']}/{p['max']} | "
            + " / ".join(f"{1000 * lat[s]['median']:.1f}" for s in sides)
            + f" | {r['latency_speedup_vs_hf']:.2f}x ({r['latency_litert_speedup_vs_hf']:.2f}x) | "
            + " / ".join(f"{lat[s]['load']:.1f}" for s in sides))


def _split_cells(r):
    s, lat = r["ours_split_s"], r["one_text_latency_s"]
    return (f"{s['import']:.1f} / {s['load']:.1f} / {s['tokenize']:.1f} / "
            f"{s['first_step']:.1f} / {s['steps_after_first']:.1f} "
            f"({1000 * s['step_median']:.0f} ms) / {s['write']:.1f} | "
            f"{1000 * lat['ours']['median']:.1f} / {1000 * lat['ours_litert']['median']:.1f} / "
            f"{1000 * lat['hf']['median']:.1f} | {r['latency_speedup_vs_hf']:.2f}x "
            f"({r['latency_litert_speedup_vs_hf']:.2f}x)")


if __name__ == "__main__":
    main()
