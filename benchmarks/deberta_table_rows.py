"""DeBERTa's relative table: the whole of it against the rows a sequence reads.

Each disentangled-attention layer projects the relative-position table
(512 rows in DeBERTa-v3) with its key and query projections and scores every
query against every row, whatever the text's length; a sequence of S pieces
reads only 2S - 1 of those rows. This measures one change, in one process,
interleaved: the same classifier (DeBERTa-v3-xsmall's shape, 128,100-row
word table, random weights) traced twice, once with the cut turned off
(``_rows_in_use`` replaced by the identity), for a forward pass on one short
text, on one text padded to 128, on 64 texts, and for one AdamW training
step on 32 texts; with the outputs of both compared. The CPU and its matrix
features are named in the results.

    python benchmarks/deberta_table_rows.py --out benchmarks/results/deberta_table_rows.json
    python benchmarks/deberta_table_rows.py --shape deberta_v3_xsmall --repeats 3  # quicker
"""

import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import cpu_with_features  # noqa: E402  (benchmarks/ is the script's folder)
from real_folders import DEBERTA_SHAPES  # noqa: E402
from real_folders import corpus  # noqa: E402
from real_folders import model_folder  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="deberta_v3_xsmall", choices=sorted(DEBERTA_SHAPES))
    p.add_argument("--repeats", type=int, default=20, help="timed calls of each (interleaved)")
    p.add_argument("--out", default=None, help="results JSON")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="deberta_rows_")
    text = corpus(work)
    folder = model_folder(work, text["texts"], args.shape)
    sentences = [s for s, _ in text["short"]]
    results = {"cpu": cpu_with_features(), "cores": os.cpu_count(), "shape": args.shape,
               "repeats": args.repeats, "cases": _measure(folder, sentences, args.repeats)}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2, sort_keys=True)
    print(f"{results['cpu']}, {results['cores']} cores; {args.shape}")
    for name, r in results["cases"].items():
        print(f"{name} {r['shape']}: whole table {r['whole_ms']:.1f} ms, rows in use "
              f"{r['rows_in_use_ms']:.1f} ms ({r['whole_ms'] / r['rows_in_use_ms']:.2f}x)"
              + ("" if r["max_difference"] is None else
                 f", max |difference| {r['max_difference']:.1e}"))


def _measure(folder, sentences, repeats):
    """Both variants of each case, timed in turn; medians in ms."""
    import albert_keras.models.deberta.disentangled_attention as attention
    from albert_keras.tasks.classify.text_classifier import TextClassifier

    cut = attention._rows_in_use
    attention._rows_in_use = lambda table, index: (table, index)  # the whole table
    whole_model, whole, shapes = _variant(TextClassifier.from_preset(folder, num_classes=4),
                                          sentences)
    attention._rows_in_use = cut
    model, in_use, _ = _variant(TextClassifier.from_preset(folder, num_classes=4), sentences)
    whole_model.set_weights(model.get_weights())  # the same new head on both
    cases = {}
    for name in shapes:
        a, b = whole[name], in_use[name]
        training = name.startswith("training")  # its outputs are losses after different steps
        difference = None if training else float(np.max(np.abs(a() - b())))
        times = {"whole": [], "in_use": []}
        for _ in range(max(3, repeats // 4) if training else repeats):
            for key, run in (("whole", a), ("in_use", b)):
                began = time.perf_counter()
                run()
                times[key].append(time.perf_counter() - began)
        cases[name] = {"shape": shapes[name], "max_difference": difference,
                       "whole_ms": 1000 * float(np.median(times["whole"])),
                       "rows_in_use_ms": 1000 * float(np.median(times["in_use"]))}
    return cases


def _variant(classifier, sentences):
    """``(model, cases, shapes)``: ``classifier``'s model, the cases as
    callables on it, traced now (so the variant of the attention in force
    now is the one traced), and each case's input shape."""
    import keras
    import tensorflow as tf

    model = classifier.task_model

    def inputs(texts, full=False):
        data, _ = classifier._data(texts, None)
        length = None if full else int(np.asarray(data.x["padding_mask"]).sum(-1).max())
        return {k: tf.constant(v[:, :length]) for k, v in data.x.items()}

    signature = {k: tf.TensorSpec([None, None], tf.int32)
                 for k in ("token_ids", "segment_ids", "padding_mask")}
    forward = tf.function(lambda x: model(x, training=False)["logits"],
                          input_signature=[signature])
    batches = {"one text": inputs(sentences[:1]),
               "one text padded to 128": inputs(sentences[:1], full=True),
               "64 texts": inputs(sentences[:64])}
    cases = {name: (lambda x=x: forward(x).numpy()) for name, x in batches.items()}
    for run in cases.values():
        run()  # traced now
    train = inputs(sentences[64:96])
    labels = {"logits": np.arange(32) % 4}
    model.compile(optimizer=keras.optimizers.AdamW(5e-5),
                  loss={"logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True)})
    step = model.train_on_batch
    step(train, labels)  # traced now
    cases["training step, 32 texts"] = lambda: step(train, labels)
    shapes = {name: list(x["token_ids"].shape) for name, x in
              {**batches, "training step, 32 texts": train}.items()}
    return model, cases, shapes


if __name__ == "__main__":
    main()
