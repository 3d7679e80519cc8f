"""A square matmul in bf16 and float32, compiled by each Keras backend's
library on this CPU: why ``--precision auto`` picks float32 for JAX on a CPU.

TensorFlow and torch hand matmuls to oneDNN, which uses the CPU's bf16
instructions (AVX512-BF16, AMX) where it has them; XLA's CPU compiler (JAX)
may not. Each library and dtype runs in its own child process, the cases
interleaved over ``--repeats`` rounds; the table gives the median TFLOP/s.

    python benchmarks/cpu_matmul.py --size 2048 --out benchmarks/results/cpu_matmul.json
"""

import argparse
import json
import statistics

from common import cpu_with_features  # benchmarks/ is the script's folder
from common import run_child

CHILD = r"""
import json, sys, timeit
library, dtype, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
if library == "jax":
    import jax, jax.numpy as jnp
    a = jax.random.normal(jax.random.key(0), (n, n), getattr(jnp, dtype))
    f = jax.jit(lambda x: x @ x)
    run = lambda: f(a).block_until_ready()
elif library == "tensorflow":
    import tensorflow as tf
    a = tf.random.normal((n, n), dtype=getattr(tf, dtype))
    f = tf.function(lambda x: tf.matmul(x, x), jit_compile=False)
    run = lambda: f(a).numpy()
else:
    import torch
    a = torch.randn(n, n, dtype=getattr(torch, dtype))
    run = lambda: a @ a
run()
seconds = min(timeit.repeat(run, number=5, repeat=3)) / 5
print("RESULT " + json.dumps({"tflops": 2 * n ** 3 / seconds / 1e12}))
"""

CASES = [(library, dtype) for library in ("jax", "tensorflow", "torch")
         for dtype in ("bfloat16", "float32")]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2048, help="the matrices' side")
    parser.add_argument("--repeats", type=int, default=3, help="rounds over the cases")
    parser.add_argument("--out", default=None, help="results JSON (default: print only)")
    args = parser.parse_args()
    runs = {f"{library} {dtype}": [] for library, dtype in CASES}
    for _ in range(args.repeats):
        for library, dtype in CASES:
            out = run_child(CHILD, library, dtype, str(args.size), timeout=600)
            runs[f"{library} {dtype}"].append(out.get("tflops", float("nan")))
    rows = {case: statistics.median(values) for case, values in runs.items()}
    result = {"cpu": cpu_with_features(), "size": args.size, "runs": runs, "median_tflops": rows}
    for case, tflops in rows.items():
        print(f"{case:22s} {tflops:.3f} TFLOP/s")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
