"""``albert-keras finetune`` against HF transformers' ``Trainer``, same everything.

One encoder (``--init``: any of our model folders or a published
checkpoint folder) is written out as an HF folder; both trainers start
from those weights, read the same token ids (our tokenizer and packer make
them once, so only the fine-tuning stacks differ) and use the same
hyperparameters: AdamW (no decay on LayerNorm and biases), linear warmup
then decay, gradient clipping at 1.0, dropout 0.1 on the pooled output,
float32, evaluation after every epoch with the best epoch kept. Each is
run with ``--seeds``; the table gives mean and standard deviation, and
the median seconds per epoch after the first (training plus that epoch's
evaluation; same machine, the two stacks interleaved seed by seed), and
our whole run (reading, loading, tracing and writing the folder too). A
TF-IDF + logistic regression (scikit-learn) on the same split shows where
a small model stands. Not part of the test run; needs scikit-learn and
accelerate (HF's Trainer).

``--kind tag`` runs the tagging comparison on a task derived from the same
paragraphs (there is no labelled tagging corpus here): every word that
starts with a capital letter and does not open a sentence is ``B-NAME``,
the rest ``O``, written as CoNLL. With a lower-casing tokenizer the model
cannot see the capitals and must find names from context. Both sides read
the features our ``tag`` task makes (first piece of each word labelled)
and are scored by that task's own entity F1.

    albert-keras data sotu-task --out runs/sotu_century --max-train 1000
    python benchmarks/finetune_parity.py --init runs/pretrain --task runs/sotu_century \\
        --max-eval 1000 --epochs 3 --seeds 0 1 2
    python benchmarks/finetune_parity.py --kind tag --init runs/pretrain \
        --task runs/sotu_century --max-train 1000 --max-eval 500 --epochs 3
"""

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

# The same TF-IDF baseline as the fine-tuning recipe's table (a report script).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "docs", "reports", "code"))
from finetune_recipe import tfidf_baseline  # noqa: E402

MAIN = {"classify": "accuracy", "tag": "entity_f1"}


def read_csv(path, limit=None, seed=0):
    """``(texts, labels)``; with ``limit``, a seeded random sample (the sotu
    files are in speech order, so their first rows are one century)."""
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    if limit and limit < len(rows):
        keep = np.random.default_rng(seed).choice(len(rows), limit, replace=False)
        rows = [rows[i] for i in sorted(keep)]
    return [r["text"] for r in rows], [r["label"] for r in rows]


def write_csv(path, texts, labels):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels))


def epoch_seconds(marks):
    """Median seconds per epoch after the first (which also traces or warms up)."""
    durations = np.diff(marks)
    return float(np.median(durations[1:] if len(durations) > 1 else durations))


def write_conll(path, texts):
    """The derived name-tagging task (see the module docstring)."""
    lines = []
    for text in texts:
        words = text.split()
        if not words:
            continue
        opens = True
        for word in words:
            name = word[:1].isupper() and not opens
            lines.append(f"{word} {'B-NAME' if name else 'O'}")
            opens = word[-1:] in ".!?"
        lines.append("")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# -- ours ------------------------------------------------------------------------------------


def run_ours(init, train_csv, eval_csv, args, seed):
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    cfg = FinetuneConfig(task=args.kind, epochs=args.epochs, batch_size=args.batch_size,
                         sequence_length=args.seq_length, learning_rate=args.learning_rate,
                         seed=seed, precision="float32")
    import keras

    class EpochClock(keras.callbacks.Callback):
        """Epoch starts and the end of training (each epoch's evaluation in)."""

        def __init__(self):
            super().__init__()
            self.marks = []

        def on_epoch_begin(self, epoch, logs=None):
            self.marks.append(time.perf_counter())

        def on_train_end(self, logs=None):
            self.marks.append(time.perf_counter())

    clock = EpochClock()
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        metrics = finetune(init, train_csv, eval_csv, os.path.join(folder, "run"), cfg,
                           callbacks=[clock])
        total = time.perf_counter() - start
    return metrics[MAIN[args.kind]], epoch_seconds(clock.marks), total


