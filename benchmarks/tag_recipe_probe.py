"""Why a tagger learns more slowly here than with HF's Trainer: our recipe
against the Trainer's defaults, one difference at a time.

Issue 101 found ``TokenClassifier.fit`` behind HF's Trainer after 3 epochs
at 5e-5 (entity F1 0.00-0.05 against 0.185). Both stacks read the same
features (``finetune_parity.py --kind tag``'s derived name-tagging task,
its first-piece labels) from the same weights, and are scored by our tag
task. Variants:

* ``ours``: ``albert-keras finetune``'s recipe (AdamW, epsilon 1e-6, 10%
  warmup, weight decay 0.01, length buckets, the best epoch kept);
* ``ours_nobuckets``: the same, every row padded to the sequence length;
* ``ours_eps8_nowarm``: the Trainer's defaults in our loop (epsilon 1e-8,
  no warmup, no weight decay; the epsilon through the optimizer factory);
* ``hf_defaults``: the Trainer as its users write it (only the rate,
  batch size and epochs set);
* ``hf_ours``: the Trainer with our recipe (``finetune_parity.py``'s).

    python benchmarks/tag_recipe_probe.py --init runs/pre_bert --task runs/sentences \\
        --learning-rate 2.5e-4 --seeds 0 1 --out benchmarks/results/tag_recipe_probe.json

``--task`` is a folder with ``train.csv`` and ``eval.csv`` (a ``text``
column); ``--init`` must be an encoder transformers can load (no ALiBi).
"""

import argparse
import functools
import json
import os
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import finetune_parity  # noqa: E402  (benchmarks/ is the script's folder)

VARIANTS = ("ours", "ours_nobuckets", "ours_eps8_nowarm", "hf_defaults", "hf_ours")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", required=True)
    p.add_argument("--task", required=True)
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    run = types.SimpleNamespace(kind="tag", init=args.init, task=args.task, max_train=None,
                                max_eval=None, epochs=args.epochs,
                                learning_rate=args.learning_rate, batch_size=32,
                                seq_length=128, threads=2)
    with tempfile.TemporaryDirectory(prefix="tag_probe_") as work:
        files = finetune_parity._task_files(run, work)
        read = finetune_parity._read_task(run, files)
        results = {}
        for seed in args.seeds:  # interleaved: each seed runs every variant
            for variant in args.variants:
                began = time.time()
                score = _run(variant, run, files, read, work, seed)
                results.setdefault(variant, []).append(
                    {"seed": seed, "entity_f1": score, "seconds": time.time() - began})
                print(variant, seed, round(score, 4), f"{time.time() - began:.0f}s", flush=True)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            json.dump({"settings": vars(args), "entity_f1": results}, f, indent=1)


def _run(variant, run, files, read, work, seed):
    if variant.startswith("ours"):
        fields = {"ours_nobuckets": {"length_buckets": False},
                  "ours_eps8_nowarm": {"warmup_fraction": 0.0, "weight_decay": 0.0}}
        return _ours(run, files, seed, 1e-8 if variant == "ours_eps8_nowarm" else None,
                     **fields.get(variant, {}))
    return _hf(run, read, work, seed, defaults=variant == "hf_defaults")


def _ours(run, files, seed, epsilon=None, **fields):
    from albert_keras.drivers.finetune import finetune
    from albert_keras.optimizers.optimizer import make_optimizer
    from albert_keras.tasks import task_run
    from albert_keras.tasks.finetune_config import FinetuneConfig

    cfg = FinetuneConfig(task="tag", epochs=run.epochs, batch_size=run.batch_size,
                         sequence_length=run.seq_length, learning_rate=run.learning_rate,
                         seed=seed, precision="float32", **fields)
    if epsilon is not None:  # no flag sets Adam's epsilon: the factory, for this run
        task_run.make_optimizer = functools.partial(make_optimizer, epsilon=epsilon)
    try:
        with tempfile.TemporaryDirectory() as folder:
            return finetune(run.init, files[0], files[1], os.path.join(folder, "run"),
                            cfg)["entity_f1"]
    finally:
        task_run.make_optimizer = make_optimizer


def _hf(run, read, work, seed, defaults):
    import transformers

    from albert_keras.convert import save_hf
    from albert_keras.sources.model_source import ModelSource

    folder = os.path.join(work, "hf")
    if not os.path.exists(folder):
        save_hf(ModelSource(run.init).encoder(dtype="float32"), folder)
    ours = finetune_parity._training_arguments
    if defaults:
        def arguments(args, out, seed, rows):
            return transformers.TrainingArguments(
                output_dir=out, num_train_epochs=args.epochs,
                per_device_train_batch_size=args.batch_size, per_device_eval_batch_size=64,
                learning_rate=args.learning_rate, eval_strategy="epoch", save_strategy="no",
                seed=seed, report_to=[], use_cpu=True, logging_strategy="no",
                disable_tqdm=True)
        finetune_parity._training_arguments = arguments
    try:
        task, spec, train, evaluation = read
        return finetune_parity.run_hf(folder, train, evaluation, task, spec, run, seed)[0]
    finally:
        finetune_parity._training_arguments = ours


if __name__ == "__main__":
    main()
