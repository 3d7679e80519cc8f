"""The main job's recipe, measured: held-out MLM and SOP at equal wall-clock.

Each recipe is a set of ``PretrainConfig`` fields (plus, optionally, other
data folders, e.g. made with a higher ``--masked-lm-prob``). For a fair
budget, every recipe's step time is measured first on this machine (at both
sequence lengths, after compilation), and its step count is set so that the
two phases fill ``--minutes``: 7/8 of the steps at the short length, as the
main job does. Then it is pretrained, and scored on one reference held-out
split (``--eval-data``) whatever data it trained on, so that a recipe that
masks more is not judged on harder examples.

    python benchmarks/pretrain_recipe.py --data runs/pretrain/data \\
        --short-data runs/pretrain/data_64 --minutes 10 --recipes default batch16 \\
        --work /tmp/recipes --out benchmarks/results/pretrain_recipe.json

Results go to ``--out`` as each recipe finishes; a recipe already there is
skipped, so a killed run resumes.
"""

import argparse
import dataclasses
import json
import os
import statistics
import time

# name -> (PretrainConfig fields, data variant). A variant names the data
# folders given with --variant NAME=LONG,SHORT.
RECIPES = {
    "default": ({}, None),
    "float32": ({"precision": "float32"}, None),
    "batch32": ({"batch_size": 32, "learning_rate": 5.6e-3, "warmup_steps": 80}, None),
    "batch16": ({"batch_size": 16, "learning_rate": 4e-3, "warmup_steps": 160}, None),
    "batch16_lr8e-3": ({"batch_size": 16, "learning_rate": 8e-3, "warmup_steps": 160}, None),
    "adamw_batch16": ({"batch_size": 16, "optimizer": "adamw", "learning_rate": 1e-3,
                       "warmup_steps": 160}, None),
    "hidden128": ({"model_overrides": {"hidden_size": 128, "intermediate_size": 512,
                                       "num_attention_heads": 2}}, None),
    "hidden128_batch16": ({"model_overrides": {"hidden_size": 128, "intermediate_size": 512,
                                               "num_attention_heads": 2},
                           "batch_size": 16, "learning_rate": 4e-3, "warmup_steps": 160}, None),
    "mask30": ({}, "mask30"),
    "mask30_batch16": ({"batch_size": 16, "learning_rate": 4e-3, "warmup_steps": 160},
                       "mask30"),
    "mlm_batch16": ({"objective": "mlm", "batch_size": 16, "learning_rate": 4e-3,
                     "warmup_steps": 160}, None),
    "rtd_batch16": ({"objective": "rtd", "batch_size": 16, "learning_rate": 4e-3,
                     "warmup_steps": 160}, None),
    "rtd_adamw_batch16": ({"objective": "rtd", "batch_size": 16, "optimizer": "adamw",
                           "learning_rate": 1e-3, "warmup_steps": 160}, None),
}


def write(path, results):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=2)
    os.replace(path + ".tmp", path)


def seconds_per_step(cfg, data, rounds=3, steps=10):
    """Median seconds per training step of ``cfg`` on ``data``, compiled."""
    import keras

    from albert_keras.data.reader import pretraining_dataset
    from albert_keras.data.reader import read_manifest
    from albert_keras.models.albert_encoder import AlbertEncoder
    from albert_keras.optimizers.optimizer import make_optimizer
    from albert_keras.presets import get_preset
    from albert_keras.training.objectives import get_objective

    keras.mixed_precision.set_global_policy(cfg.precision)
    manifest = read_manifest(data)
    config = get_preset(cfg.preset, vocab_size=manifest["vocab_size"],
                        **(cfg.model_overrides or {}))
    objective = get_objective(cfg.objective, manifest, cfg)
    keras.utils.set_random_seed(0)
    optimizer = make_optimizer(cfg.optimizer, learning_rate=1e-4, total_steps=10**6,
                               warmup_steps=10)
    model = objective.build_model(AlbertEncoder(config), optimizer, 10)
    ds = pretraining_dataset(data, batch_size=cfg.batch_size, shuffle=False,
                             dynamic_masking=True).map(objective.split_features)
    model.fit(ds, steps_per_epoch=steps, verbose=0)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        model.fit(ds, steps_per_epoch=steps, verbose=0)
        times.append((time.perf_counter() - start) / steps)
    keras.backend.clear_session()
    return statistics.median(times)


