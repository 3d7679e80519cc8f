"""``albert-keras finetune`` against HF transformers' ``Trainer``, same everything.

One encoder (``--init``: any of our model folders or a published
checkpoint folder) is written out as an HF folder; both trainers start
from those weights, read the same token ids (our tokenizer and packer make
them once, so only the fine-tuning stacks differ) and use the same
hyperparameters: AdamW (no decay on LayerNorm and biases), linear warmup
then decay, gradient clipping at 1.0, dropout 0.1 on the pooled output,
float32, evaluation after every epoch with the best epoch kept. Each is
run with ``--seeds``; the table gives mean and standard deviation, and
seconds per epoch (training only, same machine, runs interleaved). A
TF-IDF + logistic regression (scikit-learn) on the same split shows where
a small model stands. Not part of the test run.

    albert-keras data sotu-task --out runs/sotu_century --max-train 1000
    python benchmarks/finetune_parity.py --init runs/pretrain --task runs/sotu_century \\
        --max-eval 1000 --epochs 3 --seeds 0 1 2
"""

import argparse
import csv
import json
import os
import statistics
import tempfile
import time

import numpy as np


def read_csv(path, limit=None):
    with open(path, encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    rows = rows[:limit] if limit else rows
    return [r["text"] for r in rows], [r["label"] for r in rows]


def write_csv(path, texts, labels):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, labels))


def tfidf(train, evaluation):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    model = LogisticRegression(max_iter=2000, C=10.0)
    model.fit(vectorizer.fit_transform(train[0]), train[1])
    predicted = model.predict(vectorizer.transform(evaluation[0]))
    return float(np.mean([p == t for p, t in zip(predicted, evaluation[1])]))


# -- ours ------------------------------------------------------------------------------------


def run_ours(init, train_csv, eval_csv, args, seed):
    from albert_keras.tasks.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    cfg = FinetuneConfig(task="classify", epochs=args.epochs, batch_size=args.batch_size,
                         sequence_length=args.seq_length, learning_rate=args.learning_rate,
                         seed=seed, precision="float32")
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        metrics = finetune(init, train_csv, eval_csv, os.path.join(folder, "run"), cfg)
        total = time.perf_counter() - start
        rows = list(csv.DictReader(open(os.path.join(folder, "run", "metrics.csv"))))
    # metrics.csv has no times; the per-epoch eval is part of the run on both sides.
    return metrics["accuracy"], total / args.epochs, len(rows)


# -- HF transformers -------------------------------------------------------------------------


def run_hf(hf_folder, packed_train, y_train, packed_eval, y_eval, num_labels, args, seed):
    import torch
    import transformers

    torch.set_num_threads(args.threads)

    class Rows(torch.utils.data.Dataset):
        def __init__(self, packed, labels):
            self.packed, self.labels = packed, labels

        def __len__(self):
            return len(self.labels)

        def __getitem__(self, i):
            return {"input_ids": torch.tensor(self.packed["token_ids"][i], dtype=torch.long),
                    "token_type_ids": torch.tensor(self.packed["segment_ids"][i],
                                                   dtype=torch.long),
                    "attention_mask": torch.tensor(self.packed["padding_mask"][i],
                                                   dtype=torch.long),
                    "labels": torch.tensor(self.labels[i], dtype=torch.long)}

    transformers.set_seed(seed)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        hf_folder, num_labels=num_labels, classifier_dropout_prob=0.1)

    def accuracy(prediction):
        return {"accuracy": float(np.mean(prediction.predictions.argmax(-1) ==
                                          prediction.label_ids))}

    steps = (len(y_train) // args.batch_size) * args.epochs
    with tempfile.TemporaryDirectory() as folder:
        training_args = transformers.TrainingArguments(
            output_dir=folder, num_train_epochs=args.epochs,
            per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=64,
            learning_rate=args.learning_rate, weight_decay=0.01, warmup_steps=int(0.1 * steps),
            lr_scheduler_type="linear", max_grad_norm=1.0, eval_strategy="epoch",
            save_strategy="epoch", load_best_model_at_end=True,
            metric_for_best_model="accuracy", save_total_limit=1, seed=seed,
            dataloader_drop_last=True, report_to=[], use_cpu=True, logging_strategy="no",
            disable_tqdm=True,
        )
        trainer = transformers.Trainer(model=model, args=training_args,
                                       train_dataset=Rows(packed_train, y_train),
                                       eval_dataset=Rows(packed_eval, y_eval),
                                       compute_metrics=accuracy)
        start = time.perf_counter()
        trainer.train()
        total = time.perf_counter() - start
        result = trainer.evaluate()
    return result["eval_accuracy"], total / args.epochs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
    args = parser.parse_args()

    from albert_keras.convert import save_hf
    from albert_keras.model_folder import load_encoder, read_tokenizer
    from albert_keras.text.packer import pack_texts

    train = read_csv(os.path.join(args.task, "train.csv"), args.max_train)
    evaluation = read_csv(os.path.join(args.task, "eval.csv"), args.max_eval)
    labels = sorted(set(train[1]))
    y_train = [labels.index(y) for y in train[1]]
    y_eval = [labels.index(y) for y in evaluation[1]]
    tokenizer = read_tokenizer(args.init)
    packed_train = pack_texts(tokenizer, train[0], None, args.seq_length)
    packed_eval = pack_texts(tokenizer, evaluation[0], None, args.seq_length)
    results = {"task": args.task, "train_rows": len(y_train), "eval_rows": len(y_eval),
               "settings": {k: v for k, v in vars(args).items() if k != "out"},
               "tfidf_logreg": tfidf(train, evaluation),
               "majority": float(np.mean(np.array(y_eval) == np.bincount(y_train).argmax())),
               "ours": [], "hf_trainer": []}

    def write():
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(results, f, indent=2)
        os.replace(args.out + ".tmp", args.out)

    with tempfile.TemporaryDirectory() as work:
        hf_folder = os.path.join(work, "hf")
        save_hf(load_encoder(args.init, dtype="float32"), hf_folder)
        write_csv(os.path.join(work, "train.csv"), *train)
        write_csv(os.path.join(work, "eval.csv"), *evaluation)
        for seed in args.seeds:  # interleaved: each seed runs both stacks
            accuracy, per_epoch, _ = run_ours(args.init, os.path.join(work, "train.csv"),
                                              os.path.join(work, "eval.csv"), args, seed)
            results["ours"].append({"seed": seed, "accuracy": accuracy, "s_per_epoch": per_epoch})
            print(f"ours seed {seed}: {accuracy:.4f}, {per_epoch:.1f} s/epoch", flush=True)
            write()
            accuracy, per_epoch = run_hf(hf_folder, packed_train, y_train, packed_eval, y_eval,
                                         len(labels), args, seed)
            results["hf_trainer"].append({"seed": seed, "accuracy": accuracy,
                                          "s_per_epoch": per_epoch})
            print(f"HF Trainer seed {seed}: {accuracy:.4f}, {per_epoch:.1f} s/epoch", flush=True)
            write()
    for name in ("ours", "hf_trainer"):
        accuracies = [r["accuracy"] for r in results[name]]
        results[f"{name}_mean"] = statistics.mean(accuracies)
        results[f"{name}_std"] = statistics.pstdev(accuracies)
        results[f"{name}_s_per_epoch_median"] = statistics.median(
            r["s_per_epoch"] for r in results[name])
    write()
    print(json.dumps({k: v for k, v in results.items() if not isinstance(v, list)}, indent=2))


if __name__ == "__main__":
    main()
