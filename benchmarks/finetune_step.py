"""One fine-tuning step at a fixed shape: ours against torch, each precision.

Where ``real_text.py`` times whole processes, this times the step alone, so
that a change to the step (the optimizer, the precision, the kernels) can be
judged one at a time on the CPU at hand. A BERT-shaped HF folder of a real
checkpoint's size (``--shape``, 30,522 pieces, random weights) is fine-tuned
as a two-label classifier on rows of exactly ``--lengths`` pieces, batch
``--batch``:

* ``ours-<precision>``: ``TextClassifier.fit`` (the path of
  ``albert-keras finetune``: fused AdamW, one traced step), rows padded to
  their length and no further;
* ``oursxla-<precision>``: the same with the train step compiled by XLA
  (``jit_compile=True``), only when asked for;
* ``oursfull-<precision>``: ours with the last block computing every row
  (as before the task models read ``[CLS]`` alone there), only when asked
  for;
* ``torch-<precision>``: HF's ``BertForSequenceClassification`` with
  ``torch.optim.AdamW``, what HF's Trainer runs (``bf16=True`` there is
  ``torch.autocast`` in bfloat16 around the forward pass).

Each case runs in its own process, the cases interleaved repeat by repeat;
the median step after ``WARMUP`` steps, and the first step (tracing and
kernel setup). The CPU is named with its matrix features.

    python benchmarks/finetune_step.py --out benchmarks/results/finetune_step.json
    python benchmarks/finetune_step.py --steps 3 --lengths 16 --repeats 1  # smoke
"""

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from common import run_child  # noqa: E402
from real_folders import BERT_VOCAB  # noqa: E402
from real_folders import SHAPES  # noqa: E402
from real_text import STEP_TIMER  # noqa: E402

WARMUP = 5
CASES = ("ours-float32", "ours-mixed_bfloat16", "torch-float32", "torch-bfloat16")
# ours with the train step compiled by XLA (jit_compile=True), and ours with the
# last block on every row: asked for by name
XLA_CASES = ("oursxla-float32", "oursxla-mixed_bfloat16", "oursfull-float32",
             "oursfull-mixed_bfloat16")

# Texts of `length - 2` words, each word one piece of the folder's vocabulary.
TEXTS = r"""
import random
def texts(count, length, vocab):
    pieces = [line.strip() for line in open(vocab, encoding="utf-8")][5:]
    rng = random.Random(0)
    return [" ".join(rng.choice(pieces) for _ in range(length - 2)) for _ in range(count)]
"""

OURS = TEXTS + r"""
import json, sys, time
import numpy as np, keras
from albert_keras.tasks.classify.text_classifier import TextClassifier
folder, precision, batch, length, steps = sys.argv[1:6]
batch, length, steps = int(batch), int(length), int(steps)
x = texts(batch * steps, length, folder + "/vocab.txt")
y = [str(i % 2) for i in range(len(x))]
if sys.argv[6:] == ["full"]:  # the model says it reads every row: the last block computes them
    from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
    SequenceClassifier.reads_only_cls = property(lambda self: False)
model = TextClassifier.from_preset(folder, precision=precision, sequence_length=length,
                                   length_buckets=False, learning_rate=5e-5)
if sys.argv[6:] == ["xla"]:
    model.compile(jit_compile=True)
""" + STEP_TIMER + r"""
model.fit(x, y, epochs=1, batch_size=batch, callbacks=[Steps()], verbose=0)
print("RESULT " + json.dumps({"first": steps[0], "steps": steps[1:]}))
"""

TORCH = TEXTS + r"""
import contextlib, json, sys, time
import torch
from transformers import BertForSequenceClassification, BertTokenizerFast
folder, precision, batch, length, steps = sys.argv[1:6]
batch, length, steps = int(batch), int(length), int(steps)
torch.manual_seed(0)
tokenizer = BertTokenizerFast.from_pretrained(folder)
model = BertForSequenceClassification.from_pretrained(folder, num_labels=2)
model.train()
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, weight_decay=0.01)
x = texts(batch * steps, length, folder + "/vocab.txt")
autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bfloat16"
            else contextlib.nullcontext())
seconds = []
for step in range(steps):
    enc = tokenizer(x[step * batch:(step + 1) * batch], return_tensors="pt")
    assert enc["input_ids"].shape == (batch, length), enc["input_ids"].shape
    labels = torch.arange(batch) % 2
    began = time.perf_counter()
    with autocast:
        loss = model(**enc, labels=labels).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    seconds.append(time.perf_counter() - began)
print("RESULT " + json.dumps({"first": seconds[0], "steps": seconds[1:]}))
"""