def held_out(folder, eval_data):
    """The pretrainer in ``folder`` scored on ``eval_data``'s held-out split."""
    import keras

    from albert_keras.data.reader import read_manifest
    from albert_keras.training.objectives import get_objective
    from albert_keras.training.pretrain_config import PretrainConfig

    with open(os.path.join(folder, "train_config.json")) as f:
        name = json.load(f).get("objective", "mlm_sop")
    model = keras.saving.load_model(os.path.join(folder, "pretrainer.keras"), compile=False)
    objective = get_objective(name if name != "auto" else "mlm_sop", read_manifest(eval_data),
                              PretrainConfig())
    metrics = objective.evaluate(model, eval_data)
    metrics.update(objective.baselines(eval_data))
    return metrics


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the sequence-128 data folder")
    parser.add_argument("--short-data", required=True, help="the sequence-64 data folder")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=LONG,SHORT: other data folders a recipe may name")
    parser.add_argument("--eval-data", default="", help="scored on (default: --data)")
    parser.add_argument("--recipes", nargs="+", default=["default"], choices=sorted(RECIPES))
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--short-fraction", type=float, default=0.875)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", default="benchmarks/results/pretrain_recipe.json")
    args = parser.parse_args()

    from albert_keras.training.pretrain import pretrain
    from albert_keras.training.pretrain_config import PretrainConfig

    variants = {None: (args.data, args.short_data)}
    for spec in args.variant:
        name, folders = spec.split("=", 1)
        variants[name] = tuple(folders.split(","))
    eval_data = args.eval_data or args.data
    results = {"settings": vars(args), "recipes": {}}
    if os.path.isfile(args.out):
        with open(args.out) as f:
            results = json.load(f)
    for name in args.recipes:
        if name in results["recipes"]:
            continue
        fields, variant = RECIPES[name]
        long_data, short_data = variants[variant]
        cfg = PretrainConfig(**fields)
        t_short = seconds_per_step(cfg, short_data)
        t_long = seconds_per_step(cfg, long_data)
        per_step = args.short_fraction * t_short + (1 - args.short_fraction) * t_long
        # whole epochs of 8 per run at most 100 steps each, 7 of them short
        epoch = max(10, min(100, int(args.minutes * 60 / per_step / 8) // 10 * 10))
        epochs = max(8, int(args.minutes * 60 / per_step / epoch))
        steps = epochs * epoch
        short_steps = int(epochs * args.short_fraction) * epoch
        cfg = PretrainConfig(**fields)
        cfg = dataclasses.replace(cfg, total_steps=steps, short_seq_data=short_data,
                                  short_seq_steps=short_steps,
                                  warmup_steps=min(cfg.warmup_steps, steps // 5),
                                  steps_per_epoch=epoch)
        folder = os.path.join(args.work, name)
        start = time.perf_counter()
        trained = pretrain(long_data, folder, cfg)
        wall = time.perf_counter() - start
        metrics = held_out(folder, eval_data)
        results["recipes"][name] = {
            "fields": fields, "data": [long_data, short_data],
            "seconds_per_step": {"short": t_short, "long": t_long},
            "steps": steps, "short_steps": short_steps, "wall_seconds": wall,
            "held_out": metrics, "own_eval": trained,
        }
        write(args.out, results)
        print(name, steps, round(wall), json.dumps({k: round(v, 4) for k, v in metrics.items()
                                                   if isinstance(v, float)}), flush=True)


if __name__ == "__main__":
    main()
