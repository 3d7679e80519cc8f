"""LAMB as the original ALBERT applies it, and AdamW for fine-tuning."""

import dataclasses

import keras
from keras import ops

from albert_keras.optimizers.fused_adam import adam_scalars
from albert_keras.optimizers.fused_adam import fused_adam
from albert_keras.optimizers.fused_adam import fused_adam_applies
from albert_keras.optimizers.schedule import WarmupPolynomialDecay
from albert_keras.replicas import tf_replica_context

# Variables the original excludes from weight decay: LayerNorm and biases.
NO_DECAY_NAMES = ("gamma", "beta", "bias")


class _ClipAfterAllReduce:
    """Clips the summed gradient, not each replica's share, under tf.distribute.

    Keras 3.15's TensorFlow optimizer clips first (``global_clipnorm`` on a
    replica's partial gradient) and sums over the replicas afterwards, so a
    run on 2 replicas or workers (or a TPU's 8 cores) took different steps
    from one device with the same global batch. Here the gradients are summed
    before clipping and the later sum is skipped; on one replica and on JAX
    and torch nothing changes.
    """

    def _clip_gradients(self, grads):
        replica = tf_replica_context()
        if replica is not None and self._clips():
            present = [g for g in grads if g is not None]
            summed = iter(replica.all_reduce("sum", present) if present else [])
            grads = [None if g is None else next(summed) for g in grads]
        return super()._clip_gradients(grads)

    def _all_reduce_sum_gradients(self, grads_and_vars):
        if tf_replica_context() is not None and self._clips():
            return list(grads_and_vars)  # summed in _clip_gradients already
        return super()._all_reduce_sum_gradients(grads_and_vars)

    def _clips(self):
        return bool(self.global_clipnorm or self.clipnorm or self.clipvalue)


class _OncePerStep:
    """The scalars every variable's update reads, built once per ``apply``.

    Keras' optimizers compute the step's scalars (the learning rate from its
    schedule, the step count, Adam's bias corrections) inside each
    variable's update, so a traced training step held them once per
    variable: for a BERT of MiniLM-L6's shape (105 variables, 43 of them
    decayed) about 2,500 of the step's 8,700 ops, each traced, optimized
    and run on every step. ``_once(key, compute)`` gives the value computed
    first in this ``apply`` (outside one, it computes afresh).
    """

    def apply(self, grads, trainable_variables=None):
        # set past Keras' attribute tracker: a plain dict of this step's tensors
        object.__setattr__(self, "_per_step", {})
        try:
            return super().apply(grads, trainable_variables)
        finally:
            object.__setattr__(self, "_per_step", None)

    def _once(self, key, compute):
        cache = self.__dict__.get("_per_step")
        if cache is None:
            return compute()
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def _step_count(self, dtype):
        """The step being taken, from 1, in ``dtype``."""
        return self._once(("step", dtype), lambda: ops.cast(self.iterations + 1, dtype))

    def _corrections(self, dtype):
        """Adam's bias corrections ``(1 - beta_1**t, 1 - beta_2**t)`` of this step."""
        return self._once(("corrections", dtype), lambda: tuple(
            1 - ops.power(ops.cast(beta, dtype), self._step_count(dtype))
            for beta in (self.beta_1, self.beta_2)))


class _SavedDecayExclusions(_OncePerStep, _ClipAfterAllReduce):
    """Keeps ``exclude_from_weight_decay`` names in the optimizer's config.

    Keras does not serialize the exclusions, so a model loaded from a
    ``.keras`` checkpoint would decay its LayerNorms after a resume.
    """

    def __init__(self, no_decay_names=NO_DECAY_NAMES, **kwargs):
        super().__init__(**kwargs)
        self.no_decay_names = list(no_decay_names or [])
        if self.no_decay_names:
            self.exclude_from_weight_decay(var_names=self.no_decay_names)

    def get_config(self):
        config = super().get_config()
        config["no_decay_names"] = self.no_decay_names
        return config


