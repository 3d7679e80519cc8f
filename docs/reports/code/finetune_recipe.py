"""Fine-tuning recipes against a TF-IDF + logistic-regression baseline.

On one labelled split (a CSV pair with ``text`` and ``label``), this runs:

* TF-IDF (word 1-2-grams, sublinear tf) + logistic regression (scikit-learn),
  the baseline a small pretrained model has to beat to be worth shipping;
* ``albert-keras finetune`` from ``--init`` with each recipe, and the best
  recipe again from untrained weights (``--from-scratch``).

Each fine-tuning run is a fresh ``finetune`` call in this process, seeds
``--seeds``; the table gives the mean and the range. Not part of the test
run; needs scikit-learn.

    albert-keras data sotu-task --out runs/sotu_century --max-train 1000
    python docs/reports/code/finetune_recipe.py --init runs/pretrain --task runs/sotu_century
"""

import argparse
import json
import os
import statistics
import tempfile
import time

RECIPES = {
    # the README's settings before the recipe work
    "3 ep, lr 1e-4": dict(epochs=3, learning_rate=1e-4),
    # longer, higher rate, the best epoch kept
    "10 ep, lr 3e-4, best epoch": dict(epochs=10, learning_rate=3e-4),
    "10 ep, lr 3e-4, best epoch, head+tail": dict(epochs=10, learning_rate=3e-4,
                                                  truncate="head+tail"),
}


def tfidf_baseline(train_csv, eval_csv):
    import csv

    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    def read(path):
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        return [r["text"] for r in rows], [r["label"] for r in rows]

    (x, y), (ex, ey) = read(train_csv), read(eval_csv)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2)
    model = LogisticRegression(max_iter=2000, C=10.0)
    model.fit(vectorizer.fit_transform(x), y)
    predicted = model.predict(vectorizer.transform(ex))
    majority = max(set(y), key=y.count)
    return (sum(p == t for p, t in zip(predicted, ey)) / len(ey),
            sum(t == majority for t in ey) / len(ey), len(x), len(ey))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", required=True, help="a pretraining model folder")
    parser.add_argument("--task", required=True, help="a folder with train.csv and eval.csv")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--precision", default="mixed_bfloat16")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                      "finetune_recipe"))
    args = parser.parse_args()

    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    train, evaluation = (os.path.join(args.task, f"{s}.csv") for s in ("train", "eval"))
    tfidf, majority, n_train, n_eval = tfidf_baseline(train, evaluation)
    print(f"tf-idf + logistic regression: {tfidf:.4f} (majority class {majority:.4f})",
          flush=True)
    rows = []
    cases = [(name, recipe, False) for name, recipe in RECIPES.items()]
    cases.append((list(RECIPES)[-1] + ", from scratch", RECIPES[list(RECIPES)[-1]], True))
    for name, recipe, scratch in cases:
        scores, seconds, best_epochs = [], [], []
        for seed in args.seeds:
            cfg = FinetuneConfig(task="classify", batch_size=32, sequence_length=128,
                                 precision=args.precision, seed=seed, from_scratch=scratch,
                                 **recipe)
            with tempfile.TemporaryDirectory() as tmp:
                started = time.perf_counter()
                metrics = finetune(args.init, train, evaluation, os.path.join(tmp, "m"), cfg)
                seconds.append(time.perf_counter() - started)
            scores.append(metrics["accuracy"])
            best_epochs.append(metrics["best_epoch"])
        row = {"recipe": name, "accuracy_mean": statistics.mean(scores),
               "accuracy_min": min(scores), "accuracy_max": max(scores),
               "best_epochs": best_epochs, "seconds_median": statistics.median(seconds)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {"task": os.path.abspath(args.task), "init": os.path.abspath(args.init),
              "train_rows": n_train, "eval_rows": n_eval, "seeds": args.seeds,
              "tfidf_logreg": tfidf, "majority_class": majority, "rows": rows}
    lines = [f"Task {os.path.basename(os.path.abspath(args.task))}: {n_train} training and "
             f"{n_eval} eval rows; seeds {args.seeds}; batch 32, sequence 128, "
             f"{args.precision}.", "",
             "| model | accuracy (mean) | range | best epochs | s per run |",
             "|---|---:|---:|---|---:|",
             f"| majority class | {majority:.4f} | | | |",
             f"| TF-IDF + logistic regression | {tfidf:.4f} | | | |"]
    lines += [f"| {r['recipe']} | {r['accuracy_mean']:.4f} | {r['accuracy_min']:.4f}-"
              f"{r['accuracy_max']:.4f} | {r['best_epochs']} | {r['seconds_median']:.0f} |"
              for r in rows]
    from albert_keras.files import atomic_write
    from albert_keras.files import write_json

    write_json(args.out + ".json", result)
    with atomic_write(args.out + ".md") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
