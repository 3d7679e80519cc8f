"""Pretraining objectives compared: step cost, and what each model is worth.

``--step-cost``: seconds per training step of ``mlm_sop``, ``mlm`` and
``rtd`` (generator + discriminator) on the same discriminator, the same data
folder and batch, the objectives interleaved round by round; medians. The
issue's bound: an ``rtd`` step costs at most 1.4x an ``mlm_sop`` step.

``--compare``: at equal wall-clock (``--minutes`` per objective), pretrain
with each objective on one data folder, then fine-tune every model, and the
same architecture from scratch, on the sotu tasks with several seeds; mean
and standard deviation of the eval accuracy, with the held-out pretraining
metrics of each objective, and TF-IDF + logistic regression on the same
rows. ``--short-data`` gives the small-corpus recipe's two phases. Fine-tuning keeps
its best epoch, chosen on the scored eval rows unless ``--validation-rows``
sets apart other rows of the eval file to choose on. Results go to
``--out`` as they come; a rerun skips what the file already holds.

``--plot``: one or more ``--compare`` files (e.g. two budgets) drawn as bars
with the seed spread, against TF-IDF and the majority class.

    python docs/reports/code/objectives.py --step-cost --data runs/pretrain/data \\
        --out docs/reports/results/objectives_step_cost.json
    python docs/reports/code/objectives.py --compare --data runs/pretrain/data \\
        --tasks runs/sotu_party runs/sotu_century --seeds 0 1 2
    python docs/reports/code/objectives.py --plot docs/reports/results/objectives_two_phase.json \\
        --plot-out docs/reports/results/objectives.png
"""

import argparse
import dataclasses
import json
import os
import statistics
import tempfile
import time

from finetune_recipe import tfidf_baseline  # the same baseline as the recipe table

from albert_keras.files import write_json
from albert_keras.heads.poolings import CLASSIFIER_POOLINGS

OBJECTIVES = ("mlm_sop", "mlm", "rtd")


def parse_case(name):
    """``"OBJECTIVE"`` or ``"OBJECTIVE:FIELD=VALUE,..."`` -> ``(objective,
    {field: value})``: one objective with ``PretrainConfig`` fields changed
    (values read as JSON), e.g. ``rtd:rtd_mlm_weight=1``. The whole string
    names the case in the results and the step-cost ratios.
    """
    from albert_keras.training.pretrain_config import PretrainConfig

    known = {f.name for f in dataclasses.fields(PretrainConfig)}
    objective, _, rest = name.partition(":")
    fields = {}
    for item in filter(None, rest.split(",")):
        field, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--objectives {name!r}: {item!r} is not FIELD=VALUE")
        if field not in known:
            raise SystemExit(f"--objectives {name!r}: {field!r} is not a PretrainConfig field")
        try:
            fields[field] = json.loads(value)
        except json.JSONDecodeError:
            fields[field] = value
    return objective, fields


def write(path, results):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    write_json(path, results)


# -- step cost -------------------------------------------------------------------------------


def step_cost(args):
    from pretrain_recipe import round_times  # the same timed models as the recipe table

    from albert_keras.training.pretrain_config import PretrainConfig

    cfgs = {name: (PretrainConfig(**{
        "embedding_sharing": args.embedding_sharing, "preset": args.preset,
        "model_overrides": json.loads(args.model_overrides), "precision": args.precision,
        "batch_size": args.batch_size, "steps_per_execution": args.steps_per_execution,
        "mask_rate": args.mask_rate, **fields, "objective": objective}), args.data)
            for name, (objective, fields) in ((n, parse_case(n)) for n in args.objectives)}
    times = round_times(cfgs, rounds=args.rounds, steps=args.steps)
    results = {"settings": vars(args), "seconds_per_step": times,
               "median_seconds_per_step": {k: statistics.median(v) for k, v in times.items()}}
    base = results["median_seconds_per_step"].get("mlm_sop")
    if base:
        results["ratio_to_mlm_sop"] = {k: v / base for k, v in
                                       results["median_seconds_per_step"].items()}
    write(args.out, results)
    print(json.dumps({k: v for k, v in results.items() if k != "seconds_per_step"}, indent=2))


