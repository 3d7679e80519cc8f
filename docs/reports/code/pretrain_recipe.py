"""The small-corpus recipe, measured: held-out MLM and SOP at equal wall-clock.

Each recipe is a set of ``PretrainConfig`` fields (plus, optionally, other
data folders, e.g. made with a higher ``--masked-lm-prob``). Equal
wall-clock without trusting a shared machine's clock: every recipe's step
time is first measured at both sequence lengths, all recipes interleaved
round by round (medians), and each recipe gets the small-corpus recipe's 800 steps
scaled by how much faster or slower its steps are than the default's; 7/8
of them at the short length, as the small-corpus run. Each model is then scored on
one reference held-out split (``--eval-data``) whatever data it trained on,
so that a recipe that masks more is not judged on harder examples.

    python docs/reports/code/pretrain_recipe.py --data runs/pretrain/data \\
        --short-data runs/pretrain/data_64 --recipes default batch16 \\
        --work /tmp/recipes --out docs/reports/results/pretrain_recipe.json

``--time-only`` measures the step times alone (interleaved, medians) and
writes them with their ratios to the first recipe's:

    python docs/reports/code/pretrain_recipe.py --data runs/pretrain/data \\
        --short-data runs/pretrain/data_64 --time-only --rounds 5 \\
        --recipes main_job_mask15 main_job_mask40 --out /tmp/step_times.json

Results go to ``--out`` as each recipe finishes; a recipe already there is
skipped, so a killed run resumes.
"""

import argparse
import dataclasses
import json
import os
import statistics
import time

MAIN_JOB = {"objective": "mlm", "learning_rate": 1.6e-2, "warmup_steps": 150,
            "model_overrides": {"position_bias": "alibi", "alibi_slope_scale": 4.0}}


def _main_job_shape(**model_fields):
    """The small-corpus run at 40% masked with other ``AlbertConfig`` fields."""
    return {**MAIN_JOB, "mask_rate": 0.4,
            "model_overrides": {**MAIN_JOB["model_overrides"], **model_fields}}


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
    # the small-corpus run of 2026-11-25 (ALiBi x4, LAMB 1.6e-2 / 150) at BERT's 15%
    # of tokens masked, and since 2026-11-26 at 40% (dynamic masking)
    "main_job_mask15": (MAIN_JOB, None),
    "main_job_mask40": ({**MAIN_JOB, "mask_rate": 0.4}, None),
    # smaller models for the same wall-clock (2026-11-26): at this budget the
    # small-corpus run's model sees about one token per transformer weight, far
    # fewer than compute-optimal training wants, so a cheaper step may win
    "main_job_layers2": (_main_job_shape(num_hidden_layers=2), None),
    "main_job_layers1": (_main_job_shape(num_hidden_layers=1), None),
    "main_job_layers2_hidden128": (_main_job_shape(num_hidden_layers=2, hidden_size=128,
                                                   intermediate_size=512), None),
    "main_job_hidden192": (_main_job_shape(hidden_size=192, intermediate_size=768), None),
    "main_job_layers2_hidden192": (_main_job_shape(num_hidden_layers=2, hidden_size=192,
                                                   intermediate_size=768), None),
    "main_job_ffn512": (_main_job_shape(intermediate_size=512), None),
    "main_job_hidden128": (_main_job_shape(hidden_size=128, intermediate_size=512), None),
}


def write(path, results):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=2)
    os.replace(path + ".tmp", path)


