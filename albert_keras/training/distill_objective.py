"""``distill``: MobileBERT's progressive knowledge transfer as a pretraining objective.

``albert-keras pretrain --objective distill --teacher FOLDER --preset
mobilebert`` trains the ``--preset`` student from a pretrained teacher in
stages (google-research ``mobilebert/run_pretraining.py``): one stage per
student layer, ``--layer-stage-steps`` each, where layer ``k`` learns the
teacher's mapped layer (feature maps, their mean and variance, attention)
with the layers below it at ``--distill-lower-rate``; then the steps left
of ``--steps`` train the masked LM on the teacher's soft targets mixed with
the labels. Each stage has its own optimizer and learning-rate schedule
(warmup the run's share of its steps), as the original runs one training
job per stage. The driver treats the stages as phases: a run resumes from
its newest checkpoint within a stage or at a boundary, and the folder it
writes holds the student alone.
"""

import logging

from albert_keras.models.distillers.progressive_distiller import ProgressiveDistiller
from albert_keras.models.distillers.progressive_distiller import stage_rate_scales
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.training.mlm_sop import Mlm
from albert_keras.training.mlm_sop import split_features
from albert_keras.training.pretrain_config import parse_teacher_layers

logger = logging.getLogger(__name__)


class ProgressiveTransfer(Mlm):
    """Progressive knowledge transfer into the run's encoder (the student)."""

    name = "distill"

    def split_features(self, features):
        # the distiller reads the padding mask and the masked labels from x
        x, y = split_features(features)
        return {**x, "masked_ids": y["masked_ids"], "masked_weights": y["masked_weights"]}

    def monitor_for(self, has_eval):
        return None  # a loss whose scale changes with the stage: no "best" checkpoint

    def build_model(self, encoder, optimizer, steps_per_execution):
        """Stage 0's distiller; ``optimizer`` (the run's single schedule) is
        replaced by the stage's own."""
        cfg = self.train_config
        teacher = load_teacher(cfg.teacher, encoder.config.vocab_size)
        if not cfg.init:
            copy_embeddings(teacher.encoder, encoder)
        student = EncoderPretrainer(encoder, sop_dropout=0.0, sentence_order=False)
        layer_map = _layer_map(cfg.distill_layer_map, teacher.encoder, encoder)
        model = ProgressiveDistiller(teacher, student, stage=0, layer_map=layer_map,
                                     ratio=cfg.distill_ratio)
        self._compile(model, steps_per_execution)
        return model

    def continue_from(self, source, model):
        super().continue_from(source, model.student)

    def stages(self, model):
        """``[(stage, steps)]`` of the whole run, checked against ``--steps``."""
        cfg = self.train_config
        layers = len(model.layer_map)
        last = cfg.total_steps - layers * cfg.layer_stage_steps
        if last < cfg.steps_per_epoch or last % cfg.steps_per_epoch:
            raise ValueError(
                f"--steps {cfg.total_steps}: the {layers} layer stages take "
                f"{layers} x {cfg.layer_stage_steps} steps, which leaves {last} for the masked "
                f"LM; give --steps {layers * cfg.layer_stage_steps} plus a positive multiple "
                f"of --steps-per-epoch ({cfg.steps_per_epoch})")
        return [*((k, cfg.layer_stage_steps) for k in range(layers)), (layers, last)]

    def model_for_stage(self, model, stage, steps_before, steps_per_execution):
        """``model`` at ``stage``: itself, or the next stage with a new optimizer."""
        if model.stage == stage:
            return model
        model = model.with_stage(stage, steps_before)
        self._compile(model, steps_per_execution)
        return model

    def _compile(self, model, steps_per_execution):
        cfg = self.train_config
        steps = dict(self.stages(model))[model.stage]
        lower = stage_rate_scales(model.student.encoder, model.stage, cfg.distill_lower_rate)
        optimizer = make_optimizer(
            cfg.optimizer, learning_rate=cfg.learning_rate, total_steps=steps,
            warmup_steps=round(steps * cfg.warmup_steps / cfg.total_steps),
            weight_decay=cfg.weight_decay, clip_norm=cfg.clip_norm, lr_scales=lower)
        model.compile(optimizer=optimizer, steps_per_execution=steps_per_execution)

    def saved_model(self, model):
        return model.student

    def evaluate(self, model, data_dir, split="eval", batch_size=64):
        """The student's held-out masked LM, and the teacher's beside it."""
        metrics = super().evaluate(model.student, data_dir, split, batch_size)
        teacher = super().evaluate(model.teacher, data_dir, split, batch_size)
        metrics["teacher_masked_lm_accuracy"] = teacher["masked_lm_accuracy"]
        metrics["stage"] = model.stage
        return metrics

    def summary(self, metrics):
        return (super().summary(metrics)
                + f"; the teacher's {metrics['teacher_masked_lm_accuracy']:.4f}")


def _layer_map(text, teacher, student):
    """``--distill-layer-map`` checked against both models (None: spread evenly)."""
    if not text:
        return None
    layers = parse_teacher_layers(text)
    students, teachers = student.num_hidden_states - 1, teacher.num_hidden_states - 1
    if len(layers) != students:
        raise ValueError(f"--distill-layer-map {text!r} names {len(layers)} teacher layers for "
                         f"the {students} of the student")
    if max(layers) > teachers:
        raise ValueError(f"--distill-layer-map {text!r}: the teacher has {teachers} layers")
    return layers


def load_teacher(path, vocab_size):
    """The teacher's pretrainer (an encoder and its masked-LM head)."""
    from albert_keras.training.pretrainer import init_source

    model, _ = init_source(path, vocab_size)
    if not isinstance(model, EncoderPretrainer):
        raise ValueError(f"--teacher {path}: {type(model).__name__} has no masked-LM head to "
                         "distil from (give a pretraining folder, or an HF ...ForMaskedLM or "
                         "...ForPreTraining folder)")
    return model


def copy_embeddings(teacher_encoder, student_encoder):
    """The teacher's embedding weights into the student's, when the two
    embedding layers have the same form (MobileBERT: the student starts
    from the teacher's embeddings); returns whether they were copied."""
    if student_encoder.load_embedding_state(teacher_encoder.embedding_state()):
        return True
    logger.info("the teacher's embeddings differ in form from the student's: the "
                "student's start from random weights")
    return False
