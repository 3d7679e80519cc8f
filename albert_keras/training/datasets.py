"""The input pipelines of a pretraining run, one per phase and split.

Every pipeline reads the same global batches and keeps its own replicas'
rows, so a step sees the same examples and masks on any topology.
"""

import filecmp
import os

import tensorflow as tf

from albert_keras.data.reader import pretraining_dataset
from albert_keras.data.reader import verify_shards


def train_dataset(strategy, data_dir, train_config, objective, skip_batches):
    """The training batches of one phase, for ``fit`` under ``strategy``."""
    replicas = strategy.num_replicas_in_sync
    if train_config.batch_size % replicas:
        raise ValueError(
            f"batch_size {train_config.batch_size} is not divisible by the "
            f"{replicas} replicas"
        )

    return strategy.distribute_datasets_from_function(
        lambda context: train_pipeline(context, data_dir, train_config, objective,
                                       skip_batches))


def train_pipeline(context, data_dir, train_config, objective, skip_batches=0):
    """One input pipeline's share of the training batches (endless)."""
    ds = pretraining_dataset(
        data_dir, "train",
        batch_size=context.get_per_replica_batch_size(train_config.batch_size),
        dynamic_masking=train_config.dynamic_masking,
        seed=train_config.seed, input_context=context, verify=False,
        skip_batches=skip_batches, masked_lm_prob=train_config.mask_rate,
    )
    return ds.map(objective.split_features).with_options(untuned_options())


def eval_dataset(strategy, data_dir, manifest, train_config, objective):
    """The validation batches ``fit`` reads after each epoch (None: none)."""
    if "eval" not in manifest["splits"] or not train_config.eval_steps:
        return None
    return strategy.distribute_datasets_from_function(
        lambda context: eval_pipeline(context, data_dir, train_config, objective))


def eval_pipeline(context, data_dir, train_config, objective):
    """One input pipeline's share of the validation batches."""
    ds = pretraining_dataset(
        data_dir, "eval",
        batch_size=context.get_per_replica_batch_size(train_config.batch_size),
        shuffle=False, seed=train_config.seed, input_context=context, verify=False,
    )
    # Finite, of exactly eval_steps batches: Keras rounds validation up to
    # whole executions of an endless dataset (10 batches for eval_steps 5).
    # One element per local replica and step.
    local = context.num_replicas_in_sync // context.num_input_pipelines
    steps = train_config.eval_steps * local
    if context.num_replicas_in_sync > 1:
        # A distributed iterator reads one step ahead: with no margin it
        # raised StopIteration under MirroredStrategy.
        steps += local
    return ds.take(steps).map(objective.split_features).with_options(untuned_options())


def untuned_options():
    """tf.data options without autotuning, for the pipelines ``fit`` reads.

    Keras drops the previous validation's iterator before each validation,
    and the training iterator when ``fit`` returns (once per sequence-length
    phase). Dropping an autotuned iterator waited for a background thread of
    the autotuner: 14 to 18 s in three of five validations of the small-corpus run
    (py-spy: in ~LogicalThreadWrapper under ~RootDataset::Iterator), a fifth
    of its training time, and 37 and 73 s outside the epochs in two of four
    1,600-step runs. Untuned, the parallel stages keep their starting
    parallelism (min(16, the host's threads)) and prefetching still sizes
    its buffer; on this project's 2-core CPU the training pipeline made a
    batch in 2.6 ms instead of 3.0 (sequence 64) and 4.9 instead of 5.7
    (128), against a training step of 240 and 530 ms.

    Example:
    >>> untuned_options().autotune.enabled
    False
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


def short_seq_manifest(data_dir, manifest, short):
    """Checks the short-sequence data against the main data; its manifest."""
    short_manifest = verify_shards(short, "train")
    a = os.path.join(short, short_manifest["tokenizer"])
    b = os.path.join(data_dir, manifest["tokenizer"])
    if not filecmp.cmp(a, b, shallow=False):
        raise ValueError(f"{a}: not the tokenizer of {b}; make both data folders with one")
    short_len = short_manifest["config"]["max_seq_length"]
    if short_len >= manifest["config"]["max_seq_length"]:
        raise ValueError(
            f"{short}: sequences of {short_len} are not shorter than the "
            f"{manifest['config']['max_seq_length']} of {data_dir}"
        )
    return short_manifest
