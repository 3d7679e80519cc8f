"""Count-based references for held-out masked-LM accuracy on a data folder.

What a model that has learnt only word counts would score on the folder's
held-out split, with counts taken from its training split (the masked
tokens restored first):

* ``unigram``: always the most frequent token (the plateau the small-corpus run
  sits near);
* ``neighbours``: for each masked token, the token that maximises
  ``P(t) * P(left | t) / P(left) * P(right | t) / P(right)`` over the
  unmasked immediate neighbours (a bidirectional bigram model, smoothed
  towards the unigram), and the unigram choice when both neighbours are
  masked.

A transformer below ``neighbours`` has not yet learnt to use even the
adjacent tokens. Written by hand: no library scores these on our records.

    python docs/reports/code/mlm_references.py runs/pretrain/data_64 \\
        --out docs/reports/results/mlm_references.json
"""

import argparse
import glob
import json
import os

import numpy as np


def _records(folder, split):
    import tensorflow as tf

    from albert_keras.data.reader import read_manifest
    from albert_keras.data.tfrecords import feature_spec

    config = read_manifest(folder)["config"]
    spec = feature_spec(config["max_seq_length"], config["max_predictions"])
    files = sorted(glob.glob(os.path.join(folder, f"{split}-*.tfrecord")))
    ds = tf.data.TFRecordDataset(files).batch(4096).map(
        lambda x: tf.io.parse_example(x, spec))
    parts = [{k: v.numpy() for k, v in batch.items()} for batch in ds]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def _masked(records):
    """(original ids, is-masked) of every position."""
    ids = records["token_ids"].copy()
    masked = np.zeros(ids.shape, bool)
    rows, cols = np.nonzero(records["masked_weights"] > 0)
    positions = records["masked_positions"][rows, cols]
    ids[rows, positions] = records["masked_ids"][rows, cols]
    masked[rows, positions] = True
    return ids, masked


def references(folder, vocab_size):
    train = _records(folder, "train")
    ids, _ = _masked(train)
    real = train["padding_mask"] > 0
    unigram = np.bincount(ids[real], minlength=vocab_size).astype(np.float64) + 1.0
    log_uni = np.log(unigram / unigram.sum())
    pair = real[:, 1:] & real[:, :-1]
    bigram = np.zeros((vocab_size, vocab_size), np.float64)
    np.add.at(bigram, (ids[:, :-1][pair], ids[:, 1:][pair]), 1.0)
    # log P(neighbour | t) - log P(neighbour), smoothed towards independence
    after = np.log((bigram + unigram[None, :] / unigram.sum())
                   / (bigram.sum(1, keepdims=True) + 1.0)) - log_uni[None, :]
    before = np.log((bigram + unigram[:, None] / unigram.sum())
                    / (bigram.sum(0, keepdims=True) + 1.0)) - log_uni[:, None]

    held = _records(folder, "eval")
    _, masked = _masked(held)
    top = int(unigram.argmax())
    hits = {"unigram": 0, "neighbours": 0}
    count = 0
    seq = held["token_ids"].shape[1]
    for i, j in zip(*np.nonzero(held["masked_weights"] > 0)):
        q = held["masked_positions"][i, j]
        target = held["masked_ids"][i, j]
        score = log_uni.copy()
        if q > 0 and not masked[i, q - 1]:
            score += after[held["token_ids"][i, q - 1]]  # P(t | left) / P(t)
        if q + 1 < seq and held["padding_mask"][i, q + 1] and not masked[i, q + 1]:
            score += before[:, held["token_ids"][i, q + 1]]  # P(t | right) / P(t)
        hits["unigram"] += int(target == top)
        hits["neighbours"] += int(score.argmax() == target)
        count += 1
    return {"masked_tokens": count, **{k: v / count for k, v in hits.items()}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="pretraining data folders")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    from albert_keras.data.reader import read_manifest

    results = {}
    for folder in args.folders:
        manifest = read_manifest(folder)
        results[folder] = {"masking": manifest["config"].get("masking", "ngram"),
                           "max_seq_length": manifest["config"]["max_seq_length"],
                           **references(folder, manifest["vocab_size"])}
        print(folder, json.dumps(results[folder]))
    if args.out:
        with open(args.out + ".tmp", "w") as f:
            json.dump(results, f, indent=2)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
