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
    if keras.backend.backend() != "tensorflow":
        return None
    handles = []
    for variable in variables:
        handle = getattr(variable, "handle", None)
        if handle is None:
            return None
        handles.append(handle)
    return handles


def fused_adam_applies(variable, m, v):
    """Whether ``fused_adam`` can step ``variable`` (TensorFlow, and every
    one of the three has a resource handle).

    Example:
    >>> w, m, v = (keras.Variable([1.0, 2.0]) for _ in range(3))
    >>> fused_adam_applies(w, m, v) == (keras.backend.backend() == "tensorflow")
    True
    """
    return _handles(variable, m, v) is not None


def adam_scalars(beta_1, beta_2, epsilon, step, dtype):
    """The scalars of one step that the fused kernel reads, the same for
    every weight of ``dtype``: ``(beta_1, beta_2, beta_1**t, beta_2**t,
    kernel epsilon)``, ``step`` (t) counting from 1.

    The step is torch's (and our ``LayerwiseAdamW``'s): ``epsilon`` added
    after the bias correction, ``lr * m_hat / (sqrt(v_hat) + epsilon)``.
    The kernel adds its epsilon to the uncorrected ``sqrt(v)``, so it is
    given ``epsilon * sqrt(1 - beta_2**t)``, which makes the two equal:
    ``sqrt(v) + epsilon * sqrt(1 - beta_2**t) = sqrt(1 - beta_2**t) *
    (sqrt(v_hat) + epsilon)``.

    Example:
    >>> beta_1, beta_2, beta_1_t, beta_2_t, epsilon = adam_scalars(0.9, 0.999, 1e-6, 2.0,
    ...                                                            "float32")
    >>> round(float(beta_2_t), 6)
    0.998001
    """
    import tensorflow as tf  # TensorFlow's path only: the backend is loaded

    beta_1, beta_2, epsilon, step = (tf.cast(x, dtype) for x in (beta_1, beta_2, epsilon, step))
    beta_1_power, beta_2_power = tf.pow(beta_1, step), tf.pow(beta_2, step)
    return beta_1, beta_2, beta_1_power, beta_2_power, epsilon * tf.sqrt(1 - beta_2_power)


def fused_adam(variable, m, v, gradient, lr, scalars):
    """Applies one Adam step to ``variable`` with TensorFlow's fused kernel.

    Args:
        variable: the weight (a TensorFlow or Keras variable);
            ``fused_adam_applies`` says whether it can be.
        m: its first-moment slot.
        v: its second-moment slot.
        gradient: the dense gradient, in the weight's dtype.
        lr: the rate for this weight, in its dtype.
        scalars: ``adam_scalars`` of this step and the weight's dtype.

    Example:
    >>> w, m, v = (keras.Variable([1.0, 2.0]) for _ in range(3))
    >>> if fused_adam_applies(w, m, v):
    ...     fused_adam(w, m, v, keras.ops.ones(2), keras.ops.convert_to_tensor(0.1),
    ...                adam_scalars(0.9, 0.999, 1e-6, 1.0, "float32"))
    """
    import tensorflow as tf  # TensorFlow's path only: the backend is loaded

    handles = _handles(variable, m, v)
    beta_1, beta_2, beta_1_power, beta_2_power, epsilon = scalars
    tf.raw_ops.ResourceApplyAdam(
        var=handles[0], m=handles[1], v=handles[2], beta1_power=beta_1_power,
        beta2_power=beta_2_power, lr=lr, beta1=beta_1, beta2=beta_2,
        epsilon=epsilon, grad=gradient)
