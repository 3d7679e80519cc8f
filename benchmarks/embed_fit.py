"""Training an embedder on pairs: ours against sentence-transformers' fit.

The pairs are built from the built-in corpus (the State of the Union
paragraphs): a paragraph's first sentence is the anchor, the rest of the
paragraph its positive, as a headline and its article. Both sides start from
the same HF folder (``--shape``: a real checkpoint's shape and vocabulary
size, random weights, a WordPiece vocabulary trained on the corpus), train
with in-batch negatives (``MultipleNegativesRankingLoss``, scale 20, mean
pooling, batch ``--batch``, AdamW at ``--lr`` with 10% warmup and weight
decay 0.01, ``--epochs``) and are scored the same way on held-out pairs:
each held-out anchor against every held-out positive, by cosine
(``retrieval_scores``: recall@1, MRR@10, nDCG@10).

* ``ours``: ``albert-keras finetune --task embed`` (its default precision:
  ``auto``, bf16 where the CPU multiplies it natively), the whole process;
* ``st``: ``SentenceTransformerTrainer`` on the same folder (float32, its
  default on a CPU), the whole process: import, load, fit, save.

Each side in its own process, interleaved repeat by repeat; user and sys
seconds with the wall time; the CPU named with its matrix features.

    python benchmarks/embed_fit.py --out benchmarks/results/embed_fit.json
    python benchmarks/embed_fit.py --train-pairs 64 --eval-pairs 32 --repeats 1  # smoke
"""

import argparse
import csv
import json
import os
import random
import resource
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from common import run_child  # noqa: E402
from real_folders import SHAPES  # noqa: E402
from real_folders import cli  # noqa: E402
from real_folders import corpus  # noqa: E402
from real_folders import model_folder  # noqa: E402

SEQ = 128

# sentence-transformers' side, as its users write it; the held-out texts'
# vectors are saved for the scoring, which is the same for both sides.
ST_TRAIN = r"""
import csv, json, sys, time
started = time.time()
import numpy as np
from datasets import Dataset
from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer
from sentence_transformers import SentenceTransformerTrainingArguments
from sentence_transformers.losses import MultipleNegativesRankingLoss
folder, train_csv, out, batch, epochs, lr, seq = sys.argv[1:8]
rows = list(csv.DictReader(open(train_csv, encoding="utf-8")))
model = SentenceTransformer(folder, device="cpu")
model.max_seq_length = int(seq)
data = Dataset.from_dict({"anchor": [r["anchor"] for r in rows],
                          "positive": [r["positive"] for r in rows]})
args = SentenceTransformerTrainingArguments(
    out, num_train_epochs=int(epochs), per_device_train_batch_size=int(batch),
    learning_rate=float(lr), warmup_ratio=0.1, weight_decay=0.01, seed=0,
    save_strategy="no", report_to=[], logging_strategy="no", use_cpu=True,
    disable_tqdm=True, dataloader_drop_last=True)
trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                     loss=MultipleNegativesRankingLoss(model, scale=20.0))
began = time.time()
trainer.train()
train_seconds = time.time() - began
model.save(out)
print("RESULT " + json.dumps({"seconds": time.time() - started, "train_seconds": train_seconds}))
"""

ST_ENCODE = r"""
import json, sys
import numpy as np
from sentence_transformers import SentenceTransformer
folder, texts_json, out = sys.argv[1:4]
model = SentenceTransformer(folder, device="cpu")
vectors = model.encode(json.load(open(texts_json, encoding="utf-8")), batch_size=64,
                       normalize_embeddings=True)
np.save(out, vectors)
print("RESULT {}")
"""


def main():
    args = _parser().parse_args()
    work = tempfile.mkdtemp(prefix="embed_fit_")
    try:
        results = _run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _print(results)


def _run(args, work):
    texts = corpus(work)["texts"]
    train, held_out = _pairs(texts, args.train_pairs, args.eval_pairs, work)
    folder = model_folder(work, texts, args.shape)
    results = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "shape": args.shape,
               "batch_size": args.batch, "epochs": args.epochs, "learning_rate": args.lr,
               "train_pairs": args.train_pairs, "eval_pairs": args.eval_pairs,
               "environment": {k: v for k, v in os.environ.items()
                               if k.startswith(("ONEDNN", "ATEN", "MKL", "TF_"))}}
    runs = {"ours": [], "st": []}
    for repeat in range(args.repeats):
        for side in runs:
            out = os.path.join(work, f"{side}_{repeat}")
            runs[side].append(_side(side, folder, train, held_out, out, args))
            _write(args.out, {**results, "runs": runs})
    results["runs"] = runs
    results["median"] = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
                         for side, rs in runs.items()}
    results["speedup_vs_st"] = results["median"]["st"]["wall"] / results["median"]["ours"]["wall"]
    _write(args.out, results)
    return results


