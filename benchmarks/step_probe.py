"""One fine-tuning step of our classifier at a fixed shape, per family.

Where ``finetune_step.py`` sets our BERT step against torch's, this times
our own step alone for any preset (random ids, ``--batch`` rows of
``--length`` pieces, ``train_on_batch`` with the fine-tuning AdamW), so a
family's step can be set against another's, and the word table's AdamW
update against the rest (``--frozen-table``). Each case runs in its own
process; the median of the steps after the third.

    python benchmarks/step_probe.py --presets ettin_encoder_32m minilm --lengths 32 128
"""

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import numpy as np, keras
from albert_keras.families import build_backbone, preset_config
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.optimizers.optimizer import make_optimizer
case = json.loads(sys.argv[1])
config = preset_config(case["preset"], **case["overrides"])
keras.utils.set_random_seed(0)
encoder = build_backbone(config, dtype=case["precision"])
model = SequenceClassifier(encoder, num_classes=2)
encoder.token_embedding.trainable = not case["frozen"]
model.compile(optimizer=make_optimizer("adamw", learning_rate=5e-5, total_steps=100,
                                       warmup_steps=0, clip_norm=1.0),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
shape = (case["batch"], case["length"])
x = {"token_ids": rng.integers(5, 5000, shape).astype("int32"),
     "segment_ids": np.zeros(shape, "int32"), "padding_mask": np.ones(shape, "int32")}
y = rng.integers(0, 2, (case["batch"],)).astype("int32")
times = []
for _ in range(case["steps"]):
    started = time.perf_counter()
    model.train_on_batch(x, y)
    times.append(time.perf_counter() - started)
print("RESULT", json.dumps({"first_s": times[0], "step_ms": 1000 * statistics.median(times[3:])}))
"""

# MiniLM-L6's shape in the ALBERT family's BERT layout, with BERT's vocabulary
PRESETS = {"minilm": ("bert_base", dict(hidden_size=384, num_hidden_layers=6,
                                        num_hidden_groups=6, num_attention_heads=12,
                                        intermediate_size=1536)),
           "ettin_encoder_32m": ("ettin_encoder_32m", dict(vocab_size=50368)),
           "ettin_encoder_17m": ("ettin_encoder_17m", dict(vocab_size=50368))}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--presets", nargs="+", default=["ettin_encoder_32m", "minilm"],
                   choices=sorted(PRESETS))
    p.add_argument("--lengths", nargs="+", type=int, default=[32, 128])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=13)
    p.add_argument("--precision", default="mixed_bfloat16", choices=("mixed_bfloat16", "float32"))
    p.add_argument("--frozen-table", action="store_true", help="also with the word table frozen")
    p.add_argument("--out", default=None, help="results JSON")
    args = p.parse_args()
    from common import cpu_with_features  # benchmarks/ is the script's folder

    rows = []
    for length in args.lengths:
        for name in args.presets:
            for frozen in ((False, True) if args.frozen_table else (False,)):
                preset, overrides = PRESETS[name]
                case = dict(preset=preset, overrides=overrides, length=length, frozen=frozen,
                            batch=args.batch, steps=args.steps, precision=args.precision)
                done = subprocess.run([sys.executable, "-c", CHILD, json.dumps(case)],
                                      capture_output=True, text=True, check=True)
                result = json.loads(done.stdout.split("RESULT", 1)[1])
                rows.append({"name": name, **case, **result})
                print(f"{name} length {length}{' frozen table' if frozen else ''}: "
                      f"{result['step_ms']:.1f} ms a step (first {result['first_s']:.1f} s)",
                      flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"cpu": cpu_with_features(), "cores": os.cpu_count(), "rows": rows}, f,
                      indent=2)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