# -- equal wall-clock comparison ------------------------------------------------------------------


def step_cost_ratios(path, mask_rate):
    """Each objective's step cost over mlm_sop's, from a ``--step-cost`` file.

    The share masked sets how many rows the vocabulary projection runs on, so
    a ratio timed at one mask rate is wrong at another (1.63x at 15% against
    1.40x at 40% on the 2-layer model). A file timed at a different rate than
    the comparison runs at is refused rather than silently scaling the steps.

    Args:
        path: the ``--step-cost`` results file; a missing file means equal steps.
        mask_rate: the comparison's ``--mask-rate`` (None: the data's stored rate).

    Returns:
        A dict from objective name to its step-cost ratio.
    """
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        timed = json.load(f)
    if not isinstance(timed, dict) or not isinstance(timed.get("ratio_to_mlm_sop"), dict):
        raise SystemExit(f"{path}: no ratio_to_mlm_sop; not a --step-cost results file")
    # files written before --mask-rate existed were timed at the data's rate
    timed_rate = (timed.get("settings") or {}).get("mask_rate")
    if timed_rate != mask_rate:
        timed_at, run_at = ("the data's stored rate" if r is None else r
                            for r in (timed_rate, mask_rate))
        raise SystemExit(f"{path}: step costs timed at mask rate {timed_at}, "
                         f"--compare masks {run_at}; time them at the same rate "
                         f"(--step-cost --mask-rate) or pass a matching --step-cost-file")
    return timed["ratio_to_mlm_sop"]


