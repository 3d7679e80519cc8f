"""What each int8 remedy recovers, on one fine-tuned classifier.

``shrink`` tries the remedies only where int8 loses; this script measures
every variant of the int8 export on one folder, with the float and
dynamic-range files beside them, so a report can say what each step buys:

* the dense layers' matmuls in int8 with the rest in float (our default),
  against every op with an int8 kernel (``int8_scope="all"``);
* per-channel weight scales (our default) against one per kernel;
* 1, 2, 4 and 8 more layers kept in float, the ones whose int8 output strays
  most from float on the calibration rows (TensorFlow's quantization
  debugger);
* quantization-aware training on the training rows (``qat``).

Each file is validated against its Keras model and scored on every eval
row; size and median latency at batch 1 are measured as ``shrink`` does.

    python docs/reports/code/int8_remedies.py runs/century --train sotu/train.csv \\
        --eval sotu/eval.csv --out docs/reports/results/int8_remedies_century.json
"""

import argparse
import dataclasses
import logging
import os
import tempfile

from albert_keras.cpu import cpu_with_features
from albert_keras.drivers.shrink import measure_export
from albert_keras.drivers.shrink_config import ShrinkConfig
from albert_keras.export import ExportConfig
from albert_keras.files import write_json

# name -> ExportConfig fields; the int8 ones calibrate on the training rows
VARIANTS = {
    "none": {"quantize": "none"},
    "dynamic": {"quantize": "dynamic"},
    "int8 (dense scope, per-channel: default)": {"quantize": "int8"},
    "int8 dense, per-tensor": {"quantize": "int8", "int8_weights": "per-tensor"},
    "int8 all ops, per-channel": {"quantize": "int8", "int8_scope": "all"},
    "int8 all ops, per-tensor": {"quantize": "int8", "int8_scope": "all",
                                 "int8_weights": "per-tensor"},
    **{f"int8 + {n} float layer{'s' if n > 1 else ''}": {"quantize": "int8",
                                                         "int8_float_layers": n}
       for n in (1, 2, 4, 8)},
    "qat (1 epoch)": {"quantize": "qat"},
}


def main(argv=None):
    args = _parser().parse_args(argv)
    # the export's log names the layers each remedy kept in float, worst first
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cfg = ShrinkConfig(runs=args.runs, threads=args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for i, (name, fields) in enumerate(VARIANTS.items()):
            if args.only and name not in args.only:
                continue
            export = ExportConfig(validation_data=args.eval, examples=10**9,
                                  representative=args.train, qat_data=args.train,
                                  seed=args.seed, **fields)
            row = {"variant": name, **fields,
                   **measure_export(args.folder, os.path.join(work, f"{i}.tflite"), export, cfg)}
            rows.append(row)
            print(_line(row), flush=True)
            write_json(args.out, _result(args, cfg, rows))  # each row as it comes
    return _result(args, cfg, rows)


def _result(args, cfg, rows):
    return {"cpu": cpu_with_features(), "cores": os.cpu_count(), "folder": args.folder,
            "train": args.train, "eval": args.eval, "config": dataclasses.asdict(cfg),
            "rows": rows}


def _line(row):
    if not row["validated"]:
        return f"{row['variant']}: failed: {row['failure'][:160]}"
    kept = (row.get("int8") or {}).get("float_weight_layers")
    return (f"{row['variant']}: {row['size_mb']:.3f} MB, {row['median_ms']:.2f} ms, "
            f"accuracy {row['tflite_accuracy']:.4f} (Keras {row['keras_accuracy']:.4f})"
            + (f"; float weights: {', '.join(kept)}" if kept else ""))


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", help="a fine-tuned classifier folder")
    parser.add_argument("--train", required=True, help="labelled training rows (calibration, QAT)")
    parser.add_argument("--eval", required=True, help="labelled eval rows")
    parser.add_argument("--only", nargs="+", choices=list(VARIANTS), help="these variants only")
    parser.add_argument("--runs", type=int, default=30, help="timed runs per file")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0, help="calibration rows drawn")
    parser.add_argument("--out", required=True, help="results JSON")
    return parser


if __name__ == "__main__":
    main()