def _pairs(paragraphs, n_train, n_eval, work):
    """``(train.csv, held-out pairs)``: a paragraph's first sentence and the
    rest of it, shuffled; the held-out ones never trained on."""
    from albert_keras.data.sentence_split import split_sentences

    pairs = []
    for text in dict.fromkeys(paragraphs):
        sentences = split_sentences(text)
        if len(sentences) >= 2 and len(sentences[0].split()) >= 4:
            pairs.append((sentences[0], " ".join(sentences[1:])))
    random.Random(0).shuffle(pairs)
    if len(pairs) < n_train + n_eval:
        raise SystemExit(f"the corpus gives {len(pairs)} pairs; ask for fewer")
    path = os.path.join(work, "train.csv")
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["anchor", "positive"])
        writer.writerows(pairs[:n_train])
    return path, pairs[n_train:n_train + n_eval]


def _side(side, folder, train, held_out, out, args):
    """One side's whole training process (wall, user, sys, its own train
    seconds), then its held-out scores (not timed)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.time()
    if side == "ours":
        cli("finetune", "--task", "embed", "--init", folder, "--train", train, "--out", out,
            "--epochs", str(args.epochs), "--batch-size", str(args.batch), "--learning-rate",
            str(args.lr), "--seq-length", str(SEQ), *args.ours_flags)
        with open(os.path.join(out, "metrics.json"), encoding="utf-8") as f:
            train_seconds = json.load(f)["train_seconds"]
    else:
        found = run_child(ST_TRAIN, folder, train, out, str(args.batch), str(args.epochs),
                          str(args.lr), str(SEQ))
        if "error" in found:
            raise RuntimeError(f"sentence-transformers: {found['error']}")
        train_seconds = found["train_seconds"]
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    timing = {"wall": time.time() - started, "user": after.ru_utime - before.ru_utime,
              "sys": after.ru_stime - before.ru_stime, "train_seconds": train_seconds}
    return {**timing, **_scores(side, out, held_out)}


def _scores(side, out, held_out):
    from albert_keras.tasks.retrieval_metrics import retrieval_scores

    anchors, positives = [a for a, _ in held_out], [p for _, p in held_out]
    vectors = [_vectors(side, out, texts) for texts in (anchors, positives)]
    scores = retrieval_scores(*vectors, [{i} for i in range(len(anchors))])
    return {k: scores[k] for k in ("recall@1", "recall@10", "mrr@10", "ndcg@10")}


def _vectors(side, out, texts):
    if side == "ours":
        from albert_keras import TextEmbedder

        return TextEmbedder.from_preset(out, sequence_length=SEQ).predict(texts)
    path = out + "_texts.json"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(texts, f)
    found = run_child(ST_ENCODE, out, path, out + "_vectors.npy")
    if "error" in found:
        raise RuntimeError(f"sentence-transformers encode: {found['error']}")
    return np.load(out + "_vectors.npy")


def _parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="minilm_l6", choices=sorted(SHAPES))
    p.add_argument("--train-pairs", type=int, default=3000)
    p.add_argument("--eval-pairs", type=int, default=500)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--ours-flags", nargs=argparse.REMAINDER, default=[],
                   help="more flags for our finetune (last): --precision float32")
    p.add_argument("--out", default=None, help="results JSON")
    return p


def _write(path, results):
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


def _print(results):
    print(f"{results['cpu']}, {results['cores']} cores; {results['shape']}'s shape, random "
          f"weights; {results['train_pairs']} pairs x {results['epochs']} epoch(s), batch "
          f"{results['batch_size']}")
    print("| side | whole process (s) | user / sys (s) | train (s) | recall@1 | nDCG@10 |")
    print("|---|---:|---|---:|---:|---:|")
    for side, m in results["median"].items():
        print(f"| {side} | {m['wall']:.1f} | {m['user']:.0f} / {m['sys']:.0f} | "
              f"{m['train_seconds']:.1f} | {m['recall@1']:.3f} | {m['ndcg@10']:.3f} |")
    print(f"ours {results['speedup_vs_st']:.2f}x sentence-transformers' speed (whole process)")


if __name__ == "__main__":
    main()