class _RateScales:
    """Per-variable learning-rate factors (``lr_scales``), saved with the optimizer.

    ``{variable path: factor}``: these variables step (and decay) at the
    learning rate times their factor, as a torch parameter group with its
    own ``lr`` does: layer-wise decay (``layer_rate_scales``), or
    MobileBERT's slower lower layers in a layer stage.
    """

    def __init__(self, lr_scales=None, **kwargs):
        super().__init__(**kwargs)
        self.lr_scales = {str(k): float(v) for k, v in (lr_scales or {}).items()}

    def get_config(self):
        config = super().get_config()
        config["lr_scales"] = dict(self.lr_scales)
        return config

    def build(self, variables):
        super().build(variables)
        # The steps see the backend's own variables (TensorFlow's carry no
        # Keras path), so the factors are looked up by the key Keras' own
        # slot lookup uses.
        self._scale_by_key = {self._var_key(v): self.lr_scales[v.path]
                              for v in variables if v.path in self.lr_scales}

    def _scaled(self, learning_rate, variable):
        """The rate for ``variable``: times its ``lr_scales`` factor, if any."""
        lr = ops.cast(learning_rate, variable.dtype)
        scale = self._scale_by_key.get(self._var_key(variable)) if self.lr_scales else None
        return lr if scale is None else ops.multiply(lr, scale)


def _dense(gradient):
    """A gathered table's gradient as one dense tensor, duplicates summed.

    TensorFlow gives an embedding lookup's gradient as ``IndexedSlices``,
    one slice per looked-up id, so an id read n times in a batch (the
    segment row of every token, a frequent word) comes as n slices. Keras'
    ops square such a gradient slice by slice, so the second moment gets
    ``sum(g**2)`` where Adam needs ``(sum g)**2``: that row's step grows up to
    ``sqrt(n)`` times (measured with Keras 3.15: 0.25 instead of 0.008 after
    8 steps at 1e-3 for a row read 1,000 times a batch). Summing first gives
    the step torch's Adam takes on its dense embedding gradient. With
    ``global_clipnorm`` (our recipes' default) Keras' clipping product has
    already made the gradient dense; this covers runs without it.
    """
    if hasattr(gradient, "indices") and hasattr(gradient, "dense_shape"):
        import tensorflow as tf

        return tf.convert_to_tensor(gradient)
    return gradient


