"""What makes a model an encoder the rest of the package builds on.

Pretrainers, task models, distillers, layer decay and export reach an
encoder only through its entry (``encode``, ``embed``, ``pool``,
``variables_by_depth``, and its ``config``), so they accept any model that
has one, not only ``AlbertEncoder``: a new family brings its own encoder.
"""

BACKBONE_METHODS = ("encode", "embed", "pool", "variables_by_depth")


def is_backbone(model):
    """Whether ``model`` is an encoder: it has a ``config`` and the entry's methods.

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> is_backbone(AlbertEncoder(get_preset("albert_tiny"))), is_backbone("text")
    (True, False)
    """
    return (getattr(model, "config", None) is not None
            and all(callable(getattr(model, name, None)) for name in BACKBONE_METHODS))


def backbone_of(model):
    """The encoder of ``model`` (``model`` itself when it is one), or None.

    Example:
    >>> backbone_of("text") is None
    True
    """
    if is_backbone(model):
        return model
    encoder = getattr(model, "encoder", None)
    return encoder if is_backbone(encoder) else None
