"""Every knob of a distillation run, saved as ``train_config.json``.

A module of its own, free of TensorFlow, so that the command line can build
its flags (and answer ``--help``) without importing it.
"""

import dataclasses

from albert_keras.options import check_options
from albert_keras.options import option
from albert_keras.tasks.training_fields import TrainingFields
from albert_keras.training.adversarial_config import AdversarialFields


@dataclasses.dataclass
class DistillConfig(TrainingFields, AdversarialFields):
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
        layer_epochs: epochs of intermediate-layer transfer before the
            soft targets (TinyBERT's two task-specific stages): the
            student's hidden states and attention maps learn the
            teacher's on the same rows. 0 turns it off.
        layer_map: ``STUDENT:TEACHER`` layer pairs for that stage, e.g.
            ``0:0,1:6,2:12`` (0: the embedding output); None for the
            uniform map (student layer m from teacher layer m * N / M).
        hidden_weight, attention_weight: the weights of the hidden-state
            (mean squared error) and attention (KL) losses of that stage.
        epochs, batch_size, learning_rate, warmup_fraction, weight_decay,
            layer_decay, dropout, precision, seed, validation_split,
            select_metric, patience: as in
            fine-tuning; ``epochs`` and ``learning_rate`` left None follow
            the student's width as fine-tuning's do. ``layer_decay`` applies
            to the soft-target stage; the layer-transfer stage, whose point
            is to move the student's lower layers, runs every layer at the
            full rate.

        (``AdversarialFields``'s): SiFT or R3F for the student, as in
            fine-tuning.

    Example:
    >>> DistillConfig(student="albert_tiny", temperature=2.0)  # doctest: +SKIP
    """

    student: str = option("albert_tiny", "the student's architecture preset")
    student_overrides: dict = option(None, 'fields of the student preset family\'s config (AlbertConfig, '
                                           'MobileBertConfig) as JSON, e.g. '
                                           '\'{"num_hidden_layers": 2}\'')
    student_init: str = option(None, "start the student from this pretrained model folder "
                                     "(same tokenizer as the teacher) instead of random weights")
    temperature: float = option(2.0, "softmax temperature of the soft targets", valid="(0, inf)")
    alpha: float = option(0.5, "weight of the soft-target loss; the labels get 1 - alpha", valid="[0, 1]")
    max_unlabeled: int = option(20000, "most rows taken from --unlabeled", valid="[1, inf)")
    layer_epochs: int = option(0, "epochs of hidden-state and attention transfer before the "
                                  "soft targets (TinyBERT's first stage; 0: off)", valid="[0, inf)")
    layer_map: str = option(None, "STUDENT:TEACHER layer pairs for --layer-epochs, e.g. "
                                "0:0,1:6,2:12 (0: embeddings)",
                            auto="uniform: student layer m from teacher layer m*N/M, "
                                 "embeddings from embeddings")
    hidden_weight: float = option(1.0, "weight of the hidden-state loss (mean squared error)", valid="[0, inf)")
    attention_weight: float = option(1.0, "weight of the attention-map loss (KL)", valid="[0, inf)")

    def validate(self):
        check_options(self)
        self.check_adversarial()
        if self.layer_map:  # its form now; the depths are checked against the models
            from albert_keras.models.distillers.layer_map import parse_layer_map

            parse_layer_map(self.layer_map, 10**6, 10**6)