def timed_model(cfg, data):
    """A compiled pretraining model of ``cfg`` and its dataset, warmed up
    (also what ``objectives.py --step-cost`` times)."""
    import keras

    from albert_keras.data.reader import pretraining_dataset
    from albert_keras.data.reader import read_manifest
    from albert_keras.models.albert.albert_encoder import AlbertEncoder
    from albert_keras.optimizers.optimizer import make_optimizer
    from albert_keras.precision import resolve_precision
    from albert_keras.presets import get_preset
    from albert_keras.training.datasets import untuned_options
    from albert_keras.training.objectives import get_objective

    keras.mixed_precision.set_global_policy(resolve_precision(cfg.precision))
    manifest = read_manifest(data)
    config = get_preset(cfg.preset, vocab_size=manifest["vocab_size"],
                        **(cfg.model_overrides or {}))
    objective = get_objective(cfg.objective, manifest, cfg)
    keras.utils.set_random_seed(0)
    optimizer = make_optimizer(cfg.optimizer, learning_rate=1e-4, total_steps=10**6,
                               warmup_steps=10)
    model = objective.build_model(AlbertEncoder(config), optimizer, cfg.steps_per_execution)
    # Every timed fit() makes a new iterator and drops it on return. No
    # shuffle buffer: refilling one each time would be timed with the steps.
    # Untuned: dropping an autotuned iterator waits for the autotuner's
    # thread, whole multiples of about 5 s per round on the 2-layer model.
    ds = pretraining_dataset(data, batch_size=cfg.batch_size, shuffle=False,
                             dynamic_masking=True, masked_lm_prob=cfg.mask_rate,
                             ).map(objective.split_features).with_options(untuned_options())
    model.fit(ds, steps_per_epoch=2 * cfg.steps_per_execution, verbose=0)
    return model, ds


def round_times(cfgs, rounds=3, steps=10):
    """``{key: [seconds per step, one per round]}`` for every ``(cfg, data)``
    in ``cfgs`` (``{key: (cfg, data)}``), interleaved: every round times
    each model once."""
    built = {key: timed_model(cfg, data) for key, (cfg, data) in cfgs.items()}
    times = {key: [] for key in built}
    for _ in range(rounds):
        for key, (model, ds) in built.items():
            start = time.perf_counter()
            model.fit(ds, steps_per_epoch=steps, verbose=0)
            times[key].append((time.perf_counter() - start) / steps)
    return times


def step_times(cfgs, rounds=3, steps=10):
    """``{(name, which): median seconds per step}`` for every recipe and
    data folder in ``cfgs`` (``{(name, which): (cfg, data)}``), interleaved."""
    return {key: statistics.median(v) for key, v in round_times(cfgs, rounds, steps).items()}


def held_out(folder, eval_data):
    """The pretrainer in ``folder`` scored on ``eval_data``'s held-out split."""
    from albert_keras.data.reader import read_manifest
    from albert_keras.saving import load_model
    from albert_keras.training.objectives import get_objective
    from albert_keras.training.pretrain_config import PretrainConfig

    with open(os.path.join(folder, "train_config.json")) as f:
        name = json.load(f).get("objective", "mlm_sop")
    # ours registers the model classes first (a bare keras load cannot find them)
    model = load_model(os.path.join(folder, "pretrainer.keras"))
    objective = get_objective(name if name != "auto" else "mlm_sop", read_manifest(eval_data),
                              PretrainConfig())
    metrics = objective.evaluate(model, eval_data)
    metrics.update(objective.baselines(eval_data))
    return metrics


def _parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the sequence-128 data folder")
    parser.add_argument("--short-data", required=True, help="the sequence-64 data folder")
    parser.add_argument("--variant", action="append", default=[],
                        help="NAME=LONG,SHORT: other data folders a recipe may name")
    parser.add_argument("--eval-data", default="", help="scored on (default: --data)")
    parser.add_argument("--recipes", nargs="+", default=["default"], choices=sorted(RECIPES))
    parser.add_argument("--base-recipe", default="default", choices=sorted(RECIPES),
                        help="the recipe that gets --base-steps; the others get as many "
                             "steps as fit in its wall-clock")
    parser.add_argument("--base-steps", type=int, default=800,
                        help="the base recipe's steps (the small-corpus recipe's)")
    parser.add_argument("--short-fraction", type=float, default=0.875)
    parser.add_argument("--time-only", action="store_true",
                        help="measure the recipes' step times (interleaved, medians) and "
                             "write them to --out, without training")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds")
    parser.add_argument("--timed-steps", type=int, default=10, help="steps per timing round")
    parser.add_argument("--times", default="",
                        help="take the step times from this --time-only output instead "
                             "of measuring them (so trainings can run side by side)")
    parser.add_argument("--work", default="")
    parser.add_argument("--out", default="docs/reports/results/pretrain_recipe.json")
    args = parser.parse_args()
    if not args.time_only and not args.work:
        parser.error("--work is needed to train")
    return args