# -- HF transformers -------------------------------------------------------------------------


def _training_arguments(args, folder, seed, rows):
    """HF ``TrainingArguments`` with our fine-tuning's settings: AdamW with
    decay 0.01, 10% linear warmup then decay, clipping at 1.0, the best epoch kept."""
    import transformers

    steps = (rows // args.batch_size) * args.epochs
    return transformers.TrainingArguments(
        output_dir=folder, num_train_epochs=args.epochs,
        per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=64,
        learning_rate=args.learning_rate, weight_decay=0.01, warmup_steps=int(0.1 * steps),
        lr_scheduler_type="linear", max_grad_norm=1.0, eval_strategy="epoch",
        save_strategy="epoch", load_best_model_at_end=True,
        metric_for_best_model="main", save_total_limit=1, seed=seed,
        report_to=[], use_cpu=True, logging_strategy="no",
        disable_tqdm=True,
    )


def run_hf(hf_folder, train, evaluation, task, spec, args, seed):
    """HF's Trainer on our features (``TaskData``), scored by our task."""
    import torch
    import transformers

    torch.set_num_threads(args.threads)

    def labels_of(data):
        y = np.asarray(data.y["logits"] if isinstance(data.y, dict) else data.y)
        if data.sample_weight is not None:  # tagging: pieces that are not word starts
            y = np.where(np.asarray(data.sample_weight["logits"]) > 0, y, -100)
        return y

    class Rows(torch.utils.data.Dataset):
        def __init__(self, data):
            self.x, self.labels = data.x, labels_of(data)

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return {"input_ids": torch.tensor(self.x["token_ids"][i], dtype=torch.long),
                    "token_type_ids": torch.tensor(self.x["segment_ids"][i], dtype=torch.long),
                    "attention_mask": torch.tensor(self.x["padding_mask"][i], dtype=torch.long),
                    "labels": torch.tensor(self.labels[i], dtype=torch.long)}

    transformers.set_seed(seed)
    auto = (transformers.AutoModelForSequenceClassification if args.kind == "classify"
            else transformers.AutoModelForTokenClassification)
    # the head's dropout as ours (0.1): ALBERT's config names it
    # classifier_dropout_prob, BERT's and ELECTRA's classifier_dropout
    config = transformers.AutoConfig.from_pretrained(hf_folder)
    dropout = ("classifier_dropout_prob" if hasattr(config, "classifier_dropout_prob")
               else "classifier_dropout")
    model = auto.from_pretrained(hf_folder, num_labels=len(spec.labels), **{dropout: 0.1})

    def score(prediction):
        logits = prediction.predictions
        return {"main": float(task.score(spec, evaluation, {"logits": logits})[MAIN[args.kind]])}

    with tempfile.TemporaryDirectory() as folder:
        training_args = _training_arguments(args, folder, seed, len(train))
        marks = []

        class EpochClock(transformers.TrainerCallback):
            def on_epoch_begin(self, *unused, **kwargs):
                marks.append(time.perf_counter())

            def on_train_end(self, *unused, **kwargs):
                marks.append(time.perf_counter())

        trainer = transformers.Trainer(model=model, args=training_args,
                                       train_dataset=Rows(train), eval_dataset=Rows(evaluation),
                                       compute_metrics=score, callbacks=[EpochClock()])
        start = time.perf_counter()
        trainer.train()
        total = time.perf_counter() - start
        result = trainer.evaluate()
    return result["eval_main"], epoch_seconds(marks), total


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="classify", choices=tuple(MAIN))
    parser.add_argument("--init", required=True)
    parser.add_argument("--task", required=True, help="a folder with train.csv and eval.csv")
    parser.add_argument("--max-train", type=int, default=None)
    parser.add_argument("--max-eval", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default="benchmarks/results/finetune_parity.json")
    return parser.parse_args()


