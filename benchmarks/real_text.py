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
and the seconds to load; ``ours_auto`` is the default runtime, which runs
a few texts in the LiteRT file ``finetune`` kept; requests of 2 and 4 texts
too, and of 8 and 16, where TensorFlow's batching meets LiteRT's row by row).
Medians of the repeats; the CPU and its matrix features
are named in the results. Needs the ``bench`` extra (transformers, torch,
accelerate; the rows are fed as lists).

    python benchmarks/real_text.py --out benchmarks/results/real_text.json
    python benchmarks/real_text.py --cases short --repeats 1 --rows 64 --predict-rows 64  # smoke
    python benchmarks/real_text.py --cases uniform --repeats 2 --no-fixed
    python benchmarks/real_text.py --cases uniform --repeats 3 --latency-only
    python benchmarks/real_text.py --realistic --cases uniform --repeats 2  # a real job's size
    python benchmarks/real_text.py --shape deberta_v3_xsmall --cases short --repeats 1 --no-fixed
    python benchmarks/real_text.py --shape ettin_encoder_32m --cases short uniform --no-fixed
"""

import argparse
import json
import os
import resource
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
                          DataCollatorWithPadding, Trainer, TrainerCallback, TrainingArguments)
folder, train_csv, eval_csv, out, seq, batch, epochs = sys.argv[1:8]
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
                         per_device_eval_batch_size=64, num_train_epochs=int(epochs),
                         learning_rate=5e-5, weight_decay=0.01,
                         warmup_steps=int(0.1 * int(epochs) * (len(rows) // int(batch))),
                         save_strategy="no", report_to=[], logging_strategy="no",
                         use_cpu=True, seed=0, disable_tqdm=True)
steps = []
class Steps(TrainerCallback):  # each optimizer step's seconds, as ours reports them
    def on_step_begin(self, *a, **k):
        self.began = time.perf_counter()
    def on_step_end(self, *a, **k):
        steps.append(time.perf_counter() - self.began)
def accuracy(p):
    return {"accuracy": float((p.predictions.argmax(-1) == p.label_ids).mean())}
trainer = Trainer(model=model, args=args, train_dataset=encode(rows),
                  eval_dataset=encode(evals), data_collator=DataCollatorWithPadding(tokenizer),
                  compute_metrics=accuracy, callbacks=[Steps()])
train_began = time.time()
trainer.train()
train_seconds = time.time() - train_began
metrics = trainer.evaluate()
trainer.save_model(out)
tokenizer.save_pretrained(out)
print("RESULT " + json.dumps({"seconds": time.time() - started,
                              "accuracy": metrics["eval_accuracy"],
                              "train_seconds": train_seconds, "train_steps": len(steps),
                              "step_seconds_median": float(np.median(steps))}))
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
# (child-process code, shared with finetune_step.py and bucket_grid.py).
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
    runtime = {"ours": "keras", "ours_litert": "litert", "ours_auto": "auto"}[side]
    model = TextClassifier.load(folder, runtime=runtime)
    answer = lambda some: model.predict(some)
else:
    from transformers import pipeline
    classify = pipeline("text-classification", model=folder, device=-1)
    answer = lambda some: classify(some, truncation=True, max_length=128)
load = time.perf_counter() - began

def timed(size):
    seconds = []
    for i in range(0, len(texts) - size + 1, size):
        began = time.perf_counter()
        answer(texts[i:i + size])
        seconds.append(time.perf_counter() - began)
    return seconds

seconds = timed(1)
found = {"load": load, "first": seconds[0], "median": float(np.median(seconds[5:]))}
for size in (2, 4, 8, 16):  # a request of a few texts
    found[f"median_{size}"] = float(np.median(timed(size)[2:]))
print("RESULT " + json.dumps(found))
"""