def _pretraining_steps(name, args, ratios):
    """``(steps, short_steps)`` for one objective at equal wall-clock.

    The small-corpus recipe's steps for mlm_sop, fewer for an objective whose
    step costs more (the --step-cost medians), so each run's learning-rate
    schedule ends within the budget. --short-data: the recipe's two phases,
    the first 7/8 of the steps (whole epochs of 50) at the short folder's length.
    """
    steps = max(50, int(args.base_steps / ratios.get(name, 1.0)) // 50 * 50)
    short_steps = 0
    if args.short_data:
        short_steps = min(int(args.short_seq_fraction * steps + 1e-9) // 50 * 50,
                          (steps - 1) // 50 * 50)
    return steps, short_steps


def _pretrain_one(name, args, ratios, folder):
    from albert_keras.training.pretrain import pretrain
    from albert_keras.training.pretrain_config import PretrainConfig

    steps, short_steps = _pretraining_steps(name, args, ratios)
    objective, fields = parse_case(name)
    cfg = PretrainConfig(**{
        "embedding_sharing": args.embedding_sharing, "learning_rate": args.learning_rate,
        "mask_rate": args.mask_rate, "model_overrides": json.loads(args.model_overrides),
        **fields, "objective": objective, "total_steps": steps, "steps_per_epoch": 50,
        "max_minutes": args.minutes, "seed": 0,
        "short_seq_data": args.short_data if short_steps else "",
        "short_seq_steps": short_steps})
    start = time.perf_counter()
    metrics = pretrain(args.data, folder, cfg)
    metrics["benchmark_wall_seconds"] = time.perf_counter() - start
    return metrics


def _pretrain_all(args, results, work):
    """Each objective's pretrained folder, pretraining those not yet in ``results``."""
    ratios = step_cost_ratios(args.step_cost_file, args.mask_rate)
    models = {}
    for name in args.objectives:
        models[name] = os.path.join(work, name)
        if name not in results["pretraining"]:
            metrics = _pretrain_one(name, args, ratios, models[name])
            results["pretraining"][name] = metrics
            write(args.out, results)
            print(name, json.dumps(metrics), flush=True)
    # the baseline first, so a cut-short run still has it
    if not args.no_from_scratch:
        models = {"from_scratch": models[args.objectives[0]], **models}
    return models


def _finetune_config(args, name, folder, seed):
    from albert_keras.tasks.classify.classify_task import resolve_pooling
    from albert_keras.tasks.finetune_config import FinetuneConfig

    cfg = FinetuneConfig(task="classify", seed=seed, from_scratch=name == "from_scratch")
    if args.finetune_epochs:
        cfg = dataclasses.replace(cfg, epochs=args.finetune_epochs)
    if args.finetune_learning_rate:
        cfg = dataclasses.replace(cfg, learning_rate=args.finetune_learning_rate)
    # auto follows the folder's objective; from scratch takes the first
    # objective's folder, so it gets that model's head
    pooling = resolve_pooling(args.finetune_pooling, folder)
    return dataclasses.replace(cfg, pooling=pooling, **json.loads(args.finetune_overrides))


def _finetune_one(args, name, folder, seed, task):
    """One fine-tuning run's record."""
    from albert_keras.drivers.finetune import finetune

    cfg = _finetune_config(args, name, folder, seed)
    validation = os.path.join(task, "validation.csv") if args.validation_rows else None
    with tempfile.TemporaryDirectory() as out:
        m = finetune(folder, os.path.join(task, "train.csv"), os.path.join(task, "eval.csv"),
                     os.path.join(out, "run"), cfg, validation_path=validation)
    # the per-epoch scores too. Without --validation-rows the best epoch is
    # chosen on the rows it is scored on, so the last epoch's is the
    # unselected number; with it, the history is the validation rows' and
    # "accuracy" the eval rows' at the epoch they chose.
    history = f"{m.get('selected_on')}_history"
    return {"seed": seed, "accuracy": m["accuracy"], "pooling": cfg.pooling,
            "best_epoch": m.get("best_epoch"), history: m.get(history)}


def _finetune_task(args, results, models, task, work):
    """Every model and seed on one task (those not in ``results`` yet), its
    TF-IDF and majority-class baselines, and the task's summary."""
    task_name = os.path.basename(os.path.normpath(task))
    task = sample_task(task, os.path.join(work, "tasks", task_name), args.max_train,
                       args.max_eval, args.validation_rows)
    baselines = results.setdefault("baselines", {})
    if task_name not in baselines:  # the reference every model has to beat
        tfidf, majority, _, _ = tfidf_baseline(os.path.join(task, "train.csv"),
                                               os.path.join(task, "eval.csv"))
        baselines[task_name] = {"tfidf_logreg": tfidf, "majority_class": majority}
        write(args.out, results)
    scores = results["finetuning"].setdefault(task_name, {})
    for name, folder in models.items():
        runs = scores.setdefault(name, [])
        for seed in (s for s in args.seeds if not any(r["seed"] == s for r in runs)):
            runs.append(_finetune_one(args, name, folder, seed, task))
            write(args.out, results)
            print(task_name, name, seed, runs[-1]["accuracy"], flush=True)
    for name, runs in scores.items():
        accuracies = [r["accuracy"] for r in runs]
        results.setdefault("summary", {}).setdefault(task_name, {})[name] = {
            "mean": statistics.mean(accuracies), "std": statistics.pstdev(accuracies)}
    write(args.out, results)


def compare(args):
    """Pretrains each objective, then fine-tunes each (and a from-scratch
    model) on every task; a killed run resumes from ``--out``."""
    results = {"settings": vars(args), "pretraining": {}, "finetuning": {}}
    if os.path.isfile(args.out):  # a killed run keeps what it measured
        with open(args.out) as f:
            results = json.load(f)
    work = args.work or tempfile.mkdtemp()
    models = _pretrain_all(args, results, work)
    for task in args.tasks:
        _finetune_task(args, results, models, task, work)
    print(json.dumps(results.get("summary"), indent=2))


# -- plot ---------------------------------------------------------------------------------------


def plot(paths, out):
    """One panel per task: each model's mean fine-tuned accuracy with its
    standard deviation over seeds, one bar group per results file (budget),
    TF-IDF + logistic regression and the majority class as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(json.load(f))
    tasks = sorted({t for r in runs for t in r.get("summary", {})})
    # wide enough that each bar's two-line label has room of its own
    bars = max(sum(len(r.get("summary", {}).get(t, {})) for r in runs) for t in tasks)
    width = max(5.5, 0.55 * bars + 0.3 * len(runs))
    fig, axes = plt.subplots(len(tasks), 1, figsize=(width, 5.2 * len(tasks)), squeeze=False)
    for ax, task in zip(axes[:, 0], tasks):
        x = 0
        ticks, labels = [], []
        for r in runs:
            for name, s in r.get("summary", {}).get(task, {}).items():
                steps = r["pretraining"].get(name, {}).get("steps")
                # "from_scratch_<variant>": the baseline of a file whose models
                # share a non-default architecture (main_job_alibi.json)
                scratch = name.startswith("from_scratch")
                ax.bar(x, s["mean"], yerr=s["std"], capsize=3,
                       color="lightgray" if scratch else "tab:blue")
                ticks.append(x)
                labels.append(name if scratch else f"{name}\n{steps} steps")
                x += 1
            x += 0.5
        base = next((r["baselines"][task] for r in runs if task in r.get("baselines", {})), None)
        if base:
            ax.axhline(base["tfidf_logreg"], color="tab:red", linestyle="--",
                       label="TF-IDF + LR")
            ax.axhline(base["majority_class"], color="black", linestyle=":", label="majority")
            ax.legend(loc="lower right", fontsize=8)
        ax.set_xticks(ticks, labels, rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("eval accuracy (mean, std over seeds)")
        ax.set_title(task)
        low = min(b.get_height() for b in ax.patches)
        ax.set_ylim(max(0.0, low - 0.1), None)
    fig.tight_layout()
    fig.savefig(out + ".tmp.png", dpi=120)
    os.replace(out + ".tmp.png", out)
    print("wrote", out)


def sample_task(task, out, max_train, max_eval, validation_rows=0):
    """The task folder, or a seeded random sample of its rows (header kept).

    With ``validation_rows``, that many rows of the eval file that are not
    among the sampled eval rows go to ``validation.csv`` (a second draw,
    so the train and eval samples stay the ones earlier results used).
    They come from the same held-out speeches as the scored rows, as a dev
    set comes from the test set's distribution, but no row is in both.
    """
    import csv

    import numpy as np

    if not (max_train or max_eval or validation_rows):
        return task
    os.makedirs(out, exist_ok=True)
    splits = {}
    for split, limit in (("train", max_train), ("eval", max_eval)):
        with open(os.path.join(task, f"{split}.csv"), newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        header, rows = rows[0], rows[1:]
        rest = []
        if limit and limit < len(rows):
            keep = np.sort(np.random.default_rng(0).choice(len(rows), limit, replace=False))
            if split == "eval":  # the rows validation rows may come from
                kept = set(keep.tolist())
                rest = [r for i, r in enumerate(rows) if i not in kept]
            rows = [rows[i] for i in keep]
        splits[split] = (header, rows, rest)
    header, rows, rest = splits["eval"]
    if validation_rows:
        if validation_rows > len(rest):
            raise SystemExit(f"{task}/eval.csv: --validation-rows {validation_rows} needs that "
                             f"many eval rows outside the {len(rows)} scored ones; it has "
                             f"{len(rest)} (lower --max-eval or --validation-rows)")
        pick = np.sort(np.random.default_rng(1).choice(len(rest), validation_rows,
                                                       replace=False))
        splits["validation"] = (header, [rest[i] for i in pick], [])
    for split, (header, rows, _) in splits.items():
        path = os.path.join(out, f"{split}.csv")
        with open(path + ".tmp", "w", newline="", encoding="utf-8") as f:
            csv.writer(f).writerows([header, *rows])
        os.replace(path + ".tmp", path)
    if not validation_rows and os.path.exists(os.path.join(out, "validation.csv")):
        os.remove(os.path.join(out, "validation.csv"))
    return out


def _parser():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--step-cost", action="store_true")
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--plot", nargs="+", default=[],
                        help="draw these --compare results files into --plot-out")
    parser.add_argument("--plot-out", default="docs/reports/results/objectives.png")
    parser.add_argument("--data", help="a pretraining data folder (--step-cost, --compare)")
    parser.add_argument("--short-data", default="",
                        help="--compare: a folder of shorter sequences for the first steps")
    parser.add_argument("--short-seq-fraction", type=float, default=0.875,
                        help="--compare: share of the steps on --short-data (whole epochs)")
    parser.add_argument("--objectives", nargs="+", default=list(OBJECTIVES),
                        help="objectives, or OBJECTIVE:FIELD=VALUE,... for one with "
                             "PretrainConfig fields changed (e.g. rtd:rtd_mlm_weight=1)")
    parser.add_argument("--embedding-sharing", default="tied")
    parser.add_argument("--preset", default="albert_tiny")
    parser.add_argument("--model-overrides", default="{}",
                        help='AlbertConfig fields as JSON, e.g. \'{"position_bias": "alibi"}\'')
    parser.add_argument("--precision", default="auto",
                        help="as pretrain's (auto: float32 on CPUs without native bf16)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--mask-rate", type=float, default=None,
                        help="share of the tokens masked, drawn per batch (default: the "
                             "data folder's stored rate; the small-corpus run masks 0.4). It sets "
                             "how many rows the vocabulary projection runs on, a large part "
                             "of every objective's step")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps-per-execution", type=int, default=10)
    parser.add_argument("--tasks", nargs="*", default=[])
    parser.add_argument("--minutes", type=float, default=15.0, help="a cap per objective")
    parser.add_argument("--base-steps", type=int, default=800,
                        help="mlm_sop's steps (the small-corpus recipe's); others scaled by step cost")
    parser.add_argument("--step-cost-file", default="docs/reports/results/objectives_step_cost.json")
    parser.add_argument("--learning-rate", type=float, default=8e-3)
    parser.add_argument("--finetune-epochs", type=int, default=0)
    parser.add_argument("--finetune-learning-rate", type=float, default=0.0,
                        help="0: fine-tuning's default for the model's width")
    parser.add_argument("--finetune-pooling", default="auto",
                        choices=("auto", *CLASSIFIER_POOLINGS),
                        help="what the classifier head reads (FinetuneConfig.pooling)")
    parser.add_argument("--finetune-overrides", default="{}",
                        help='FinetuneConfig fields as JSON, e.g. \'{"sequence_length": 256}\'')
    parser.add_argument("--no-from-scratch", action="store_true",
                        help="fine-tune only the named models, without the untrained "
                             "baseline (to add a model to a results file that has it)")
    parser.add_argument("--max-train", type=int, default=0, help="sample the tasks' rows")
    parser.add_argument("--max-eval", type=int, default=0)
    parser.add_argument("--validation-rows", type=int, default=0,
                        help="choose the best fine-tuning epoch on this many eval-file rows "
                             "outside the scored sample (0: on the scored rows, optimistic)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--work", default="", help="folder for the pretrained models")
    parser.add_argument("--out", default="docs/reports/results/objectives.json")
    return parser


def main():
    parser = _parser()
    args = parser.parse_args()
    if (args.step_cost or args.compare) and not args.data:
        parser.error("--step-cost and --compare need --data")
    if args.plot:
        plot(args.plot, args.plot_out)
    if args.step_cost:
        step_cost(args)
    if args.compare:
        compare(args)


if __name__ == "__main__":
    main()