@keras.saving.register_keras_serializable(package="albert_keras")
class LayerwiseLamb(_RateScales, _SavedDecayExclusions, keras.optimizers.Lamb):
    """LAMB as google-research/albert's ``lamb_optimizer.py`` computes it.

    Two differences from ``keras.optimizers.Lamb``, both the original's:

    * weight decay is added to the Adam update *before* the trust ratio
      ``||w|| / ||update||`` is taken (Keras decays ``w`` outside it);
    * the variables excluded from weight decay (LayerNorm and biases) are
      also excluded from the trust ratio: they take the plain update times
      the learning rate. With the ratio, a bias that starts at zero can only
      grow by a factor ``1 + lr`` per step, so the biases and LayerNorm
      offsets stay near zero for the first thousand steps.

    The original also leaves out Adam's bias correction. Over its 125,000
    steps at 1.76e-3 that does not matter, but early on ``m / sqrt(v)`` is
    several times the corrected step (for a steady gradient 3.2x at step 1,
    6.5x near step 12, 5x at step 40, 3.2x at step 100, 1.35x at step 800),
    and the excluded variables take that step
    unscaled: the small-corpus run (800 steps at 8e-3) collapsed to predicting the
    most frequent token with SOP at chance. So the correction is on by
    default here (as in the LAMB paper's algorithm); ``bias_correction=False``
    gives the original's steps exactly.

    Moments, clipping and serialization are Keras'.

    Args:
        no_decay_names: variables whose name contains one of these get no
            weight decay and no trust ratio (saved with the optimizer, so a
            resumed run keeps them); default LayerNorm ``gamma``/``beta``
            and every ``bias``.
        bias_correction: divide the moments by ``1 - beta**t`` (default);
            False for the original code's uncorrected moments.
        lr_scales: ``{variable path: factor}`` of the learning rate.
        **kwargs: ``keras.optimizers.Lamb`` arguments.

    Example:
    >>> opt = LayerwiseLamb(learning_rate=1e-3, weight_decay=0.01)
    """

    def __init__(self, bias_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.bias_correction = bool(bias_correction)

    def get_config(self):
        config = super().get_config()
        config["bias_correction"] = self.bias_correction
        return config

    def _apply_weight_decay(self, variables):
        # Decay happens inside update_step.
        return

    def update_step(self, gradient, variable, learning_rate):
        lr = self._scaled(learning_rate, variable)
        gradient = ops.cast(_dense(gradient), variable.dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(
            v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2)
        )
        if self.bias_correction:
            m_scale, v_scale = self._corrections(variable.dtype)
            m, v = ops.divide(m, m_scale), ops.divide(v, v_scale)
        update = ops.divide(m, ops.add(ops.sqrt(v), self.epsilon))
        # The original takes one name list for both exclusions
        # (exclude_from_layer_adaptation defaults to exclude_from_weight_decay).
        adapted = self._use_weight_decay(variable)
        if not adapted:
            self.assign_sub(variable, lr * update)
            return
        if self.weight_decay is not None:
            wd = ops.cast(self.weight_decay, variable.dtype)
            update = ops.add(update, ops.multiply(wd, variable))
        w_norm = ops.sqrt(ops.sum(ops.square(variable)))
        u_norm = ops.sqrt(ops.sum(ops.square(update)))
        ratio = ops.where(
            ops.greater(w_norm, 0),
            ops.where(ops.greater(u_norm, 0), w_norm / u_norm, 1.0),
            1.0,
        )
        self.assign_sub(variable, ratio * lr * update)



@keras.saving.register_keras_serializable(package="albert_keras")
class LayerwiseAdamW(_RateScales, _SavedDecayExclusions, keras.optimizers.AdamW):
    """``keras.optimizers.AdamW`` whose weight-decay exclusions are saved.

    Args:
        no_decay_names: as ``LayerwiseLamb``.
        lr_scales: ``{variable path: factor}``: these variables step (and
            decay) at the learning rate times their factor, as a torch
            parameter group with its own ``lr`` does; layer-wise decay
            (``layer_rate_scales``). Saved with the optimizer.
        **kwargs: ``keras.optimizers.AdamW`` arguments.

    The step adds ``epsilon`` after the bias correction,
    ``m_hat / (sqrt(v_hat) + epsilon)``, as torch's AdamW (and so HF's
    Trainer) does. Keras' Adam adds it before, to ``sqrt(v)``, which makes
    the effective epsilon ``1 / sqrt(1 - beta_2**t)`` times larger: 32x at
    step 1, 10x at step 10, 4x at step 75. A fine-tuning run is often under
    a hundred steps and a small model's gradients are of the order of
    epsilon, so the Keras form damped most updates: a tagger fine-tuned at
    1e-4 reached entity F1 0.08 against HF Trainer's 0.33 on the same
    weights and batches.

    Example:
    >>> opt = LayerwiseAdamW(learning_rate=2e-5, weight_decay=0.01)
    """

    def _apply_weight_decay(self, variables):
        # Keras' decoupled decay, each variable at its own (scaled) rate.
        if self.weight_decay is None:
            return
        rate = self.learning_rate  # the schedule, once (Keras' own runs it per variable)
        for variable in variables:
            if self._use_weight_decay(variable):
                lr = self._scaled(rate, variable)
                wd = ops.cast(self.weight_decay, variable.dtype)
                # one scalar factor: a single pass over the weights (torch's
                # ``param.mul_(1 - lr * weight_decay)``)
                variable.assign(ops.multiply(variable, 1 - wd * lr))

    def update_step(self, gradient, variable, learning_rate):
        gradient = _dense(gradient)
        if self.amsgrad:
            return super().update_step(gradient, variable, self._scaled(learning_rate, variable))
        dtype = variable.dtype
        lr = self._scaled(learning_rate, variable)
        gradient = ops.cast(gradient, dtype)
        m = self._momentums[self._get_variable_index(variable)]
        v = self._velocities[self._get_variable_index(variable)]
        if fused_adam_applies(variable, m, v):
            fused_adam(variable, m, v, gradient, lr, self._once(("fused", dtype), lambda: (
                adam_scalars(self.beta_1, self.beta_2, self.epsilon, self._step_count(dtype),
                             dtype))))
            return
        self.assign_add(m, ops.multiply(ops.subtract(gradient, m), 1 - self.beta_1))
        self.assign_add(v, ops.multiply(ops.subtract(ops.square(gradient), v), 1 - self.beta_2))
        m_scale, v_scale = self._corrections(dtype)
        m_hat, v_hat = ops.divide(m, m_scale), ops.divide(v, v_scale)
        self.assign_sub(variable, ops.divide(ops.multiply(m_hat, lr),
                                             ops.add(ops.sqrt(v_hat), self.epsilon)))



@dataclasses.dataclass(frozen=True)
class OptimizerSettings:
    """The original recipe's optimizer settings.

    Args:
        learning_rate: peak rate after warmup (ALBERT: 0.00176 at batch 4096).
        total_steps: steps of the schedule (linear decay to 0 at the end).
        warmup_steps: steps of linear warmup.
        weight_decay: 0.01 in the original.
        clip_norm: global gradient-norm clipping.
        beta_1: Adam's first-moment decay.
        beta_2: Adam's second-moment decay.
        epsilon: Adam's epsilon.
        lr_scales: per-variable rate factors (``layer_rate_scales``).
        ema_momentum: above 0, the optimizer also keeps an exponential
            moving average of the trainable weights with this momentum
            (Keras' ``use_ema``; ``keras.callbacks.SwapEMAWeights`` puts it
            in the model to score it, and ``fit`` leaves it there at the
            end). 0 keeps none.
    """

    learning_rate: float = 1.76e-3
    total_steps: int = 125000
    warmup_steps: int = 3125
    weight_decay: float = 0.01
    clip_norm: float = 1.0
    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-6
    lr_scales: dict = None
    ema_momentum: float = 0.0


def make_optimizer(name="lamb", settings=None, **fields):
    """The optimizer and schedule of the original recipe.

    LayerNorm and bias variables are excluded from weight decay.

    Args:
        name: ``lamb`` (pretraining) or ``adamw`` (fine-tuning).
        settings: an ``OptimizerSettings``.
        **fields: ``OptimizerSettings`` fields, as a shorthand for ``settings``.

    Returns:
        A Keras optimizer; its schedule and exclusions serialize with the model.

    Example:
    >>> opt = make_optimizer(total_steps=1000, warmup_steps=100)
    """
    o = dataclasses.replace(settings or OptimizerSettings(), **fields)
    learning_rate, total_steps, warmup_steps = o.learning_rate, o.total_steps, o.warmup_steps
    beta_1, beta_2, epsilon, weight_decay = o.beta_1, o.beta_2, o.epsilon, o.weight_decay
    clip_norm, lr_scales, ema_momentum = o.clip_norm, o.lr_scales, o.ema_momentum
    schedule = WarmupPolynomialDecay(learning_rate, total_steps, warmup_steps)
    kwargs = dict(
        learning_rate=schedule,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        weight_decay=weight_decay or None,
        global_clipnorm=clip_norm or None,
    )
    if ema_momentum:
        kwargs.update(use_ema=True, ema_momentum=float(ema_momentum))
    if name == "lamb":
        return LayerwiseLamb(**kwargs, lr_scales=lr_scales)
    if name == "adamw":
        return LayerwiseAdamW(**{**kwargs, "weight_decay": float(weight_decay or 0.0)},
                           lr_scales=lr_scales)
    raise ValueError(f"optimizer must be 'lamb' or 'adamw', got {name!r}")


def build_optimizer(model):
    """Creates ``model``'s optimizer variables now, before ``fit`` traces a step.

    Keras 3 on TensorFlow, with no distribution strategy on the model,
    leaves building the optimizer to the first trace of the training step;
    a ``tf.function`` whose first trace creates variables is traced a second
    time, which costs seconds per ``fit`` for a BERT-sized model on a CPU
    (a fifth of a one-epoch fine-tuning run on 1,500 short texts). Built
    here, the step is traced once. Other backends build it before the first
    step already. Call it after the last change to which weights train.

    Args:
        model: a compiled Keras model.

    Example:
    >>> model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    >>> model.compile(optimizer=make_optimizer("adamw", total_steps=10, warmup_steps=1),
    ...               loss="mse")
    >>> build_optimizer(model)
    >>> model.optimizer.built
    True
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or optimizer.built or not _all_built(model):
        return  # Keras builds it on the first step, as it would anyway
    if keras.backend.backend() == "tensorflow":
        with model.distribute_strategy.scope():
            optimizer.build(model.trainable_variables)
    else:
        optimizer.build(model.trainable_variables)


def _all_built(model):
    """Whether every layer of ``model`` has its weights (a subclassed model
    may build some on its first call; its trainable weights are not all
    known before)."""
    # Keras' own check before it builds the optimizer (Trainer._symbolic_build)
    return model.built and all(layer.built for layer in model._flatten_layers())
