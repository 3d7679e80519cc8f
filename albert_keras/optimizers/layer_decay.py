"""Layer-wise learning-rate decay for fine-tuning (ELECTRA, BEiT).

The head learns at the full rate and each layer below it at ``decay`` times
the rate of the layer above: with L layers, the top layer takes
``decay``, layer ``i`` (from 0) ``decay ** (L - i)`` and the embeddings
``decay ** (L + 1)``. The pretrained lower layers, which hold the most
general features, move least. Keras optimizers take one learning rate for
every variable, so the scales are computed here and applied per variable by
``LayerwiseAdamW``.

ALBERT's shared layers run at several depths. A shared attention or FFN
module takes the scale of the deepest layer that runs it (with every layer
shared, the whole stack learns at ``decay`` and only the embeddings are
slower), so it is never slowed more than any of its uses would ask; so does
what every layer reads (DeBERTa's relative position table). The depths come
from the encoder (``variables_by_depth``), so every variable but the
pooler's is scaled.
"""


def layer_rate_scales(encoder, decay):
    """``{variable path: learning-rate scale}`` for ``encoder``'s variables.

    Variables not listed (the pooler, the task head) take the full rate.

    Args:
        encoder: an encoder with ``variables_by_depth()`` (0: the
            embeddings, ``i + 1``: layer ``i``'s modules) and its
            ``config.num_hidden_layers``.
        decay: the factor per layer, in (0, 1]; 1 scales nothing.

    Returns:
        A dict for ``LayerwiseAdamW(lr_scales=...)``; empty when ``decay`` is 1.

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> encoder = AlbertEncoder(get_preset("albert_tiny"))  # 4 layers
    >>> scales = layer_rate_scales(encoder, 0.5)
    >>> scales["embeddings/token_embedding/embeddings"]
    0.03125
    """
    if not 0 < decay <= 1:
        raise ValueError(f"layer_decay must be in (0, 1], got {decay}")
    if decay == 1:
        return {}
    layers = encoder.config.num_hidden_layers
    return {path: decay ** (layers + 1 - depth)
            for path, depth in encoder.variables_by_depth().items()}
