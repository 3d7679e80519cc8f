"""What each layer of a pretrained encoder knows about a task, before fine-tuning.

For every hidden state (0 = the embeddings, then each layer's output) the
texts of a task are mean-pooled over their real tokens, with the encoder
frozen, and two numbers are reported:

* ``cosine``: the mean cosine similarity between the pooled vectors of two
  different training texts. Near 1, every text gets almost the same vector
  (a large part shared by all tokens), and a classifier on top starts from
  features that barely differ between texts.
* ``probe``: the eval accuracy of a logistic regression trained on the
  standardized pooled vectors of the training rows (a linear probe).

The rows are the same seeded sample ``objectives.py --max-train/--max-eval``
fine-tunes on, so the numbers sit next to its fine-tuning table.

    python docs/reports/code/layer_probe.py --task sotu_century \\
        --model mlm=runs/pretrain --model rtd=runs/rtd --from-scratch runs/pretrain \\
        --max-train 1000 --max-eval 1000 --out /tmp/layer_probe.json
"""

import argparse
import os
import tempfile

import keras
import numpy as np
from objectives import sample_task  # the same rows as the fine-tuning comparison

from albert_keras.files import write_json
from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
from albert_keras.sources.model_source import ModelSource
from albert_keras.sources.registry import read_tokenizer
from albert_keras.tasks.readers import read_text_table
from albert_keras.text.packer import pack_texts


def mean_cosine(x):
    """The mean cosine similarity over all pairs of different rows of ``x``."""
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    n = len(unit)
    total = unit.sum(0)
    # sum over all ordered pairs minus the diagonal, without the n x n matrix
    return float((total @ total - n) / (n * (n - 1)))


def probe_accuracy(train_x, train_y, eval_x, eval_y, c):
    """Eval accuracy of a logistic regression on standardized features."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    scaler = StandardScaler().fit(train_x)
    model = LogisticRegression(C=c, max_iter=5000).fit(scaler.transform(train_x), train_y)
    return float(model.score(scaler.transform(eval_x), eval_y))


def layer_features(folder, text_lists, sequence_length, from_scratch=False):
    """``[num_states, N, H]`` mean-pooled hidden states for each list of texts.

    One encoder serves every list: with ``from_scratch`` each load draws new
    weights, and the training and eval rows must see the same ones.
    """
    encoder = ModelSource(folder).encoder(dtype="float32", from_scratch=from_scratch,
                                       output_hidden_states=True)
    pieces = read_tokenizer(folder)
    length = min(sequence_length, encoder.config.max_position_embeddings)
    states = encoder.config.num_hidden_layers + 1
    # one encoder pass per text: every state's mean, concatenated in order
    # (the reshape below relies on concat)
    embedder = SentenceEmbedder(encoder, layers=tuple(range(states)), pooling="mean",
                              combine="concat")
    features = []
    for texts in text_lists:
        inputs = pack_texts(pieces, list(texts), None, length)
        flat = embedder.predict(inputs, batch_size=64, verbose=0)["embeddings"]
        features.append(flat.reshape(len(flat), states, -1).transpose(1, 0, 2))
    return features


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", required=True, help="a task folder with train.csv, eval.csv")
    parser.add_argument("--model", action="append", default=[], metavar="NAME=FOLDER",
                        help="a model folder to probe (repeat)")
    parser.add_argument("--from-scratch", metavar="FOLDER",
                        help="also probe FOLDER's architecture with new weights")
    parser.add_argument("--max-train", type=int, default=1000)
    parser.add_argument("--max-eval", type=int, default=1000)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--c", type=float, default=0.01,
                        help="the probe's inverse L2 strength (sklearn's C)")
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=0,
                        help="the from-scratch weights' seed (unseeded, a run was not repeatable)")
    args = parser.parse_args()

    models = []
    for spec in args.model:
        name, sep, folder = spec.partition("=")
        if not sep or not name or not folder:
            raise SystemExit(f"--model {spec!r}: expected NAME=FOLDER")
        models.append((name, folder, False))
    if args.from_scratch:
        models.append(("from scratch", args.from_scratch, True))
    if not models:
        raise SystemExit("name at least one --model or --from-scratch")

    with tempfile.TemporaryDirectory() as work:
        task = sample_task(args.task, work, args.max_train, args.max_eval)
        train = read_text_table(os.path.join(task, "train.csv"))
        evaluation = read_text_table(os.path.join(task, "eval.csv"))
    result = {"task": os.path.basename(os.path.normpath(args.task)),
              "train_rows": len(train.texts), "eval_rows": len(evaluation.texts),
              "sequence_length": args.sequence_length, "c": args.c, "models": {}}
    keras.utils.set_random_seed(args.seed)
    for name, folder, from_scratch in models:
        train_x, eval_x = layer_features(folder, (train.texts, evaluation.texts),
                                         args.sequence_length, from_scratch)
        layers = []
        for layer, (tx, ex) in enumerate(zip(train_x, eval_x)):
            layers.append({
                "layer": layer,
                "cosine": round(mean_cosine(tx), 4),
                "probe": round(probe_accuracy(tx, train.labels, ex, evaluation.labels,
                                              args.c), 4),
            })
            print(f"{name:>14} layer {layer}: cosine {layers[-1]['cosine']:.3f}, "
                  f"probe {layers[-1]['probe']:.3f}", flush=True)
        result["models"][name] = {"folder": folder, "layers": layers}
    write_json(args.out, result)


if __name__ == "__main__":
    main()
