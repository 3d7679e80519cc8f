"""Training-step throughput of AlbertPretrainer, float32 vs mixed_bfloat16.

Runs each precision in its own subprocess (a dtype policy is process-wide),
times single ``train_on_batch`` steps after warm-up and prints the median
tokens/s. Not part of the test run.

    python benchmarks/pretrain_throughput.py --preset albert_tiny --batch 64 --seq 128
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = """
import json, sys, time
import numpy as np, keras
args = json.loads(sys.argv[1])
keras.mixed_precision.set_global_policy(args["precision"])
from albert_keras import AlbertEncoder, AlbertPretrainer, get_preset
from albert_keras.optimizers.optimizer import make_optimizer
config = get_preset(args["preset"], vocab_size=args["vocab"])
model = AlbertPretrainer(AlbertEncoder(config), sop_dropout=0.0)
model.compile(optimizer=make_optimizer("lamb", learning_rate=1e-3, total_steps=1000,
                                       warmup_steps=10))
rng = np.random.default_rng(0)
b, s, p = args["batch"], args["seq"], 20
x = {"token_ids": rng.integers(5, args["vocab"], (b, s)).astype("int32"),
     "segment_ids": np.zeros((b, s), "int32"), "padding_mask": np.ones((b, s), "int32"),
     "masked_positions": rng.integers(0, s, (b, p)).astype("int32")}
y = {"masked_ids": rng.integers(5, args["vocab"], (b, p)).astype("int32"),
     "masked_weights": np.ones((b, p), "float32"), "sop_label": np.zeros((b,), "int32")}
times = []
for i in range(args["warmup"] + args["steps"]):
    t = time.perf_counter()
    model.train_on_batch(x, y)
    times.append(time.perf_counter() - t)
print("TIMES", json.dumps(times[args["warmup"]:]))
"""


def run(precision, args):
    config = dict(vars(args), precision=precision)
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(config)],
                         capture_output=True, text=True, check=True).stdout
    times = json.loads(out.split("TIMES", 1)[1])
    return args.batch * args.seq / statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default="albert_tiny")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=7)
    args = parser.parse_args()
    results = {p: run(p, args) for p in ("float32", "mixed_bfloat16")}
    print(f"| {args.preset} batch {args.batch} seq {args.seq} | median tokens/s |")
    print("|---|---|")
    for precision, tps in results.items():
        print(f"| {precision} | {tps:.0f} |")
    print(f"bf16 / fp32 = {results['mixed_bfloat16'] / results['float32']:.2f}")


if __name__ == "__main__":
    started = time.time()
    main()
    print(f"({time.time() - started:.0f}s)")
