"""TFLite size and latency at the ALBERT-base shape: ours per quantization
mode next to keras-hub's ``AlbertBackbone`` exported the same way, in one run.

Both models have random weights (no hub here); size and latency do not
depend on the values. Full int8 calibrates on random ids, which is enough
for size and speed (quality is measured by ``albert-keras export`` on real
data). Latency: batch 1, sequence 128, median over ``--runs`` at
``--threads`` threads, each model in a fresh subprocess
(``albert_keras.export.bench``), then all models in turn in one process
(``interleaved_ms``), which gives the ratios.

``--heads``: ``encoder`` (ours against keras-hub's ``AlbertBackbone``) and
``classifier`` (ours against keras-hub's ``AlbertTextClassifier``, two
classes). Our classifier export computes only the ``[CLS]`` row in the last
block (``prepare_for_export``); keras-hub's computes every row.

``int8`` is each library's default full-int8 export: ours with
``int8_scope="dense"`` (the dense layers' matmuls in int8, the rest float),
keras-hub's backbone through the stock TFLite converter (every op with an
int8 kernel). ``int8_all`` is ours the stock way too.

    python benchmarks/export_tflite.py --heads encoder classifier \
        --modes none dynamic int8 int8_all --runs 30
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
import numpy as np, tensorflow as tf, keras
args = json.loads(sys.argv[1])
S, out = args["seq"], args["out"]
rng = np.random.default_rng(0)
feeds = [{"ids": rng.integers(5, 30000, (1, S)).astype("int32"),
          "mask": np.ones((1, S), "int32"), "segment_ids": np.zeros((1, S), "int32")}
         for _ in range(args["calibration"])]
if args["who"] == "ours":
    from albert_keras import SequenceClassifier, AlbertEncoder, get_preset
    from albert_keras.export.converter import convert, prepare_for_export, serving_function
    from albert_keras.export.int8 import Int8Recipe
    model = AlbertEncoder(get_preset("albert_base"))
    if args["head"] == "classifier":
        model = SequenceClassifier(model, 2)
    model = prepare_for_export(model)
    blob = convert(model, serving_function(model, S), args["mode"],
                   representative=feeds if args["mode"] == "int8" else None,
                   int8=Int8Recipe(args["scope"]))
else:
    import keras_hub
    from albert_keras.export.converter import convert
    from albert_keras.export.int8 import Int8Recipe
    backbone = keras_hub.models.AlbertBackbone(
        vocabulary_size=30000, num_layers=12, num_heads=12, num_groups=1,
        num_inner_repetitions=1, embedding_dim=128, hidden_dim=768,
        intermediate_dim=3072, max_sequence_length=512)
    spec = lambda name: tf.TensorSpec([1, S], tf.int32, name=name)
    model = backbone
    if args["head"] == "classifier":
        model = keras_hub.models.AlbertTextClassifier(backbone, 2, preprocessor=None)
    @tf.function(input_signature=[spec("ids"), spec("mask"), spec("segment_ids")])
    def serve(ids, mask, segment_ids):
        o = model({"token_ids": ids, "padding_mask": mask, "segment_ids": segment_ids})
        if args["head"] == "classifier":
            return {"logits": o}
        return {"sequence_output": o["sequence_output"], "pooled_output": o["pooled_output"]}
    blob = convert(model, serve, args["mode"],
                   representative=feeds if args["mode"] == "int8" else None,
                   int8=Int8Recipe(args["scope"]))
open(out, "wb").write(blob)
print("SIZE", len(blob))
"""


def export(who, head, mode, seq, folder, calibration):
    out = os.path.join(folder, f"{who}_{head}_{mode}.tflite")
    scope = "all" if mode == "int8_all" or who == "keras-hub" else "dense"
    config = {"who": who, "head": head, "mode": "int8" if mode.startswith("int8") else mode, "seq": seq,
              "out": out, "calibration": calibration, "scope": scope}
    done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(config)],
                          capture_output=True, text=True)
    if done.returncode:
        return None, (done.stderr.strip().splitlines() or ["failed"])[-1]
    return out, None


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heads", nargs="+", default=["encoder", "classifier"],
                        choices=["encoder", "classifier"])
    parser.add_argument("--modes", nargs="+", default=["none", "dynamic", "int8", "int8_all"])
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calibration", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(HERE, "results", "export_tflite.json"))
    parser.add_argument("--profile", action="store_true",
                        help="also time each model's ops one by one (albert-keras bench "
                             "--profile) and keep the per-op-kind table")
    return parser.parse_args()


