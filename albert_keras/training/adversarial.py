"""Adversarial fine-tuning: SiFT (DeBERTa's) and R3F, for any encoder.

Both add to the task loss a term that keeps the model's outputs the same
when its embeddings are nudged, the embeddings being what the backbone's
``embed`` entry returns, so every family and task model gets them:

- **SiFT** (He et al. 2021, microsoft/DeBERTa ``sift/sift.py``): the
  embeddings are normalised (a LayerNorm without scale or offset, epsilon
  1e-7) and perturbed there, by ``delta ~ N(0, noise)`` clamped to
  ``+-2 noise``; one ascent step ``delta += step * g / max|g|`` (per row,
  ``g`` the gradient of the divergence with respect to ``delta``; the step
  is skipped when ``g`` is not finite); the term is the symmetric KL
  between the clean and the perturbed outputs. Two extra forward passes and
  one extra backward pass per step.
- **R3F** (Aghajanyan et al. 2021, fairseq ``examples/rxf``): uniform
  noise in ``+-noise``, no ascent step, the same symmetric KL. One extra
  forward pass.

DeBERTa's hook perturbs the input of the embeddings' own LayerNorm and
lets that LayerNorm's scale and offset act on the perturbation; an entry
every family has is the embedding *output*, so here the perturbation is
added in normalised units and mapped back: ``e + s * delta``, with ``s``
each row's standard deviation (``sqrt(var + 1e-7)``), which is
``s * (LayerNorm(e) + delta) + mean``. The clean path is then exactly the
model's own, and the perturbed path reads ``e`` without its gradient, as
DeBERTa's does. The symmetric KL is DeBERTa's: two cross-entropies, each
against the other side's probabilities held constant.

The ascent step needs the gradient with respect to ``delta`` inside the
training step; that is written for TensorFlow (``tf.GradientTape``), and
``check_backend`` says so on the others.
"""

import keras
from keras import ops

_NORM_EPSILON = 1e-7  # SiFT's LayerNorm


def check_backend(adversarial):
    """A one-line error unless the backend runs ``adversarial``'s step."""
    if adversarial is not None and keras.backend.backend() != "tensorflow":
        raise ValueError(f"adversarial {adversarial.method} fine-tuning runs on the "
                         f"TensorFlow backend (KERAS_BACKEND=tensorflow), not "
                         f"{keras.backend.backend()}")


class Perturbation:
    """What the encoder adds to its embeddings while it is set
    (``Backbone.perturbing``): ``e + s * delta``, ``s`` each row's spread.

    Args:
        delta: the perturbation in normalised units, or None to draw it at
            the first call with ``draw(shape)`` (the embeddings' shape is
            known only then) and hand it to ``watch`` (a gradient tape's).
        draw: ``shape -> delta`` (float32).
        watch: called with a newly drawn ``delta``.
    """

    def __init__(self, delta=None, draw=None, watch=None):
        self.delta, self.draw, self.watch = delta, draw, watch

    def __call__(self, embedded):
        clean = ops.stop_gradient(ops.cast(embedded, "float32"))
        spread = ops.sqrt(ops.var(clean, axis=-1, keepdims=True) + _NORM_EPSILON)
        if self.delta is None:
            self.delta = self.draw(ops.shape(clean))
            if self.watch is not None:
                self.watch(self.delta)
        return ops.cast(clean + spread * self.delta, embedded.dtype)


def symmetric_kl(logits, target):
    """Per row, SiFT's divergence between ``logits`` and ``target``
    ``[N, C]``: DeBERTa's two cross-entropies, ``CE(q, p) + CE(p, q)``, each
    against the other side's probabilities held constant
    (``sift.symmetric_kl``), less those constant sides' entropies, so that
    the value is ``KL(q||p) + KL(p||q)`` (0 for equal outputs) and the
    gradients are DeBERTa's."""
    log_p, log_q = _log_probs(logits), _log_probs(target)
    p, q = ops.stop_gradient(ops.exp(log_p)), ops.stop_gradient(ops.exp(log_q))
    return (ops.sum(q * (ops.stop_gradient(log_q) - log_p), axis=-1)
            + ops.sum(p * (ops.stop_gradient(log_p) - log_q), axis=-1))


def full_symmetric_kl(logits, target):
    """Per row, R3F's ``KL(q||p) + KL(p||q)``, with gradients through every
    side (fairseq's ``_get_symm_kl``)."""
    log_p, log_q = _log_probs(logits), _log_probs(target)
    return (ops.sum(ops.exp(log_q) * (log_q - log_p), axis=-1)
            + ops.sum(ops.exp(log_p) * (log_p - log_q), axis=-1))


KL_OF = {"sift": symmetric_kl, "r3f": full_symmetric_kl}


def _log_probs(logits):
    return ops.log_softmax(ops.cast(logits, "float32"), axis=-1)


