"""Training-step throughput of EncoderPretrainer, float32 vs mixed_bfloat16.

Runs each precision in its own subprocess (a dtype policy is process-wide),
times ``model.fit`` calls of ``--per-call`` steps each (as the run compiles
them) after warm-up and prints the median
tokens/s. The precisions alternate for ``--rounds`` rounds (a shared machine's
speed drifts) and each one's median over all its steps is reported, with the
CPU's bf16 flags (what ``--precision auto`` decides on). Not part of the test
run.

    python benchmarks/pretrain_throughput.py --preset albert_tiny --batch 64 --seq 64 \
        --out benchmarks/results/pretrain_throughput.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = """
import json, sys, time
import numpy as np, keras, tensorflow as tf
args = json.loads(sys.argv[1])
keras.mixed_precision.set_global_policy(args["precision"])
from albert_keras import AlbertEncoder, EncoderPretrainer, get_preset
from albert_keras.optimizers.optimizer import make_optimizer
config = get_preset(args["preset"], vocab_size=args["vocab"])
model = EncoderPretrainer(AlbertEncoder(config), sop_dropout=0.0)
# as the pretraining run compiles it: several steps per compiled call
model.compile(optimizer=make_optimizer("lamb", learning_rate=1e-3, total_steps=1000,
                                       warmup_steps=10),
              steps_per_execution=args["per_call"])
rng = np.random.default_rng(0)
b, s, p = args["batch"], args["seq"], 20
x = {"token_ids": rng.integers(5, args["vocab"], (b, s)).astype("int32"),
     "segment_ids": np.zeros((b, s), "int32"), "padding_mask": np.ones((b, s), "int32"),
     "masked_positions": rng.integers(0, s, (b, p)).astype("int32")}
y = {"masked_ids": rng.integers(5, args["vocab"], (b, p)).astype("int32"),
     "masked_weights": np.ones((b, p), "float32"), "sop_label": np.zeros((b,), "int32")}
ds = tf.data.Dataset.from_tensors((x, y)).repeat()
calls = args["per_call"]
model.fit(ds, steps_per_epoch=args["warmup"] * calls, verbose=0)
times = []
for i in range(args["steps"]):
    t = time.perf_counter()
    model.fit(ds, steps_per_epoch=calls, verbose=0)
    times.append((time.perf_counter() - t) / calls)
print("TIMES", json.dumps(times))
"""


def run(precision, args):
    """Seconds per step of ``precision``'s timed steps, in a new process."""
    config = dict(vars(args), precision=precision)
    config.pop("out")
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(config)],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.split("TIMES", 1)[1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="albert_tiny")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls")
    parser.add_argument("--steps", type=int, default=5, help="timed calls per process")
    parser.add_argument("--per-call", type=int, default=10, help="steps per compiled call")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    from albert_keras.precision import cpu_has_native_bf16
    from albert_keras.precision import resolve_precision

    times = {"float32": [], "mixed_bfloat16": []}
    for _ in range(args.rounds):
        for precision in times:
            times[precision] += run(precision, args)
    results = {p: args.batch * args.seq / statistics.median(t) for p, t in times.items()}
    print(f"| {args.preset} batch {args.batch} seq {args.seq} | median tokens/s |")
    print("|---|---|")
    for precision, tps in results.items():
        print(f"| {precision} | {tps:.0f} |")
    print(f"bf16 / fp32 = {results['mixed_bfloat16'] / results['float32']:.2f}")
    if args.out:
        record = {"settings": {k: v for k, v in vars(args).items() if k != "out"},
                  "native_bf16": cpu_has_native_bf16(),
                  "auto_picks": resolve_precision("auto"),
                  "median_tokens_per_second": results,
                  "bf16_over_float32": results["mixed_bfloat16"] / results["float32"]}
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(record, f, indent=2)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"({time.time() - started:.0f}s)")
