"""Our tagger's training loop against transformers + torch on the same
batches for whole epochs, dropout on: the entity F1 each side reaches.

``tag_recipe_probe.py`` compares whole runs (our ``finetune`` against HF's
``Trainer``); this takes the pipelines away: one row order per epoch (a
seeded permutation, the last partial batch dropped) feeds both our compiled
tagger (``fit`` with the run's AdamW and schedule) and
``BertForTokenClassification`` with torch's AdamW, the same warmup and
decay and ``clip_grad_norm_``; both start from the same encoder and, unless
``--own-head``, the same head. Both are scored by our tag task.

    python benchmarks/tag_loop_probe.py --init runs/pre_bert --task runs/sentences \\
        --learning-rate 2.5e-4 --seed 0 [--own-head]
"""

import argparse
import os
import sys
import tempfile
import types

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import finetune_parity  # noqa: E402  (benchmarks/ is the script's folder)

BATCH, DROPOUT = 32, 0.1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--init", required=True, help="an encoder transformers can load")
    p.add_argument("--task", required=True, help="a folder with train.csv and eval.csv")
    p.add_argument("--learning-rate", type=float, default=2.5e-4)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--own-head", action="store_true",
                   help="transformers initializes its own head (default: ours, copied)")
    args = p.parse_args()
    run = types.SimpleNamespace(kind="tag", init=args.init, task=args.task, max_train=None,
                                max_eval=None, epochs=args.epochs,
                                learning_rate=args.learning_rate, batch_size=BATCH,
                                seq_length=128, threads=2)
    with tempfile.TemporaryDirectory(prefix="tag_loop_") as work:
        task, spec, train, evaluation = finetune_parity._read_task(
            run, finetune_parity._task_files(run, work))
        ours, theirs = _models(args, task, spec, work)
        batches = _batches(train, args)
        steps = len(batches["labels"]) // BATCH
        _train_ours(ours, task, spec, batches, args, steps)
        _train_theirs(theirs, batches, args, steps)
        x = {k: np.asarray(v) for k, v in evaluation.x.items()}
        scores = {"ours": ours.predict(x, batch_size=64, verbose=0)["logits"],
                  "transformers": _logits(theirs, x)}
    for side, logits in scores.items():
        f1 = task.score(spec, evaluation, {"logits": logits})["entity_f1"]
        print(f"{side}: entity F1 {f1:.4f}")


def _models(args, task, spec, work):
    import keras
    import torch
    import transformers

    from albert_keras.convert import save_hf
    from albert_keras.sources.model_source import ModelSource

    keras.utils.set_random_seed(args.seed)
    torch.manual_seed(args.seed)
    encoder = ModelSource(args.init).encoder(dtype="float32", dropout=DROPOUT)
    save_hf(encoder, os.path.join(work, "hf"))
    ours = task.build_model(spec, encoder, DROPOUT)
    theirs = transformers.AutoModelForTokenClassification.from_pretrained(
        os.path.join(work, "hf"), num_labels=len(spec.labels), hidden_dropout_prob=DROPOUT,
        attention_probs_dropout_prob=DROPOUT, classifier_dropout=DROPOUT)
    if not args.own_head:
        kernel, bias = (np.asarray(v) for v in ours.get_layer("tagger").weights)
        with torch.no_grad():
            theirs.classifier.weight.copy_(torch.tensor(kernel.T))
            theirs.classifier.bias.copy_(torch.tensor(bias))
    return ours, theirs


def _batches(train, args):
    """Every epoch's rows in one seeded order, whole batches only."""
    n = len(train.x["token_ids"])
    rng = np.random.default_rng(args.seed)
    order = np.concatenate([rng.permutation(n)[:n // BATCH * BATCH]
                            for _ in range(args.epochs)])
    rows = {k: np.asarray(v)[order] for k, v in train.x.items()}
    rows["labels"] = np.asarray(train.y["logits"])[order]
    rows["weights"] = np.asarray(train.sample_weight["logits"])[order]
    return rows


def _train_ours(model, task, spec, batches, args, steps):
    from albert_keras.tasks.finetune_config import FinetuneConfig
    from albert_keras.tasks.task_run import task_optimizer

    cfg = FinetuneConfig(task="tag", learning_rate=args.learning_rate, batch_size=BATCH,
                         epochs=args.epochs)
    model.compile(optimizer=task_optimizer(cfg, model.encoder, steps),
                  **task.compile_args(spec))
    x = {k: v for k, v in batches.items() if k not in ("labels", "weights")}
    model.fit(x, {"logits": batches["labels"]}, sample_weight={"logits": batches["weights"]},
              batch_size=BATCH, shuffle=False, verbose=0)


def _train_theirs(model, batches, args, steps):
    import torch
    import transformers

    plain = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    decayed = [p for n, p in model.named_parameters() if not ("bias" in n or "LayerNorm" in n)]
    opt = torch.optim.AdamW([{"params": decayed, "weight_decay": 0.01},
                             {"params": plain, "weight_decay": 0.0}],
                            lr=args.learning_rate, eps=1e-6)
    schedule = transformers.get_linear_schedule_with_warmup(opt, int(0.1 * steps), steps)
    labels = np.where(batches["weights"] > 0, batches["labels"], -100)
    model.train()
    for step in range(steps):
        rows = slice(step * BATCH, (step + 1) * BATCH)
        loss = model(**_torch_inputs(batches, rows),
                     labels=torch.tensor(labels[rows]).long()).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        schedule.step()
        opt.zero_grad()


def _torch_inputs(x, rows=slice(None)):
    import torch

    return {"input_ids": torch.tensor(x["token_ids"][rows]).long(),
            "token_type_ids": torch.tensor(x["segment_ids"][rows]).long(),
            "attention_mask": torch.tensor(x["padding_mask"][rows]).long()}


def _logits(model, x):
    import torch

    model.eval()
    with torch.no_grad():
        return model(**_torch_inputs(x)).logits.numpy()


if __name__ == "__main__":
    main()
