"""TFLite size and latency of MobileBERT next to BERT-base and ALBERT-base:
the paper's phone claim (4.3x smaller and 5.5x faster than BERT-base),
measured on this CPU with our exporter.

Random weights (no hub here: size and latency do not depend on the
values); full int8 calibrates on random ids. Each encoder is exported in
its own subprocess, timed alone (``size_mb``, ``median_ms``), then every
file in turn in one process (``interleaved_ms``), which gives the ratios.
Batch 1, sequence ``--seq``, ``--threads`` threads.

    python benchmarks/mobilebert_tflite.py --presets mobilebert bert_base albert_base \
        --modes none dynamic int8 --runs 30

Any presets compare the same way: ModernBERT's and Ettin's next to a BERT
of their width (``--presets modernbert_base bert_base ettin_encoder_32m
...``; the table's ratios are against BERT-base).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from common import cpu_name  # benchmarks/ is the script's folder

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = r"""
import json, sys
import numpy as np
args = json.loads(sys.argv[1])
from albert_keras.export.converter import convert, prepare_for_export, serving_function
from albert_keras.export.int8 import Int8Recipe
from albert_keras.families import build_backbone
from albert_keras.presets import get_preset
S = args["seq"]
config = get_preset(args["preset"])
rng = np.random.default_rng(0)
feeds = [{"ids": rng.integers(5, config.vocab_size, (1, S)).astype("int32"),
          "mask": np.ones((1, S), "int32"), "segment_ids": np.zeros((1, S), "int32")}
         for _ in range(args["calibration"])]
model = prepare_for_export(build_backbone(config))
blob = convert(model, serving_function(model, S), args["mode"],
               representative=feeds if args["mode"] == "int8" else None, int8=Int8Recipe("dense"))
open(args["out"], "wb").write(blob)
print("PARAMS", model.count_params())
"""


def _export(preset, mode, args, folder):
    out = os.path.join(folder, f"{preset}_{mode}.tflite")
    config = {"preset": preset, "mode": mode, "seq": args.seq, "out": out,
              "calibration": args.calibration}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(config)],
                          capture_output=True, text=True)
    if done.returncode:
        return None, None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    params = next(int(x.split()[1]) for x in done.stdout.splitlines() if x.startswith("PARAMS"))
    return out, params, None


def _rows(args, folder):
    from albert_keras.export.bench import bench

    rows = []
    for mode in args.modes:
        for preset in args.presets:
            path, params, error = _export(preset, mode, args, folder)
            if error:
                rows.append({"preset": preset, "mode": mode, "error": error})
                print(f"{preset} {mode}: {error}", flush=True)
                continue
            result = bench(path, runs=args.runs, threads=args.threads)
            rows.append({"preset": preset, "mode": mode, "parameters": params, **result})
            print(f"{preset} {mode}: {result['size_mb']:.1f} MB, median "
                  f"{result['median_ms']:.1f} ms", flush=True)
    return rows


def _interleave(rows, args):
    from albert_keras.export.bench import measure_interleaved

    done = [r for r in rows if "path" in r]
    for r, ms in zip(done, measure_interleaved([r["path"] for r in done], runs=args.runs,
                                               threads=args.threads)):
        r["interleaved_ms"] = ms


def _table(rows, args):
    """Markdown: each preset's size and latency, and BERT-base's over it."""
    def find(preset, mode):
        return next((r for r in rows if r["preset"] == preset and r["mode"] == mode), {})

    lines = ["| mode | model | parameters | MB | ms (interleaved) | BERT-base / this, size | "
             "BERT-base / this, latency |", "|---|---|---:|---:|---:|---:|---:|"]
    for mode in args.modes:
        base = find("bert_base", mode)
        for preset in args.presets:
            r = find(preset, mode)
            if "interleaved_ms" not in r:
                lines.append(f"| {mode} | {preset} | - | - | {r.get('error', '-')[:60]} | - | - |")
                continue
            size = f"{base['size_mb'] / r['size_mb']:.2f}" if "size_mb" in base else "-"
            speed = (f"{base['interleaved_ms'] / r['interleaved_ms']:.2f}"
                     if "interleaved_ms" in base else "-")
            lines.append(f"| {mode} | {preset} | {r['parameters'] / 1e6:.1f}M | "
                         f"{r['size_mb']:.1f} | {r['interleaved_ms']:.1f} | {size} | {speed} |")
    return "\n".join(lines)


def _write(rows, args, table):
    from albert_keras.cpu import cpu_flags

    machine = {"cpu": cpu_name(), "cores": os.cpu_count(),
               "simd": sorted(f for f in cpu_flags() if f.startswith(("avx512", "avx2", "amx")))}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"machine": machine, "args": vars(args), "table": table,
                   "rows": [{k: v for k, v in r.items() if k != "path"} for r in rows]},
                  f, indent=2)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["mobilebert", "bert_base", "albert_base"])
    parser.add_argument("--modes", nargs="+", default=["none", "dynamic", "int8"])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calibration", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "mobilebert_tflite.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = _rows(args, folder)
        _interleave(rows, args)
    table = _table(rows, args)
    print(table)
    _write(rows, args, table)


if __name__ == "__main__":
    main()
