"""Prediction of many rows, whole processes: ``albert-keras predict`` and
``TextClassifier.predict`` against HF's ``pipeline``, where the fixed costs
(imports, loading, tracing) are spread over 20,000 rows.

The same setup as ``real_text.py`` (a BERT folder of MiniLM-L6's shape with
a 30,522-piece vocabulary, random weights; State of the Union sentences):
each side fine-tunes one epoch on 1,500 rows to get its folder, then
predicts ``--rows`` sentences at batch 64, once, in its own process: ours
from the command line (which writes a JSONL file) and from Python (a list
of texts in, probabilities out, as a service holding the model would call
it), HF's from Python. The CPU and its matrix features are named in the
results.

    python benchmarks/predict_rows.py --rows 20000 --out benchmarks/results/predict_20k.json
    python benchmarks/predict_rows.py --rows 200  # smoke
"""

import argparse
import json
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_folders  # noqa: E402  (benchmarks/ is the script's folder)
import real_text  # noqa: E402
from common import cpu_with_features  # noqa: E402

# Ours from Python, whole process: read the texts, load, predict.
OURS_PYTHON = r"""
import csv, json, sys, time
started = time.time()
from albert_keras.tasks.classify.text_classifier import TextClassifier
folder, path, batch = sys.argv[1:4]
texts = [r["text"] for r in csv.DictReader(open(path, encoding="utf-8"))]
probabilities = TextClassifier.load(folder).predict(texts, batch_size=int(batch))
print("RESULT " + json.dumps({"seconds": time.time() - started, "rows": len(probabilities)}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--out", default=None, help="results JSON")
    args = p.parse_args()
    # two model folders, two fine-tuned models and the rows: about 1 GB, removed after
    with tempfile.TemporaryDirectory(prefix="predict_rows_") as work:
        _run(args, work)


def _run(args, work):
    corpus = real_folders.corpus(work)
    folder = real_folders.model_folder(work, corpus["texts"], "minilm_l6")
    files = real_folders.task_files(work, corpus, "short", 1500, 0, folder)
    pool = list(corpus["short"])
    random.Random(1).shuffle(pool)
    if len(pool) < args.rows:
        raise SystemExit(f"the corpus has {len(pool)} sentences, fewer than --rows {args.rows}")
    files["predict"] = os.path.join(work, "many.csv")
    real_folders.write_rows(files["predict"], pool[:args.rows])
    ours = os.path.join(work, "ours")
    real_text._ours_finetune(folder, files, ours, 1)
    theirs = os.path.join(work, "hf")
    real_text._child(real_text.HF_TRAIN, folder, files["train"], files["eval"], theirs,
                     real_text.SEQ, real_text.BATCH, 1)
    seconds = {"ours": real_text._with_cpu(
                   lambda: real_text._ours_predict(ours, files["predict"]))[1]["wall"],
               "ours_python": real_text._child(OURS_PYTHON, ours, files["predict"],
                                               real_text.PREDICT_BATCH)["seconds"],
               "hf": real_text._child(real_text.HF_PREDICT, theirs, files["predict"],
                                      real_text.SEQ, real_text.PREDICT_BATCH)["seconds"]}
    results = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "rows": args.rows,
               "batch_size": real_text.PREDICT_BATCH, "seconds": seconds,
               "rows_per_second": {k: args.rows / v for k, v in seconds.items()},
               "speedup_vs_hf": seconds["hf"] / seconds["ours"],
               "python_speedup_vs_hf": seconds["hf"] / seconds["ours_python"]}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2, sort_keys=True)
    print(f"{results['cpu']}, {results['cores']} cores; {args.rows} rows: ours "
          f"{seconds['ours']:.0f} s ({results['speedup_vs_hf']:.2f}x), from Python "
          f"{seconds['ours_python']:.0f} s ({results['python_speedup_vs_hf']:.2f}x), "
          f"HF pipeline {seconds['hf']:.0f} s")


if __name__ == "__main__":
    main()
