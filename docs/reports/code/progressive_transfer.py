"""Does MobileBERT's progressive knowledge transfer beat pretraining the student directly?

With the command line a user runs, on one data folder: pretrains a small
IB-BERT-shaped teacher (``--preset ib_bert``'s layout: LayerNorm, gelu, one
wide FFN, a block wider inside than between blocks), then the same
MobileBERT-shaped student twice, for the same number of steps: by
``pretrain --objective distill`` from that teacher (one layer stage per
student layer, then the masked LM on soft targets), and directly with
``--objective mlm``. Records each model's held-out masked-LM accuracy, the
most-frequent-token baseline and the wall time; with ``--tasks``, fine-tunes
the two students (and the student's architecture from scratch) on them with
``objectives.py``'s fine-tuning, which adds TF-IDF. Results go to ``--out``
as they come; a rerun skips what the file holds.

    python docs/reports/code/progressive_transfer.py --data runs/pretrain/data_64 \\
        --work runs/progressive --out docs/reports/results/progressive_transfer.json
    python docs/reports/code/progressive_transfer.py --table \\
        docs/reports/results/progressive_transfer.json
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

# 128 wide between blocks for both, as MobileBERT's 512 (so no projection)
TEACHER = {"num_hidden_layers": 4, "hidden_size": 128, "intra_bottleneck_size": 256,
           "intermediate_size": 1024, "num_attention_heads": 4, "embedding_size": 64}
STUDENT = {"num_hidden_layers": 4, "hidden_size": 128, "intra_bottleneck_size": 32,
           "intermediate_size": 128, "num_attention_heads": 4, "embedding_size": 64}


# every run runs() can make, in the table's order (the results file sorts its keys)
NAMES = ("teacher", "distilled", "direct", "direct_same_time")


def cli(*args):
    return [sys.executable, "-m", "albert_keras_cli", *args]


def runs(args):
    """``{name: pretrain flags}``: the teacher, then the students."""
    def student(steps):
        return ["--preset", "mobilebert", "--model-overrides", json.dumps(STUDENT),
                "--steps", str(steps)]

    made = {
        "teacher": ["--objective", "mlm", "--preset", "ib_bert", "--model-overrides",
                    json.dumps(TEACHER), "--steps", str(args.teacher_steps)],
        "distilled": ["--objective", "distill", "--teacher", os.path.join(args.work, "teacher"),
                      "--layer-stage-steps", str(args.layer_stage_steps),
                      *student(args.student_steps)],
        "direct": ["--objective", "mlm", *student(args.student_steps)],
    }
    if args.same_time_steps:  # the direct student again, given the distilled one's wall time
        made["direct_same_time"] = ["--objective", "mlm", *student(args.same_time_steps)]
    return made


def pretrain_all(args, results):
    from objectives import write

    for name, flags in runs(args).items():
        if name in results["pretraining"]:
            continue
        start = time.perf_counter()
        folder = os.path.join(args.work, name)
        subprocess.run(cli("pretrain", "--data", args.data, "--out", folder, "--overwrite",
                           "--batch-size", str(args.batch_size), "--seed", str(args.seed),
                           *flags, *shlex.split(args.pretrain_args)), check=True)
        with open(os.path.join(folder, "metrics.json"), encoding="utf-8") as f:
            metrics = json.load(f)
        metrics["benchmark_wall_seconds"] = round(time.perf_counter() - start, 1)
        metrics["flags"] = shlex.join(flags)
        metrics["parameters"] = _parameters(folder)
        results["pretraining"][name] = metrics
        write(args.out, results)
        print(name, json.dumps(metrics), flush=True)


def _parameters(folder):
    """The encoder's parameter count (the pooler included)."""
    import keras

    encoder = keras.saving.load_model(os.path.join(folder, "encoder.keras"))
    return int(sum(keras.ops.size(w) for w in encoder.weights))


def table(path):
    """The report's table: each model's held-out masked-LM accuracy and cost,
    then fine-tuned accuracy per task (mean ± std over seeds), TF-IDF last."""
    with open(path, encoding="utf-8") as f:
        results = json.load(f)
    tasks = sorted(results.get("summary", {}))
    lines = ["| model | parameters | steps | held-out MLM accuracy | wall s | "
             + "".join(f"{t} | " for t in tasks),
             "|---|---:|---:|---:|---:|" + "---:|" * len(tasks)]
    names = [n for n in NAMES if n in results["pretraining"]]
    if any("from_scratch" in results["summary"][t] for t in tasks):
        names.append("from_scratch")
    base = None
    for name in names:
        pre = results["pretraining"].get(name)
        cells = ([f"{pre['parameters']:,}", str(pre["steps"]),
                  f"{pre['masked_lm_accuracy']:.4f}", f"{pre['benchmark_wall_seconds']:.0f}"]
                 if pre else ["-"] * 4)
        base = base or (pre or {}).get("most_frequent_token_accuracy")
        for task in tasks:
            cell = results["summary"][task].get(name)
            cells.append(f"{cell['mean']:.3f} ± {cell['std']:.3f}" if cell else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if base is not None:
        lines.append(f"| most frequent token | - | - | {base:.4f} | - | "
                     + "".join("- | " for _ in tasks))
    baselines = results.get("baselines", {})
    if tasks:
        lines.append("| TF-IDF + logistic regression | - | - | - | - | "
                     + " | ".join(f"{baselines[t]['tfidf_logreg']:.3f}" for t in tasks) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", help="print the report's table from this results file")
    parser.add_argument("--data", help="a pretraining data folder")
    parser.add_argument("--work", default="runs/progressive")
    parser.add_argument("--teacher-steps", type=int, default=800)
    parser.add_argument("--layer-stage-steps", type=int, default=100)
    parser.add_argument("--student-steps", type=int, default=800,
                        help="each student's steps (the distilled one's stages included)")
    parser.add_argument("--same-time-steps", type=int, default=0,
                        help="also pretrain the direct student for this many steps (the "
                             "distilled one's wall time), as direct_same_time")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pretrain-args", default="", help="more `pretrain` flags for all three")
    parser.add_argument("--tasks", nargs="*", default=[], help="sotu task folders to fine-tune on")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default="docs/reports/results/progressive_transfer.json")
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return
    if not args.data:
        parser.error("--data is needed to pretrain")
    results = {"settings": vars(args), "pretraining": {}, "finetuning": {}}
    if os.path.isfile(args.out):
        with open(args.out, encoding="utf-8") as f:
            results = json.load(f)
    pretrain_all(args, results)
    if args.tasks:
        # objectives.py fine-tunes the folders the results file holds, and the
        # first one's architecture from scratch, with TF-IDF beside them
        subprocess.run([sys.executable, os.path.join(HERE, "objectives.py"), "--compare",
                        "--data", args.data,
                        "--objectives", *(name for name in runs(args) if name != "teacher"),
                        "--work", args.work, "--tasks", *args.tasks,
                        "--seeds", *map(str, args.seeds), "--max-train", "1000",
                        "--max-eval", "1000", "--finetune-epochs", "3", "--out", args.out],
                       check=True)
    print(table(args.out))


if __name__ == "__main__":
    main()