def main():
    args = _parser().parse_args()
    if args.realistic:
        args.rows, args.epochs, args.predict_rows = 6000, 3, 20000
        args.no_fixed = args.no_split = True
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
               "rows": args.rows, "epochs": args.epochs, "predict_rows": args.predict_rows,
               # what this process was asked to emulate (oneDNN's ISA cap, say)
               "environment": {k: v for k, v in os.environ.items()
                               if k.startswith(("ONEDNN_", "ATEN_", "MKL_", "TF_"))},
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
    p.add_argument("--epochs", type=int, default=1, help="fine-tuning epochs (both sides)")
    p.add_argument("--realistic", action="store_true",
                   help="a real job's size: fine-tune 6,000 rows for 3 epochs and predict "
                        "20,000 rows (sets --rows, --epochs, --predict-rows, --no-fixed and "
                        "--no-split), whole processes with their user and sys seconds")
    p.add_argument("--no-split", action="store_true",
                   help="leave out the processes that split our seconds by phase and the "
                        "one-text latency")
    p.add_argument("--latency-only", action="store_true",
                   help="fine-tune each side once (not timed), then only one text at a time")
    p.add_argument("--out", default=None, help="results JSON")
    return p


# -- the runs --------------------------------------------------------------------------------


def _measure(folder, files, work, case, args):
    """Medians over interleaved repeats of each side's whole process (wall,
    user and sys seconds), and each fine-tune's own step timing."""
    runs = {k: [] for k in ("ours_finetune", "ours_finetune_fixed", "hf_trainer",
                            "ours_predict", "ours_predict_fixed", "hf_pipeline")}
    cpu = {k: [] for k in runs}
    steps = {"ours": [], "hf": []}
    accuracy = {"ours": [], "hf": []}
    also_precision, fixed = args.also_precision, not args.no_fixed

    def timed(key, call):
        value, seconds = _with_cpu(call)
        runs[key].append(seconds["wall"])
        cpu[key].append(seconds)
        return value

    for repeat in range(args.repeats):
        out = os.path.join(work, f"{case}_ours_{repeat}")
        metrics = timed("ours_finetune", lambda: _ours_finetune(folder, files, out, args.epochs))
        accuracy["ours"].append(metrics.get("accuracy"))
        steps["ours"].append(_step_timing(metrics))
        if also_precision:
            metrics, seconds = _with_cpu(lambda: _ours_finetune(
                folder, files, out + "_" + also_precision, args.epochs, "--precision",
                also_precision))
            runs.setdefault(f"ours_finetune_{also_precision}", []).append(seconds["wall"])
            accuracy.setdefault(f"ours_{also_precision}", []).append(metrics.get("accuracy"))
        hf_out = os.path.join(work, f"{case}_hf_{repeat}")
        hf = timed("hf_trainer", lambda: _child(HF_TRAIN, folder, files["train"], files["eval"],
                                                hf_out, SEQ, BATCH, args.epochs))
        accuracy["hf"].append(hf["accuracy"])
        steps["hf"].append(_step_timing(hf))
        if repeat == 0 and fixed:  # today's fixed padding, once: the before of the table
            timed("ours_finetune_fixed", lambda: _ours_finetune(
                folder, files, out + "_fixed", args.epochs, "--no-length-buckets"))
        timed("ours_predict", lambda: _ours_predict(out, files["predict"]))
        if also_precision:  # the folder fine-tuned in that precision predicts in it too
            runs.setdefault(f"ours_predict_{also_precision}", []).append(
                _with_cpu(lambda: _ours_predict(out + "_" + also_precision,
                                                files["predict"]))[1]["wall"])
        timed("hf_pipeline", lambda: _child(HF_PREDICT, hf_out, files["predict"], SEQ,
                                            PREDICT_BATCH))
        if repeat == 0 and fixed:
            timed("ours_predict_fixed", lambda: _ours_predict(out, files["predict"],
                                                              "--no-length-buckets"))
    medians = {k: statistics.median(v) for k, v in runs.items() if v}
    found = {"pieces": files["pieces"], "runs": runs, "median_s": medians,
             "cpu_s": {k: {part: statistics.median(r[part] for r in v) for part in v[0]}
                       for k, v in cpu.items() if v},
             "step_timing": {side: {k: statistics.median(r[k] for r in v) for k in v[0]}
                             for side, v in steps.items()},
             "accuracy": accuracy,
             "finetune_speedup_vs_hf": medians["hf_trainer"] / medians["ours_finetune"],
             "predict_speedup_vs_hf": medians["hf_pipeline"] / medians["ours_predict"]}
    timing = found["step_timing"]
    found["step_speedup_vs_hf"] = (timing["hf"]["step_seconds_median"]
                                   / timing["ours"]["step_seconds_median"])
    if fixed:
        found.update(finetune_speedup_vs_fixed=medians["ours_finetune_fixed"]
                     / medians["ours_finetune"],
                     predict_speedup_vs_fixed=medians["ours_predict_fixed"]
                     / medians["ours_predict"])
    if also_precision:
        found.update({f"finetune_{also_precision}_speedup_vs_hf":
                      medians["hf_trainer"] / medians[f"ours_finetune_{also_precision}"],
                      f"predict_{also_precision}_speedup_vs_hf":
                      medians["hf_pipeline"] / medians[f"ours_predict_{also_precision}"]})
    if not args.no_split:
        found.update(_splits(folder, files, work, case, out, hf_out, args))
    return found


