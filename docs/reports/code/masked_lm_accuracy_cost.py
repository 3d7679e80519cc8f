"""Cost of one masked-LM accuracy update: ours against Keras' own metric.

``keras.metrics.SparseCategoricalAccuracy`` goes through ``keras.ops.argmax``,
which on the TensorFlow backend first rewrites ``-0.0`` logits with four
extra passes over the ``[batch, positions, vocabulary]`` tensor;
``MaskedLMAccuracy`` takes the plain argmax (same result). Both updates are
compiled with ``tf.function`` and timed interleaved, round by round; the
medians and their ratio go to ``--out``.

    python docs/reports/code/masked_lm_accuracy_cost.py --out /tmp/accuracy_cost.json

The default shape is the small-corpus recipe's at sequence 64 (64 rows, 27 masked
slots at 40%, 8,000 pieces).
"""

import argparse
import json
import os
import statistics
import time

import keras
import tensorflow as tf

from albert_keras.heads.masked_lm_accuracy import MaskedLMAccuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shape", type=int, nargs=3, default=[64, 27, 8000],
                        metavar=("BATCH", "POSITIONS", "VOCAB"))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=10, help="updates per timed round")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    batch, positions, vocab = args.shape
    logits = tf.random.normal([batch, positions, vocab], seed=0)
    labels = tf.random.uniform([batch, positions], 0, vocab, tf.int32, seed=1)
    weights = tf.ones([batch, positions])
    metrics = {"keras_sparse_categorical_accuracy": keras.metrics.SparseCategoricalAccuracy(),
               "masked_lm_accuracy": MaskedLMAccuracy()}
    updates = {name: tf.function(lambda m=m: m.update_state(labels, logits, sample_weight=weights))
               for name, m in metrics.items()}
    for update in updates.values():  # trace first
        update()
    times = {name: [] for name in updates}
    for _ in range(args.rounds):
        for name, update in updates.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                update()
            times[name].append((time.perf_counter() - start) / args.calls * 1000)
    medians = {name: statistics.median(t) for name, t in times.items()}
    results = {
        "shape": args.shape,
        "median_ms_per_update": {k: round(v, 3) for k, v in medians.items()},
        "keras_over_ours": round(medians["keras_sparse_categorical_accuracy"]
                                 / medians["masked_lm_accuracy"], 2),
        "same_result": float(metrics["masked_lm_accuracy"].result())
        == float(metrics["keras_sparse_categorical_accuracy"].result()),
    }
    with open(args.out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2)
    os.replace(args.out + ".tmp", args.out)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
