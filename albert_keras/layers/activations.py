"""Activation functions by the names configs use."""

import keras


def gelu_new(x):
    """GELU, tanh approximation (the original ALBERT/BERT code's ``gelu``)."""
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU, exact erf form (HF's ``gelu`` for BERT)."""
    return keras.activations.gelu(x, approximate=False)


_ACTIVATIONS = {
    "gelu_new": gelu_new,
    "gelu_pytorch_tanh": gelu_new,
    "gelu": gelu_exact,
    "relu": keras.activations.relu,
    # bounded, so an 8-bit range covers it (MobileBERT's quantization-aware form)
    "relu6": keras.activations.relu6,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}


def get_activation(name):
    """Returns the activation function for a config's ``hidden_act`` name.

    Args:
        name: ``gelu_new``, ``gelu``, ``relu``, ``relu6``, ``tanh`` or ``linear``.

    Example:
    >>> tuple(get_activation("gelu_new")(keras.ops.zeros((2,))).shape)
    (2,)
    """
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown activation {name!r}; expected one of {sorted(_ACTIVATIONS)}"
        ) from None
