"""Fine-tuning with the coarse and the fine length-bucket grid, interleaved.

TensorFlow traces one train step for every batch length, so buckets 8
pieces apart cost no tracing there (``length_buckets._FINE_LENGTHS``); this
times the same ``finetune`` with that grid and with the coarse one that
JAX and TPUs keep (``_LENGTHS``), each in its own process, steps timed by a
callback. The rows are a folder ``real_text.py --keep`` left (its
``bert`` folder and ``uniform_train.csv``/``uniform_eval.csv``).

    python benchmarks/real_text.py --cases uniform --rows 1500 --predict-rows 200 \\
        --repeats 1 --no-split --no-fixed --keep     # prints the work folder
    python benchmarks/bucket_grid.py WORK --epochs 3 --out benchmarks/results/bucket_grid.json
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from common import run_child  # noqa: E402
from real_text import STEP_TIMER  # noqa: E402

RUN = r"""
import json, shutil, sys, time
import numpy as np
import albert_keras.data.length_buckets as length_buckets
from albert_keras.drivers.finetune import finetune
from albert_keras.tasks.finetune_config import FinetuneConfig
grid, work, epochs, out = sys.argv[1:5]
if grid == "coarse":
    length_buckets._FINE_LENGTHS = length_buckets._LENGTHS
""" + STEP_TIMER + r"""
shutil.rmtree(out, ignore_errors=True)
began = time.perf_counter()
cfg = FinetuneConfig(task="classify", epochs=int(epochs), batch_size=32, sequence_length=128,
                     learning_rate=5e-5)
metrics = finetune(work + "/bert", work + "/uniform_train.csv", work + "/uniform_eval.csv",
                   out, cfg, callbacks=[Steps()])
print("RESULT " + json.dumps({"seconds": time.perf_counter() - began,
                              "train_seconds": metrics["train_seconds"],
                              "steps_seconds": float(np.sum(steps)), "steps": len(steps),
                              "step_median": float(np.median(steps)),
                              "accuracy": metrics["accuracy"]}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("work", help="a folder real_text.py --keep left")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--out", default=None, help="results JSON")
    args = p.parse_args()
    runs = {"fine": [], "coarse": []}
    for _ in range(args.repeats):
        for grid in runs:
            found = run_child(RUN, grid, args.work, str(args.epochs),
                              os.path.join(args.work, f"grid_{grid}"))
            if "error" in found:
                raise SystemExit(f"{grid}: {found['error']}")
            runs[grid].append(found)
    results = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "epochs": args.epochs,
               "environment": {k: v for k, v in os.environ.items()
                               if k.startswith(("ONEDNN", "ATEN", "MKL"))},
               "runs": runs,
               "median": {grid: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                          for grid, rs in runs.items()}}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    for grid, m in results["median"].items():
        print(f"{grid}: {m['seconds']:.1f} s in all, {m['steps_seconds']:.1f} s in "
              f"{m['steps']} steps (median {m['step_median'] * 1000:.0f} ms), "
              f"accuracy {m['accuracy']:.3f}")


if __name__ == "__main__":
    main()
