"""Every knob of a distillation run, saved as ``train_config.json``.

A module of its own, free of TensorFlow, so that the command line can build
its flags (and answer ``--help``) without importing it.
"""

import dataclasses

from albert_keras.options import option


@dataclasses.dataclass
class DistillConfig:
    """Every knob of a distillation run (saved as ``train_config.json``).

    Args:
        student: the student's architecture preset; ``student_overrides``
            changes its fields (JSON on the command line). The vocabulary
            is the teacher's, so the student reads the same features.
        student_init: a pretrained model folder to start the student from
            instead (its tokenizer must be the teacher's).
        temperature: T of the soft targets; the soft loss is
            ``T^2 KL(softmax(teacher / T) || softmax(student / T))`` (mean
            squared error for regression).
        alpha: the soft loss's weight; the hard labels' loss gets
            ``1 - alpha`` on labelled rows (unlabelled rows have only the
            soft loss).
        max_unlabeled: most rows taken from ``--unlabeled``.
        epochs, batch_size, learning_rate, warmup_fraction, weight_decay,
            dropout, precision, seed, select_metric, patience: as in
            fine-tuning; ``epochs`` and ``learning_rate`` left None follow
            the student's width as fine-tuning's do.

    Example:
    >>> DistillConfig(student="albert_tiny", temperature=2.0)  # doctest: +SKIP
    """

    student: str = option("albert_tiny", "the student's architecture preset")
    student_overrides: dict = option(None, 'the student\'s AlbertConfig fields as JSON, e.g. '
                                           '\'{"num_hidden_layers": 2}\'')
    student_init: str = option(None, "start the student from this pretrained model folder "
                                     "(same tokenizer as the teacher) instead of random weights")
    temperature: float = option(2.0, "softmax temperature of the soft targets")
    alpha: float = option(0.5, "weight of the soft-target loss; the labels get 1 - alpha")
    max_unlabeled: int = option(20000, "most rows taken from --unlabeled")
    epochs: int = option(None, "passes over the training rows",
                         auto="by student width: 10 below hidden size 512, else 3")
    batch_size: int = option(32, "examples per step")
    learning_rate: float = option(None, "peak AdamW learning rate",
                                  auto="by student width: 3e-4 below hidden size 512, else 3e-5")
    warmup_fraction: float = option(0.1, "share of the steps with linear warmup")
    weight_decay: float = option(0.01, "decoupled weight decay (not on LayerNorm/bias)")
    dropout: float = option(0.1, "dropout on the head's input")
    precision: str = option("float32", "Keras dtype policy",
                            choices=("float32", "mixed_bfloat16", "mixed_float16"))
    select_metric: str = option(None, "with --eval: keep the best epoch by this metric "
                                      "(default: the task's main one)")
    patience: int = option(0, "with --eval: stop after this many epochs without a better "
                              "score (0: train every epoch)")
    seed: int = option(0, "weights and shuffling")

    def validate(self):
        if self.temperature <= 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")
        for name in ("epochs", "batch_size", "max_unlabeled"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError("warmup_fraction must be in [0, 1)")
        if self.patience < 0:
            raise ValueError(f"patience must be 0 or more, got {self.patience}")
