"""Fine-tuning accuracy with and without length buckets (or in float32 and
in bfloat16), over seeds.

Length buckets change which rows share a batch (rows of similar length go
together), not what the model computes for a row, so accuracy should stay
within the seeds' spread. This runs ``finetune`` on one labelled split with
``length_buckets`` on and off for each seed, interleaved, and reports the
accuracy (mean, standard deviation, each seed) and the time per run next to
the majority class and a TF-IDF + logistic-regression baseline. Not part of
the test run; needs scikit-learn.

With ``--vary precision`` the two sides are ``--precision float32`` and
``mixed_bfloat16`` (what bf16 costs in accuracy where it is faster: CPUs
with AMX).

    albert-keras data sotu-task --out runs/sotu_century --max-train 1000
    python docs/reports/code/bucket_accuracy.py --init runs/pretrain --task runs/sotu_century
    python docs/reports/code/bucket_accuracy.py --init runs/pretrain --task runs/sotu_century \
        --vary precision --out docs/reports/results/precision_accuracy.json
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from finetune_recipe import tfidf_baseline  # noqa: E402  (the recipe table's baseline)

# the two sides of each comparison: their names and the setting that differs
SIDES = {"length_buckets": {"buckets": {"length_buckets": True},
                            "fixed": {"length_buckets": False}},
         "precision": {"float32": {"precision": "float32"},
                       "mixed_bfloat16": {"precision": "mixed_bfloat16"}}}


def main():
    args = _parser().parse_args()
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    train, evaluation = (os.path.join(args.task, f"{s}.csv") for s in ("train", "eval"))
    tfidf, majority, n_train, n_eval = tfidf_baseline(train, evaluation)
    sides = SIDES[args.vary]
    runs = {name: [] for name in sides}
    for seed in args.seeds:
        for name, field in sides.items():
            cfg = FinetuneConfig(task="classify", epochs=args.epochs,
                                 learning_rate=args.learning_rate, batch_size=32,
                                 sequence_length=128, seed=seed, **field)
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                metrics = finetune(args.init, train, evaluation, os.path.join(tmp, "m"), cfg)
                runs[name].append({"seed": seed, "accuracy": metrics["accuracy"],
                                   "seconds": time.perf_counter() - started})
            print(name, json.dumps(runs[name][-1]), flush=True)
    result = {"task": os.path.abspath(args.task), "init": os.path.abspath(args.init),
              "train_rows": n_train, "eval_rows": n_eval, "epochs": args.epochs,
              "learning_rate": args.learning_rate, "vary": args.vary, "majority_class": majority,
              "tfidf_logreg": tfidf, "runs": runs, "summary": _summary(runs)}
    from albert_keras.cpu import cpu_name
    from albert_keras.files import write_json

    result["cpu"] = cpu_name()
    write_json(args.out, result)
    print(json.dumps(result["summary"], indent=1))


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", required=True, help="a pretraining model folder")
    p.add_argument("--task", required=True, help="a folder with train.csv and eval.csv")
    p.add_argument("--vary", default="length_buckets", choices=sorted(SIDES))
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--learning-rate", type=float, default=3e-4)
    p.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "results",
                                                 "bucket_accuracy.json"))
    return p


def _summary(runs):
    """Mean and standard deviation of the accuracy, median seconds, per side."""
    out = {}
    for name, rows in runs.items():
        scores = [r["accuracy"] for r in rows]
        out[name] = {"accuracy_mean": statistics.mean(scores),
                     "accuracy_std": statistics.stdev(scores) if len(scores) > 1 else 0.0,
                     "seconds_median": statistics.median(r["seconds"] for r in rows)}
    return out


if __name__ == "__main__":
    main()