def _task_files(args, work):
    """The train and eval files both stacks read, in the task's own format."""
    train = read_csv(os.path.join(args.task, "train.csv"), args.max_train)
    evaluation = read_csv(os.path.join(args.task, "eval.csv"), args.max_eval)
    if args.kind == "classify":
        # Whole batches only: our fit drops a last partial batch, HF's would not.
        keep = len(train[0]) // args.batch_size * args.batch_size
        train = (train[0][:keep], train[1][:keep])
        files = [os.path.join(work, "train.csv"), os.path.join(work, "eval.csv")]
        write_csv(files[0], *train)
        write_csv(files[1], *evaluation)
    else:
        files = [os.path.join(work, "train.conll"), os.path.join(work, "eval.conll")]
        write_conll(files[0], train[0])
        write_conll(files[1], evaluation[0])
    return files


def _read_task(args, files):
    """``(task, spec, train_data, eval_data)`` as ``finetune`` reads them."""
    from albert_keras.sources.registry import read_tokenizer
    from albert_keras.tasks.finetune_config import FinetuneConfig
    from albert_keras.tasks.registry import get_task
    from albert_keras.tasks.task_run import task_spec

    tokenizer = read_tokenizer(args.init)
    task = get_task(args.kind)
    cfg = FinetuneConfig(task=args.kind, sequence_length=args.seq_length)
    train_data, spec = task.read(files[0], task_spec(cfg), tokenizer)
    eval_data = task.read(files[1], spec, tokenizer)[0]
    return task, spec, train_data, eval_data


def _baselines(files, train_data, eval_data):
    """TF-IDF + logistic regression and the majority class (classification)."""
    def labels(data):
        return np.asarray(data.y["logits"] if isinstance(data.y, dict) else data.y)

    y_train, y_eval = labels(train_data), labels(eval_data)
    return {"tfidf_logreg": tfidf_baseline(files[0], files[1])[0],
            "majority": float(np.mean(y_eval == np.bincount(y_train).argmax()))}


def _write(results, path):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=2)
    os.replace(path + ".tmp", path)


def _summarize(results):
    for name in ("ours", "hf_trainer"):
        accuracies = [r["score"] for r in results[name]]
        results[f"{name}_mean"] = statistics.mean(accuracies)
        results[f"{name}_std"] = statistics.pstdev(accuracies)
        results[f"{name}_s_per_epoch_median"] = statistics.median(
            r["s_per_epoch"] for r in results[name])


def main():
    args = _parse_args()
    from albert_keras.convert import save_hf
    from albert_keras.sources.model_source import ModelSource

    work = tempfile.mkdtemp()
    files = _task_files(args, work)
    task, spec, train_data, eval_data = _read_task(args, files)
    results = {"kind": args.kind, "metric": MAIN[args.kind], "task": args.task,
               "train_rows": len(train_data), "eval_rows": len(eval_data),
               "settings": {k: v for k, v in vars(args).items() if k != "out"},
               "ours": [], "hf_trainer": []}
    if args.kind == "classify":
        results.update(_baselines(files, train_data, eval_data))
    hf_folder = os.path.join(work, "hf")
    save_hf(ModelSource(args.init).encoder(dtype="float32"), hf_folder)
    for seed in args.seeds:  # interleaved: each seed runs both stacks
        score, per_epoch, total = run_ours(args.init, files[0], files[1], args, seed)
        results["ours"].append({"seed": seed, "score": score, "s_per_epoch": per_epoch,
                                "s_whole_run": total})
        print(f"ours seed {seed}: {score:.4f}, {per_epoch:.1f} s/epoch, {total:.0f} s in all "
              "(reading, loading, tracing and saving the folder included)", flush=True)
        _write(results, args.out)
        score, per_epoch, total = run_hf(hf_folder, train_data, eval_data, task, spec, args,
                                         seed)
        results["hf_trainer"].append({"seed": seed, "score": score, "s_per_epoch": per_epoch,
                                      "s_whole_run": total})
        print(f"HF Trainer seed {seed}: {score:.4f}, {per_epoch:.1f} s/epoch, {total:.0f} s "
              "in train()", flush=True)
        _write(results, args.out)
    _summarize(results)
    _write(results, args.out)
    print(json.dumps({k: v for k, v in results.items() if not isinstance(v, list)}, indent=2))


if __name__ == "__main__":
    main()
