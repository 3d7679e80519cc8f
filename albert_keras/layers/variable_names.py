"""A layer's variables under canonical names (``attention_3/query/kernel``):
what every encoder's ``checkpoint_variables`` and the checkpoint converters
build their tables from. Free of the converters, so a model imports it
without them (and without TensorFlow on the other backends)."""


def dense_variables(prefix, layer):
    """A dense layer's variables (its bias where it has one)."""
    out = {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}
    return {name: v for name, v in out.items() if v is not None}


def norm_variables(prefix, layer):
    """A LayerNorm's variables (its beta where it centres)."""
    out = {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}
    return {name: v for name, v in out.items() if v is not None}
