"""AdamW's moment and weight update as TensorFlow's one fused kernel.

Written out in Keras ops, an Adam step is about fourteen elementwise passes
over each weight (the moments' updates, their bias corrections, the square
root, the division), each with a temporary the size of the weight, and
about as many traced ops per variable. TensorFlow's ``ResourceApplyAdam``
does it in one pass over the weight and its two moments, in place. For a
BERT of MiniLM-L6's shape with a 30,522-piece vocabulary (22.7M weights, half
of them the word table) that is most of the optimizer's share of a
fine-tuning step on a CPU, where the step is memory-bound, and a shorter
trace of the training step. JAX's compiler fuses the Keras ops by itself,
so this is TensorFlow's path only.
"""

import keras


def _handles(*variables):
    """The resource handles of TensorFlow variables (Keras' wrap one), or
    None where one has none (another backend, a replica-less distributed
    value)."""
    handles = []
    for variable in variables:
        handle = getattr(variable, "handle", None)
        if handle is None:
            return None
        handles.append(handle)
    return handles


def fused_adam(variable, m, v, gradient, hyper):
    """Applies one Adam step to ``variable`` with TensorFlow's fused kernel.

    The step is torch's (and our ``LayerwiseAdamW``'s): ``epsilon`` added
    after the bias correction, ``lr * m_hat / (sqrt(v_hat) + epsilon)``.
    The kernel adds its epsilon to the uncorrected ``sqrt(v)``, so it is
    given ``epsilon * sqrt(1 - beta_2**t)``, which makes the two equal:
    ``sqrt(v) + epsilon * sqrt(1 - beta_2**t) = sqrt(1 - beta_2**t) *
    (sqrt(v_hat) + epsilon)``.

    Args:
        variable: the weight (a TensorFlow or Keras variable).
        m: its first-moment slot.
        v: its second-moment slot.
        gradient: the dense gradient, in the weight's dtype.
        hyper: ``(lr, beta_1, beta_2, epsilon, step)``: the rate for this
            weight and Adam's constants; ``step`` counts from 1.

    Returns:
        True when the step was applied; False on other backends, or where
        a variable has no resource handle (then nothing changed, and the
        caller takes the step in Keras ops).

    Example:
    >>> import keras
    >>> w, m, v = (keras.Variable([1.0, 2.0]) for _ in range(3))
    >>> applied = fused_adam(w, m, v, keras.ops.ones(2), (0.1, 0.9, 0.999, 1e-6, 1.0))
    >>> bool(applied) == (keras.backend.backend() == "tensorflow")
    True
    """
    if keras.backend.backend() != "tensorflow":
        return False
    handles = _handles(variable, m, v)
    if handles is None:
        return False
    import tensorflow as tf  # the TensorFlow backend is loaded: no new import

    lr, beta_1, beta_2, epsilon, step = (tf.cast(x, variable.dtype) for x in hyper)
    beta_1_power, beta_2_power = tf.pow(beta_1, step), tf.pow(beta_2, step)
    tf.raw_ops.ResourceApplyAdam(
        var=handles[0], m=handles[1], v=handles[2], beta1_power=beta_1_power,
        beta2_power=beta_2_power, lr=lr, beta1=beta_1, beta2=beta_2,
        epsilon=epsilon * tf.sqrt(1 - beta_2_power), grad=gradient)
    return True