def _splits(folder, files, work, case, out, hf_out, args):
    """Where our seconds go, and one text at a time (ours, LiteRT, HF)."""
    split = _child(OURS_SPLIT, folder, files["train"], os.path.join(work, f"{case}_split"),
                   BATCH)
    predict_split = _child(OURS_PREDICT_SPLIT, out, files["predict"],
                           os.path.join(work, f"{case}_predict_split.jsonl"), PREDICT_BATCH)
    latency = _latency(out, hf_out, files["predict"], args.repeats)
    found = {"ours_split_s": split, "ours_predict_split_s": predict_split,
             "one_text_latency_s": latency,
             "latency_speedup_vs_hf": latency["hf"]["median"] / latency["ours"]["median"],
             "latency_litert_speedup_vs_hf":
             latency["hf"]["median"] / latency["ours_litert"]["median"],
             "latency_auto_speedup_vs_hf":
             latency["hf"]["median"] / latency["ours_auto"]["median"]}
    if args.also_precision:
        name = f"ours_{args.also_precision}"
        latency[name] = _child(LATENCY, "ours", out + "_" + args.also_precision,
                               files["predict"], LATENCY_TEXTS)
        found[f"latency_{args.also_precision}_speedup_vs_hf"] = (
            latency["hf"]["median"] / latency[name]["median"])
    return found