def main():
    args = _parser().parse_args()
    folder = _folder(tempfile.mkdtemp(prefix="finetune_step_"), args.shape)
    results = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "shape": args.shape,
               "vocab_size": BERT_VOCAB, "batch_size": args.batch, "warmup": WARMUP,
               "shapes": {}}
    for length in args.lengths:
        runs = {case: [] for case in args.cases}
        for _ in range(args.repeats):
            for case in args.cases:
                runs[case].append(_case(case, folder, args.batch, length, args.steps))
        results["shapes"][f"{args.batch}x{length}"] = _summary(runs)
        _write(args.out, results)
    _print(results)


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES + XLA_CASES)
    p.add_argument("--shape", default="minilm_l6", choices=sorted(SHAPES))
    p.add_argument("--lengths", nargs="+", type=int, default=[48, 128],
                   help="pieces per row, [CLS] and [SEP] included")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--steps", type=int, default=25, help="steps timed per process")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--out", default=None, help="results JSON")
    return p


def _folder(work, shape):
    """An HF BERT folder of ``shape`` with 30,522 pieces: the specials, then
    ``w0``, ``w1``... (each one piece), random weights."""
    import transformers

    folder = os.path.join(work, "bert")
    os.makedirs(folder)
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    pieces += [f"w{i}" for i in range(BERT_VOCAB - len(pieces))]
    vocab = os.path.join(folder, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    config = transformers.BertConfig(vocab_size=BERT_VOCAB, **SHAPES[shape])
    transformers.BertForPreTraining(config).save_pretrained(folder)
    transformers.BertTokenizerFast(vocab, do_lower_case=True).save_pretrained(folder)
    return folder


def _case(case, folder, batch, length, steps):
    """One process of ``case``: its first step and the median of the rest
    after the warmup (seconds), or its error."""
    side, precision = case.split("-", 1)
    code = OURS if side.startswith("ours") else TORCH
    got = run_child(code, folder, precision, str(batch), str(length), str(steps + WARMUP),
                    *({"oursxla": ["xla"], "oursfull": ["full"]}.get(side, [])))
    if "error" in got:
        return got
    return {"first": got["first"], "median": statistics.median(got["steps"][WARMUP - 1:])}


def _summary(runs):
    """Per case its runs and median step; each case's speed against the
    fastest torch case."""
    out = {}
    for case, got in runs.items():
        ok = [r for r in got if "error" not in r]
        out[case] = {"runs": got,
                     "median_ms": 1000 * statistics.median(r["median"] for r in ok) if ok else None,
                     "first_s": statistics.median(r["first"] for r in ok) if ok else None}
    peers = [v["median_ms"] for k, v in out.items() if k.startswith("torch") and v["median_ms"]]
    for case, v in out.items():
        if case.startswith("ours") and v["median_ms"] and peers:
            v["speedup_vs_best_torch"] = min(peers) / v["median_ms"]
    return out


def _write(path, results):
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
            f.write("\n")


def _print(results):
    print(f"{results['cpu']}, {results['cores']} cores, {results['shape']}'s shape, "
          f"{results['vocab_size']} pieces")
    shown = [c for c in CASES + XLA_CASES
             if c in CASES or any(c in cases for cases in results["shapes"].values())]
    print("| shape | " + " | ".join(shown) + " |")
    print("|---|" + "---:|" * len(shown))
    for shape, cases in results["shapes"].items():
        cells = [f"{cases[c]['median_ms']:.0f}" if cases.get(c, {}).get("median_ms") else "-"
                 for c in shown]
        print(f"| {shape} (ms per step) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