def _export_and_bench(args, folder):
    """One row per (head, mode, library): size and fresh-process latency, or the error."""
    from albert_keras.export.bench import bench

    rows = []
    for head in args.heads:
        for mode in args.modes:
            for who in ("ours", "keras-hub"):
                path, error = export(who, head, mode, args.seq, folder, args.calibration)
                if error:
                    rows.append({"who": who, "head": head, "mode": mode, "error": error})
                    print(f"{who} {head} {mode}: {error}", flush=True)
                    continue
                result = bench(path, runs=args.runs, threads=args.threads)
                rows.append({"who": who, "head": head, "mode": mode, **result})
                print(f"{who} {head} {mode}: {result['size_mb']:.2f} MB, median "
                      f"{result['median_ms']:.2f} ms", flush=True)
    return rows


def _interleave(rows, args):
    """The ratios come from alternating every model in one process."""
    from albert_keras.export.bench import measure_interleaved

    done = [r for r in rows if "path" in r]
    medians = measure_interleaved([r["path"] for r in done], runs=args.runs,
                                  threads=args.threads)
    for r, ms in zip(done, medians):
        r["interleaved_ms"] = ms
        print(f"interleaved: {r['who']} {r['head']} {r['mode']} {ms:.2f} ms", flush=True)


def _profile(rows, args):
    from albert_keras.export.op_profile import format_profile
    from albert_keras.export.op_profile import profile_ops

    for r in (r for r in rows if "path" in r):
        profile = profile_ops(r["path"], threads=args.threads, runs=args.runs)
        r["profile"] = {"sum_ms": profile["sum_ms"], "by_type": profile["by_type"]}
        print(f"\nper op: {r['who']} {r['head']} {r['mode']}", flush=True)
        print("\n".join(format_profile(profile, whole_ms=r["interleaved_ms"], top=3)),
              flush=True)


def _table_row(rows, head, mode):
    def find(who, mode=mode):
        return next((r for r in rows if r["who"] == who and r["head"] == head
                     and r["mode"] == mode), {})

    def cell(r, k, f="{:.2f}"):
        return f.format(r[k]) if k in r else r.get("error", "-")[:40]

    def ratio(a, b):
        return (f"{a['interleaved_ms'] / b['interleaved_ms']:.2f}"
                if "interleaved_ms" in a and "interleaved_ms" in b else "-")

    ours, hub, hub_dynamic = find("ours"), find("keras-hub"), find("keras-hub", "dynamic")
    return (f"| {head} | {mode} | {cell(ours, 'size_mb')} | {cell(hub, 'size_mb')} | "
            f"{cell(ours, 'interleaved_ms')} | {cell(hub, 'interleaved_ms')} | "
            f"{ratio(ours, hub)} | {ratio(ours, hub_dynamic)} |")


def _write(rows, args):
    from albert_keras.cpu import cpu_flags

    # int8 matmuls gain from AVX512 (VNNI) and lose their edge on AVX2 alone
    machine = {"cpu": cpu_name(), "cores": os.cpu_count(),
               "simd": sorted(f for f in cpu_flags() if f.startswith(("avx512", "avx2", "amx")))}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        kept = [{k: v for k, v in r.items() if k != "path"} for r in rows]  # temp paths
        json.dump({"machine": machine, "args": vars(args), "rows": kept}, f, indent=2)
    os.replace(tmp, args.out)
    print(f"\nwrote {args.out}")


def main():
    args = _parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = _export_and_bench(args, folder)
        _interleave(rows, args)
        if args.profile:
            _profile(rows, args)
    print("\n| head | mode | ours MB | keras-hub MB | ours ms | keras-hub ms | latency ratio | "
          "ours / keras-hub dynamic |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for head in args.heads:
        for mode in args.modes:
            print(_table_row(rows, head, mode))
    _write(rows, args)


if __name__ == "__main__":
    main()
