"""Every knob of a fine-tuning run, saved as ``train_config.json``.

A module of its own, free of TensorFlow, so that the command line can build
its flags (and answer ``--help``) without importing it.
"""

import dataclasses

from albert_keras.heads.poolings import CLASSIFIER_POOLINGS
from albert_keras.options import check_options
from albert_keras.options import config_from_keywords
from albert_keras.options import option
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task_fields import TaskFields
from albert_keras.tasks.training_fields import TrainingFields
from albert_keras.text.truncation import SINGLE_TEXT_TRUNCATIONS
from albert_keras.training.adversarial_config import AdversarialFields
from albert_keras.training.pretrain_config import STRATEGIES

# Defaults by model width, for --epochs and --learning-rate left unset.
# Narrow models (the small-corpus recipe's is 256 wide) fine-tune better for
# longer at a higher rate, with the best epoch kept
# (docs/reports/pretraining-worth-it.md).
# Base-sized and larger published checkpoints take the ALBERT and BERT
# papers' fine-tuning range (1e-5 to 5e-5, 2 to 4 epochs); not measured
# here, as no such checkpoint is on this machine.
NARROW_WIDTH = 512
SIZE_DEFAULTS = {"narrow": {"epochs": 10, "learning_rate": 3e-4},
                 "wide": {"epochs": 3, "learning_rate": 3e-5}}


def size_defaults(hidden_size):
    """``{"epochs", "learning_rate"}`` for a model of this width."""
    return dict(SIZE_DEFAULTS["narrow" if hidden_size < NARROW_WIDTH else "wide"])


@dataclasses.dataclass
class FinetuneConfig(TrainingFields, AdversarialFields, TaskFields):
    """Every knob of a fine-tuning run (saved as ``train_config.json``).

    The task's own fields (``task``, ``sequence_length``, ``truncate``, the
    columns, QA's settings) come from ``TaskFields``.

    Args:
        epochs, batch_size, learning_rate: AdamW with linear warmup over
            ``warmup_fraction`` of the steps, then linear decay to 0.
            ``epochs`` and ``learning_rate`` left None are chosen by the
            model's width (``size_defaults``) when the encoder is loaded.
        layer_decay: layer-wise learning-rate decay (ELECTRA's fine-tuning,
            0.8 for its base model): the head and pooler at the full rate,
            the top layer at ``layer_decay`` times it, each layer below at
            that factor of the one above, the embeddings lowest
            (``layer_rate_scales``); 1 is off.
        dropout: on the head's input.
        pooling: ``classify``: what the head reads: ``pooled`` (the tanh
            pooler over ``[CLS]``, as the original), ``mean`` (the last
            layer's mean over real tokens), ``both`` (the two concatenated)
            or ``auto``: ``mean`` for a
            folder pretrained here without a sentence task (``mlm``, or
            ``rtd`` without SOP), whose ``[CLS]`` row and pooler learned
            nothing of their own; else ``pooled`` (``resolve_pooling``).
        encoder_dropout: hidden and attention dropout inside the encoder
            while fine-tuning (None: the model's own, 0 for ALBERT v2 and our
            presets; BERT used 0.1).
        precision, strategy, seed: as in pretraining.
        validation_split: hold out this share of the training file's
            examples (a seeded, stratified draw; whole examples) and choose
            the best epoch on them, for a run with no separate validation
            file; the eval file is then scored once.
        select_metric, patience: with an eval file, score every epoch, keep
            the best epoch's weights by ``select_metric`` (the task's main
            metric by default) and stop after ``patience`` epochs without a
            better one.
        ema: above 0, keep an exponential moving average of the weights
            with this momentum (Polyak averaging, Keras' ``use_ema``), score
            it instead of the raw weights after every epoch and keep it as
            the model. With a few hundred steps, as with 1,000 training rows,
            0.99 averages over about the last three epochs' steps. 0 is off.
        from_scratch: same architecture as ``--init``, untrained weights
            (the baseline that shows what pretraining is worth).
        (``AdversarialFields``'s): adversarial fine-tuning (SiFT, R3F).
    """

    pooling: str = option("auto", "classify: what the head reads: pooled (the [CLS] "
                                  "pooler, as ALBERT), mean (the mean over tokens), both "
                                  "(the two concatenated) or auto "
                                  "(mean for a model pretrained here without a sentence "
                                  "task: mlm, or rtd without SOP; else pooled)",
                          choices=("auto", *CLASSIFIER_POOLINGS))
    encoder_dropout: float = option(None, "hidden and attention dropout inside the encoder "
                                          "(default: the model's own; 0 for ALBERT v2)", valid="[0, 1)")
    strategy: str = option("auto", "how training spreads over devices", choices=STRATEGIES)
    ema: float = option(0.0, "keep a moving average of the weights with this momentum "
                             "(e.g. 0.99), score and keep it instead of the last "
                             "weights; 0 turns it off", valid="[0, 1)")
    from_scratch: bool = option(False, "same architecture as --init, untrained weights "
                                       "(a baseline)")

    def validate(self):
        check_options(self)
        self.check_adversarial()
        self.check_task_fields()
        if self.truncate in SINGLE_TEXT_TRUNCATIONS and self.text_pair_column:
            raise ValueError(f"truncate={self.truncate!r} is for single texts; with "
                             "--text-pair-column use longest_first or waterfall")
        if self.pooling not in ("auto", "pooled") and "pooling" not in get_task(
                self.task).head_fields:
            raise ValueError(f"pooling {self.pooling!r} is for sentence heads; {self.task} "
                             "has its own head")


def finetune_settings(task_name, options, where):
    """A checked ``FinetuneConfig`` of ``task_name`` from keyword ``options``."""
    options = {k: v for k, v in options.items() if k != "task"}
    return config_from_keywords(FinetuneConfig, {**options, "task": task_name}, where)


def fit_length(settings, longest, source):
    """``settings`` with a sequence length a model of ``longest`` positions
    (its ``max_position_embeddings``) reads: the default (128) shortened to
    it; a length asked for that is longer is an error naming ``source``."""
    if settings.sequence_length <= longest:
        return settings
    default = FinetuneConfig().sequence_length
    if settings.sequence_length != default:
        raise ValueError(f"sequence_length {settings.sequence_length} exceeds {source}'s "
                         f"max_position_embeddings {longest}")
    return dataclasses.replace(settings, sequence_length=longest)


def kept_settings(settings, model):
    """The settings of a fine-tuned task model: its ``task.json``'s values
    and its head's own choices over ``settings``, as a dict."""
    kept = dataclasses.asdict(settings)
    kept.update({k: v for k, v in (model.task_spec or {}).items() if k in kept and k != "task"})
    kept.update({k: getattr(model, k) for k in ("pooling", "dropout") if hasattr(model, k)})
    return kept