def _with_cpu(call):
    """``(call(), {wall, user, sys})``: the seconds of the child processes
    ``call`` ran (and waited for)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    value = call()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return value, {"wall": time.time() - started, "user": after.ru_utime - before.ru_utime,
                   "sys": after.ru_stime - before.ru_stime}


def _step_timing(metrics):
    return {k: metrics.get(k) for k in ("train_seconds", "train_steps", "step_seconds_median")}


def _measure_latency(folder, files, work, case, args):
    """``--latency-only``: the fine-tuned folders once, then one text at a time."""
    out, hf_out = os.path.join(work, f"{case}_ours"), os.path.join(work, f"{case}_hf")
    _ours_finetune(folder, files, out, args.epochs)
    _child(HF_TRAIN, folder, files["train"], files["eval"], hf_out, SEQ, BATCH, args.epochs)
    latency = _latency(out, hf_out, files["predict"], args.repeats)
    return {"pieces": files["pieces"], "one_text_latency_s": latency,
            "latency_speedup_vs_hf": latency["hf"]["median"] / latency["ours"]["median"],
            "latency_litert_speedup_vs_hf":
            latency["hf"]["median"] / latency["ours_litert"]["median"],
            "latency_auto_speedup_vs_hf": latency["hf"]["median"] / latency["ours_auto"]["median"]}


def _latency(out, hf_out, path, repeats):
    """One text at a time, each side in its own process, the sides
    interleaved repeat by repeat: ``{side: {load, first, median}}``, the
    medians over the repeats (ours, ours_litert: the same folder in LiteRT,
    hf: the pipeline)."""
    runs = {"ours": [], "ours_auto": [], "ours_litert": [], "hf": []}
    for _ in range(repeats):
        for side in runs:
            runs[side].append(_child(LATENCY, side, hf_out if side == "hf" else out, path,
                                     LATENCY_TEXTS))
    return {side: {k: statistics.median(r[k] for r in results) for k in results[0]}
            for side, results in runs.items()}


def _ours_finetune(folder, files, out, epochs, *extra):
    """``albert-keras finetune`` (its ``metrics.json``)."""
    cli("finetune", "--task", "classify", "--init", folder, "--train", files["train"],
         "--eval", files["eval"], "--out", out, "--epochs", str(epochs), "--batch-size",
         str(BATCH), "--seq-length", str(SEQ), "--learning-rate", "5e-5", *extra)
    with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
        return json.load(f)


def _ours_predict(out, path, *extra):
    cli("predict", out, "--input", path, "--out", out + f"_predictions{len(extra)}.jsonl",
         "--batch-size", str(PREDICT_BATCH), *extra)


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
        _table(results, "pieces mean/p95/max | one text: ours keras / auto / LiteRT / HF "
               "(ms) | HF/ours (LiteRT) | load: keras / auto / LiteRT / HF (s) | 2, 4, 8, 16 "
               "texts (ms): keras; auto; LiteRT; HF", "---|---|---:|---|---", _latency_cells)
        return
    _table(results, "pieces mean/p95/max | fine-tune: ours / fixed / HF Trainer (s) | HF/ours "
           "| predict: ours / fixed / HF pipeline (s) | HF/ours", "---|---|---:|---|---:",
           _speed_cells)
    print()
    _table(results, "fine-tune user / sys (s): ours, HF | median step (ms): ours, HF | HF/ours "
           "| steps | outside fit (s): ours, HF | predict user / sys (s): ours, HF",
           "---|---|---:|---|---|---", _cpu_cells)
    print()
    if any("ours_split_s" not in r for r in results["cases"].values()):  # --no-split
        return
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


def _cpu_cells(r):
    c, t, m = r["cpu_s"], r["step_timing"], r["median_s"]

    def fixed(side, key):  # the process outside fit: import, load, tokenize, write
        return m[key] - t[side]["train_seconds"]

    return (f"{c['ours_finetune']['user']:.0f} / {c['ours_finetune']['sys']:.0f}, "
            f"{c['hf_trainer']['user']:.0f} / {c['hf_trainer']['sys']:.0f} | "
            f"{1000 * t['ours']['step_seconds_median']:.0f}, "
            f"{1000 * t['hf']['step_seconds_median']:.0f} | {r['step_speedup_vs_hf']:.2f}x | "
            f"{t['ours']['train_steps']:.0f}, {t['hf']['train_steps']:.0f} | "
            f"{fixed('ours', 'ours_finetune'):.0f}, {fixed('hf', 'hf_trainer'):.0f} | "
            f"{c['ours_predict']['user']:.0f} / {c['ours_predict']['sys']:.0f}, "
            f"{c['hf_pipeline']['user']:.0f} / {c['hf_pipeline']['sys']:.0f}")


def _predict_split_cells(r):
    s = r["ours_predict_split_s"]
    return (f"{s['import']:.1f} / {s['load']:.1f} / {s['tokenize']:.1f} / "
            f"{s['first_batch']:.1f} / {s['batches_after_first']:.1f} ({s['batches']} "
            f"batches) / {s['write']:.1f}")


def _latency_cells(r):
    p, lat = r["pieces"], r["one_text_latency_s"]
    sides = [s for s in ("ours", "ours_auto", "ours_litert", "hf") if s in lat]
    few = [s for s in sides if "median_2" in lat[s]]
    return (f"{p['mean']}/{p['p95']}/{p['max']} | "
            + " / ".join(f"{1000 * lat[s]['median']:.1f}" for s in sides)
            + f" | {r['latency_speedup_vs_hf']:.2f}x ({r['latency_litert_speedup_vs_hf']:.2f}x) | "
            + " / ".join(f"{lat[s]['load']:.1f}" for s in sides)
            + " | " + "; ".join(", ".join(f"{1000 * lat[s][f'median_{n}']:.0f}"
                                          for n in (2, 4, 8, 16) if f"median_{n}" in lat[s])
                                for s in few))


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
