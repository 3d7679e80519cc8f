"""The training loop's knobs that fine-tuning and distillation share,
declared once.

``FinetuneConfig`` and ``DistillConfig`` both take these fields from
``TrainingFields``, so each default, flag and help is written here only.
Free of Keras, so the command line builds its flags without it.
"""

import dataclasses

from albert_keras.options import option
from albert_keras.precision import PRECISION_CHOICES


@dataclasses.dataclass
class TrainingFields:
    """How a fine-tuning or distillation run trains.

    Args:
        epochs, learning_rate: None follows the model's width (the
            student's when distilling): ``finetune_config.size_defaults``.
        batch_size: examples per step.
        warmup_fraction, weight_decay: AdamW's linear warmup share and
            decoupled weight decay (not on LayerNorm or biases).
        layer_decay: layer-wise learning-rate decay (1 turns it off).
        dropout: dropout on the head's input.
        precision: the Keras dtype policy, or ``auto``
            (``albert_keras.precision.resolve_precision``).
        validation_split: hold out this share of the training rows'
            examples and choose the best epoch on them.
        select_metric, patience: keep the best epoch by this metric (the
            task's main one by default); stop after ``patience`` epochs
            without a better one (0: train every epoch).
        seed: weights and shuffling.
        length_buckets: batch rows by their length (the same outputs, less
            padding computed).
    """

    epochs: int = option(None, "passes over the training rows",
                         auto="by model width (the student's when distilling): 10 below hidden size 512, else 3", valid="[1, inf)")
    batch_size: int = option(32, "examples per step", valid="[1, inf)")
    learning_rate: float = option(None, "peak AdamW learning rate",
                                  auto="by model width (the student's when distilling): 3e-4 below hidden size 512, else 3e-5", valid="[0, inf)")
    warmup_fraction: float = option(0.1, "share of the steps with linear warmup", valid="[0, 1)")
    weight_decay: float = option(0.01, "decoupled weight decay (not on LayerNorm/bias)", valid="[0, inf)")
    layer_decay: float = option(1.0, "layer-wise learning-rate decay (ELECTRA): the head at "
                                     "the full rate, each layer below at this factor of the "
                                     "one above, the embeddings lowest; 1 turns it off", valid="(0, 1]")
    dropout: float = option(0.1, "dropout on the head's input", valid="[0, 1)")
    precision: str = option("auto", "Keras dtype policy (auto: mixed_bfloat16 where the "
                                    "CPU multiplies bf16 natively (AMX, AVX512-BF16) on "
                                    "TensorFlow or torch, on recent GPUs and TPUs; else "
                                    "float32); float32 keeps float32 numbers. Prediction "
                                    "runs a few short rows in float32 either way",
                            choices=PRECISION_CHOICES)
    validation_split: float = option(None, "hold out this share of the training rows' "
                                           "examples (stratified by label, drawn by --seed) "
                                           "and choose the best epoch on it", valid="(0, 1)")
    select_metric: str = option(None, "with --eval: score every epoch and keep the best by "
                                      "this metric (default: the task's main one: accuracy, "
                                      "entity_f1, f1 or pearson)")
    patience: int = option(0, "with --eval: stop after this many epochs without a better "
                              "score (0: train every epoch)", valid="[0, inf)")
    seed: int = option(0, "weights and shuffling")
    length_buckets: bool = option(True, "batch rows by their length, cut to a few fixed "
                                        "lengths up to --seq-length (16, 32, 48, 64, 96, "
                                        "128, ...), not all padded to it; the same "
                                        "outputs, less padding computed")
