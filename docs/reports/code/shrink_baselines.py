"""The baselines of ``shrink``'s table on a task's rows, without a teacher.

``shrink`` measures them next to the transformers on every run; this
script measures them alone on a train and eval file, for a report whose
table was written before the baselines were part of it (the century run
of docs/reports/on-device-choice.md):

* the average-word-embedding classifier of MediaPipe Model Maker's kind
  (``albert_keras.drivers.shrink_baselines``): its ``.tflite`` in each float
  mode, size, median latency at batch 1 and accuracy on the eval rows;
* TF-IDF + logistic regression's accuracy (needs scikit-learn).

    python docs/reports/code/shrink_baselines.py --train sotu/train.csv \
        --eval sotu/eval.csv --out docs/reports/results/shrink_baselines_century.json
"""

import argparse
import dataclasses
import os
import tempfile

from albert_keras.cpu import cpu_with_features
from albert_keras.drivers.shrink_baselines import baseline_rows
from albert_keras.drivers.shrink_baselines import tfidf_accuracy
from albert_keras.drivers.shrink_config import ShrinkConfig
from albert_keras.files import write_json
from albert_keras.tasks.readers import canonical_label
from albert_keras.tasks.readers import discover_labels
from albert_keras.tasks.readers import read_text_table


def main(argv=None):
    args = _parser().parse_args(argv)
    labels = discover_labels([canonical_label(v)
                              for v in read_text_table(args.train).labels])
    spec = {"labels": list(labels), "text_column": "text", "label_column": "label"}
    cfg = ShrinkConfig(modes=tuple(args.modes), runs=args.runs, threads=args.threads)
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "results"))
        rows = baseline_rows(spec, (args.train, args.eval), work, cfg)
    result = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "train": args.train, "eval": args.eval,
              "config": dataclasses.asdict(cfg), "rows": rows,
              "tfidf_logistic_regression": tfidf_accuracy(spec, (args.train, args.eval))}
    write_json(args.out, result)
    for row in rows:
        print(f"{row['candidate']} {row['mode']}: {row['size_mb']:.3f} MB, "
              f"{row['median_ms']:.2f} ms, accuracy {row['tflite_accuracy']:.4f}")
    print(f"TF-IDF + logistic regression: {result['tfidf_logistic_regression']}")
    return result


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", required=True, help="labelled training rows (text, label)")
    parser.add_argument("--eval", required=True, help="labelled eval rows")
    parser.add_argument("--modes", nargs="+", default=["none", "dynamic"],
                        choices=["none", "float16", "dynamic"])
    parser.add_argument("--runs", type=int, default=30, help="timed runs per file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", required=True, help="results JSON")
    return parser


if __name__ == "__main__":
    main()