def divergence(model, outputs, target, padding_mask, kl=symmetric_kl):  # noqa: PLR0913 (the two outputs, and how to read them)
    """The adversarial term between a task model's perturbed ``outputs``
    and its clean ones (``target``), both dicts, as ``model``'s class
    reads them (its ``divergence``, over ``albert_keras.models.task_models.output_divergence``):
    ``kl`` per row (``symmetric_kl`` or ``full_symmetric_kl``), padded
    positions left out."""
    read = getattr(model, "divergence", None)
    if read is None:
        kind = getattr(model, "export_kind", None)
        raise ValueError(f"adversarial fine-tuning is for task models; {kind or model!s} "
                         "models have no task outputs")
    return read(outputs, target, padding_mask, kl)


def ascent_step(delta, gradient, step):
    """SiFT's step: ``delta + step * g / (1e-6 + max|g|)``, the max per row
    (last axis); ``delta`` unchanged where any of ``g`` is not finite."""
    if gradient is None:  # the outputs do not depend on delta (nothing to climb)
        return ops.stop_gradient(delta)
    gradient = ops.cast(gradient, "float32")
    moved = delta + step * gradient / (1e-6 + ops.max(ops.abs(gradient), axis=-1,
                                                      keepdims=True))
    return ops.stop_gradient(ops.where(ops.all(ops.isfinite(gradient)), moved, delta))


def adversarial_loss(setting, run, clean, divergence_of, seed):
    """The adversarial term (not yet weighted) of one training step.

    Args:
        setting: an ``Adversarial``.
        run: ``Perturbation -> outputs``: the task model's training
            forward pass with the encoder perturbed.
        clean: the step's clean outputs (a dict; gradients flow through it).
        divergence_of: ``(outputs, target) -> scalar`` (``divergence``).
        seed: a ``keras.random.SeedGenerator`` for the noise.

    Returns:
        The symmetric divergence between the clean outputs and those of the
        (for SiFT: once climbed) perturbation.
    """
    noise = setting.noise
    if setting.method == "r3f":
        return divergence_of(run(Perturbation(draw=lambda shape: r3f_noise(shape, noise, seed))),
                             clean)
    import tensorflow as tf  # the ascent's gradient: check_backend holds it to TensorFlow

    target = {k: ops.stop_gradient(v) for k, v in clean.items()}
    batch = ops.cast(ops.shape(next(iter(clean.values())))[0], "float32")
    with tf.GradientTape() as tape:
        first = Perturbation(draw=lambda shape: sift_noise(shape, noise, seed), watch=tape.watch)
        # DeBERTa climbs the sum over the batch's rows: the term times the batch
        climbed = divergence_of(run(first), target) * batch
    delta = ascent_step(first.delta, tape.gradient(climbed, first.delta), setting.step)
    return divergence_of(run(Perturbation(delta=delta)), clean)


def sift_noise(shape, noise, seed):
    """SiFT's initial ``delta``: ``N(0, noise)`` clamped to ``+-2 noise``."""
    return ops.clip(keras.random.normal(shape, stddev=noise, seed=seed), -2 * noise, 2 * noise)


def r3f_noise(shape, noise, seed):
    """R3F's noise: uniform in ``+-noise``."""
    return keras.random.uniform(shape, -noise, noise, seed=seed)


def task_model_term(setting, task_model, x, clean, seed):
    """The adversarial term of one training step of ``task_model`` (a
    package task model: its ``encoder`` and ``divergence``), not yet
    weighted: what fine-tuning and distillation's student add to their loss.

    Args:
        setting: an ``Adversarial``.
        task_model: the model trained.
        x: the step's inputs.
        clean: the step's outputs of ``task_model(x, training=True)``.
        seed: a ``keras.random.SeedGenerator`` made before the step is traced.
    """
    encoder = task_model.encoder

    def run(perturbation):
        with encoder.perturbing(perturbation):
            return task_model(x, training=True)

    def divergence_of(outputs, target):
        return divergence(task_model, outputs, target, x["padding_mask"],
                          KL_OF[setting.method])

    return adversarial_loss(setting, run, clean, divergence_of, seed)


def text_task_term(task, setting, x, clean):
    """``task_model_term`` of one training step of a ``TextTask`` (its task
    model, its settings' seed)."""
    seed = task.__dict__.get("_adversarial_seed")
    if seed is None:  # a step outside fit (a test's own tape)
        seed = untracked_seed(task, task.settings.seed)
    return task_model_term(setting, task.task_model, x, clean, seed)


def untracked_seed(model, seed):
    """A seed generator for the noise, kept on ``model`` outside Keras'
    tracking (so out of its weights and ``.keras`` file); made before the
    training step is traced."""
    generator = keras.random.SeedGenerator(seed)
    model.__dict__["_adversarial_seed"] = generator
    return generator
