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
from albert_keras.families import family_of
from albert_keras.families import preset_config
from albert_keras.files import check_output
from albert_keras.files import removed_on_failure
from albert_keras.options import check_options
from albert_keras.options import name_of
from albert_keras.sources.layout import CHECKPOINTS
from albert_keras.sources.layout import DISCRIMINATOR_FILE
from albert_keras.sources.layout import ENCODER_FILE
from albert_keras.sources.layout import METRICS_FILE
from albert_keras.sources.layout import PRETRAINER_FILE
from albert_keras.sources.layout import TRAIN_CONFIG_FILE
from albert_keras.sources.model_source import tokenizer_path
from albert_keras.text.registry import TOKENIZERS
from albert_keras.text.spm_trainer import TokenizerConfig
from albert_keras.training.callbacks import latest_checkpoint
from albert_keras.training.pipeline_config import PipelineConfig
from albert_keras.training.pretrain import pretrain
from albert_keras.training.pretrain_config import PretrainConfig
from albert_keras.training.recipes import resolve_recipe

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
    t = resolve_recipe(p, t).with_defaults()
    t.validate()
    # the kind asked for, else the preset family's own (ModernBERT's: byte-level BPE)
    tokenizer_config = dataclasses.replace(tokenizer_config, kind=tokenizer_config.kind or (
        family_of(preset_config(t.preset)).tokenizer_kind))
    for config in (p, tokenizer_config, data_config):
        check_options(config)
    out = p.out
    if os.path.isfile(os.path.join(out, METRICS_FILE)) and not p.overwrite:
        raise FileExistsError(f"{out} holds a finished run; pass --overwrite to train again")
    if p.overwrite and os.path.isdir(out):
        # starting again deletes the folder: never when it holds an input
        check_output(out, [*(p.input or ()), p.tokenizer, p.data, p.short_data, t.init,
                            t.teacher],
                     overwrite=True, folder=True,
                     marks=(PRETRAINER_FILE, ENCODER_FILE, CHECKPOINTS, TRAIN_CONFIG_FILE,
                            METRICS_FILE, DISCRIMINATOR_FILE))
        shutil.rmtree(out)
    # a run that fails before its first checkpoint leaves no folder behind
    ckpt_dir = os.path.join(out, CHECKPOINTS)
    with removed_on_failure(out, keep=lambda: latest_checkpoint(ckpt_dir)[0] is not None):
        return _run_stages(p, t, tokenizer_config, data_config, out)


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
    # folder and --init bring their own, and a distillation takes its teacher's
    tokenizer = p.tokenizer or os.path.join(out, "tokenizer",
                                            TOKENIZERS[tokenizer_config.kind].file_name)
    source = t.teacher if t.objective == "distill" else t.init
    if p.data:
        tokenizer = data_tokenizer(p.data, p.tokenizer)
    elif source and not p.tokenizer:
        tokenizer = tokenizer_path(source)
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
    # (a distillation's stages all read one data folder)
    if (p.short_seq_fraction > 0 and p.short_seq_length < full_length
            and (p.short_data or not p.data) and t.objective != "distill"):
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
