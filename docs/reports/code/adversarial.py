"""Adversarial fine-tuning (SiFT, R3F) against plain fine-tuning, same seeds.

On one labelled split (a folder with ``train.csv`` and ``eval.csv``), this
runs ``albert-keras finetune`` from ``--init`` with ``--adversarial none``,
``sift`` and ``r3f`` (each method's defaults), every seed of ``--seeds``
in turn for each method (so machine drift falls on all three alike), and
TF-IDF + logistic regression beside them. The table gives the eval
accuracy's mean and standard deviation and the median seconds per run
(the step cost: SiFT runs three forward passes a step, R3F two). Not part
of the test run; needs scikit-learn.

    albert-keras data sotu-task --out runs/sotu_century --max-train 1000
    python docs/reports/code/adversarial.py --init runs/pretrain --task runs/sotu_century \
        --max-eval 1000 --epochs 5
"""

import argparse
import json
import os
import statistics
import tempfile
import time

from finetune_recipe import tfidf_baseline

METHODS = ("none", "sift", "r3f")


def step_timer():
    """A Keras callback keeping each training batch's seconds (the step
    cost, without the epoch's evaluation)."""
    import keras

    class StepTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds, self.started = [], None

        def on_train_batch_begin(self, batch, logs=None):
            self.started = time.perf_counter()

        def on_train_batch_end(self, batch, logs=None):
            self.seconds.append(time.perf_counter() - self.started)

    return StepTimer()


def run_case(args, method, seed, train, evaluation):
    """One fine-tuning run: ``(accuracy, seconds, best epoch, median step seconds)``."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    knobs = {} if method == "none" else {"adversarial_noise": args.adversarial_noise,
                                         "adversarial_step": args.adversarial_step
                                         if method == "sift" else None}
    cfg = FinetuneConfig(task="classify", batch_size=32, sequence_length=args.seq_length,
                         precision=args.precision, seed=seed, adversarial=method,
                         epochs=args.epochs, **knobs)
    timer = step_timer()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        metrics = finetune(args.init, train, evaluation, os.path.join(tmp, "m"), cfg,
                           callbacks=[timer])
        seconds = time.perf_counter() - started
    steps = timer.seconds[2:] or timer.seconds  # the first two trace the step
    return metrics["accuracy"], seconds, metrics["best_epoch"], statistics.median(steps)


def sample_rows(path, n, out):
    """A seeded random sample of ``n`` of the CSV's rows (a file ordered by
    speech would bias its first rows), written to ``out``."""
    import csv
    import random

    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    random.Random(0).shuffle(rows)
    with open(out, "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[:n])
    return out


def cpu_name():
    """The CPU's model name (``/proc/cpuinfo``), for the timings."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


def summary(runs):
    """The table's row of one method's runs."""
    scores = [r[0] for r in runs]
    return {"accuracy_mean": statistics.mean(scores),
            "accuracy_std": statistics.stdev(scores) if len(scores) > 1 else 0.0,
            "accuracies": scores, "best_epochs": [r[2] for r in runs],
            "seconds_median": statistics.median(r[1] for r in runs),
            "step_seconds_median": statistics.median(r[3] for r in runs)}


def table(args, result):
    """The report's Markdown table."""
    rows = result["rows"]
    base = next(iter(rows.values()))["step_seconds_median"]  # the cost against the first method
    lines = [f"Task {os.path.basename(os.path.abspath(args.task))}: {result['train_rows']} "
             f"training and {result['eval_rows']} eval rows; seeds {args.seeds}; batch 32, "
             f"sequence {args.seq_length}, {args.precision}, {args.epochs or 'default'} epochs "
             "(the best kept).", "",
             "| fine-tuning | accuracy (mean +- std) | per seed | best epochs | s per run "
             "| ms per step | step cost |",
             "|---|---:|---|---|---:|---:|---:|",
             f"| majority class | {result['majority_class']:.4f} | | | | | |",
             f"| TF-IDF + logistic regression | {result['tfidf_logreg']:.4f} | | | | | |"]
    lines += [f"| {name} | {r['accuracy_mean']:.4f} +- {r['accuracy_std']:.4f} | "
              f"{', '.join(f'{a:.3f}' for a in r['accuracies'])} | {r['best_epochs']} | "
              f"{r['seconds_median']:.0f} | {1000 * r['step_seconds_median']:.0f} | "
              f"{r['step_seconds_median'] / base:.2f}x |"
              for name, r in rows.items()]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", required=True, help="a model folder (--init of finetune)")
    parser.add_argument("--task", required=True, help="a folder with train.csv and eval.csv")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--epochs", type=int, default=None, help="default: by model width")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--max-eval", type=int, default=None,
                        help="score a seeded random sample of this many eval rows")
    parser.add_argument("--adversarial-noise", type=float, default=None,
                        help="for sift and r3f (default: each method's)")
    parser.add_argument("--adversarial-step", type=float, default=None,
                        help="for sift (default: 1e-4)")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..",
                                                      "results", "adversarial"))
    args = parser.parse_args()

    train, evaluation = (os.path.join(args.task, f"{s}.csv") for s in ("train", "eval"))
    work = tempfile.mkdtemp()
    if args.max_eval:
        evaluation = sample_rows(evaluation, args.max_eval, os.path.join(work, "eval.csv"))
    tfidf, majority, n_train, n_eval = tfidf_baseline(train, evaluation)
    from albert_keras.files import atomic_write
    from albert_keras.files import write_json

    header = {"task": os.path.abspath(args.task), "init": os.path.abspath(args.init),
              "train_rows": n_train, "eval_rows": n_eval, "seeds": args.seeds,
              "tfidf_logreg": tfidf, "majority_class": majority,
              "cpu": cpu_name(), "precision": args.precision, "max_eval": args.max_eval,
              "adversarial_noise": args.adversarial_noise,
              "adversarial_step": args.adversarial_step}
    runs = {m: [] for m in args.methods}
    for seed in args.seeds:
        for method in args.methods:
            runs[method].append(run_case(args, method, seed, train, evaluation))
            accuracy, seconds, _, step = runs[method][-1]
            print(json.dumps({"method": method, "seed": seed, "accuracy": accuracy,
                              "seconds": seconds, "step_seconds": step}), flush=True)
            write_json(args.out + ".json", {**header, "runs": runs})  # what has run so far
    result = {**header, "rows": {m: summary(r) for m, r in runs.items()}}
    lines = table(args, result)
    write_json(args.out + ".json", result)
    with atomic_write(args.out + ".md") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