def _variants(args):
    """``{variant: (long data, short data)}``; None is --data and --short-data."""
    variants = {None: (args.data, args.short_data)}
    for spec in args.variant:
        name, folders = spec.split("=", 1)
        variants[name] = tuple(folders.split(","))
    return variants


def _timed_cases(names, variants):
    """``{(recipe, "long" | "short"): (cfg, data)}`` for every recipe named."""
    from albert_keras.training.pretrain_config import PretrainConfig

    return {(name, which): (PretrainConfig(**RECIPES[name][0]), data)
            for name in names
            for which, data in zip(("long", "short"), variants[RECIPES[name][1]])}


def _time_only(args, variants):
    times = step_times(_timed_cases(args.recipes, variants), rounds=args.rounds,
                       steps=args.timed_steps)
    base = args.recipes[0]
    report = {name: {"seconds_per_step": {w: times[(name, w)] for w in ("long", "short")},
                     f"vs_{base}": {w: times[(name, w)] / times[(base, w)]
                                    for w in ("long", "short")}}
              for name in args.recipes}
    write(args.out, {"settings": vars(args), "step_times": report})
    print(json.dumps(report, indent=2))


def _step_times_for(args, todo, variants):
    """The step times of the recipes to train and the base recipe, measured
    or read from --times."""
    names = [args.base_recipe, *todo] if todo and args.base_recipe not in todo else todo
    timed = _timed_cases(names, variants)
    if not args.times:
        return step_times(timed) if todo else {}
    with open(args.times) as f:
        measured = json.load(f)["step_times"]
    return {(name, which): measured[name]["seconds_per_step"][which] for name, which in timed}


def _schedule(args, name, times):
    """``(steps, short_steps, steps_per_epoch)``: the small-corpus recipe's steps,
    scaled by this recipe's step cost against the base recipe's (whole
    epochs; 7 of 8 at the short length)."""
    def per_step(recipe):
        return (args.short_fraction * times[(recipe, "short")]
                + (1 - args.short_fraction) * times[(recipe, "long")])

    budget = args.base_steps * per_step(args.base_recipe) / per_step(name)
    epoch = max(10, min(100, int(budget / 8) // 10 * 10))
    epochs = max(8, round(budget / epoch))
    return epochs * epoch, int(epochs * args.short_fraction) * epoch, epoch


def _train_recipe(args, name, times, variants, eval_data):
    """Pretrains one recipe on its schedule; its record for the results file."""
    from albert_keras.training.pretrain import pretrain
    from albert_keras.training.pretrain_config import PretrainConfig

    fields, variant = RECIPES[name]
    long_data, short_data = variants[variant]
    steps, short_steps, epoch = _schedule(args, name, times)
    # the fields left None (learning rate, warmup) filled as pretrain would
    cfg = PretrainConfig(**fields).with_defaults(total_steps=steps)
    cfg = dataclasses.replace(cfg, total_steps=steps, short_seq_data=short_data,
                              short_seq_steps=short_steps,
                              warmup_steps=min(cfg.warmup_steps, steps // 5),
                              steps_per_epoch=epoch)
    folder = os.path.join(args.work, name)
    start = time.perf_counter()
    trained = pretrain(long_data, folder, cfg)
    wall = time.perf_counter() - start
    return {"fields": fields, "data": [long_data, short_data],
            "seconds_per_step": {"short": times[(name, "short")], "long": times[(name, "long")]},
            "steps": steps, "short_steps": short_steps, "wall_seconds": wall,
            "held_out": held_out(folder, eval_data), "own_eval": trained}


def main():
    args = _parse_args()
    variants = _variants(args)
    if args.time_only:
        _time_only(args, variants)
        return
    results = {"settings": vars(args), "recipes": {}}
    if os.path.isfile(args.out):
        with open(args.out) as f:
            results = json.load(f)
    todo = [name for name in args.recipes if name not in results["recipes"]]
    times = _step_times_for(args, todo, variants)
    for name in todo:
        record = _train_recipe(args, name, times, variants, args.eval_data or args.data)
        results["recipes"][name] = record
        write(args.out, results)
        metrics = record["held_out"]
        print(name, record["steps"], round(record["wall_seconds"]),
              json.dumps({k: round(v, 4) for k, v in metrics.items()
                          if isinstance(v, float)}), flush=True)


if __name__ == "__main__":
    main()
