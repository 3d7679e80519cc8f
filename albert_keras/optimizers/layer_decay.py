"""Layer-wise learning-rate decay for fine-tuning (ELECTRA, BEiT).

The head learns at the full rate and each layer below it at ``decay`` times
the rate of the layer above: with L layers, the top layer takes
``decay``, layer ``i`` (from 0) ``decay ** (L - i)`` and the embeddings
``decay ** (L + 1)``. The pretrained lower layers, which hold the most
general features, move least. Keras optimizers take one learning rate for
every variable, so the scales are computed here and applied per variable by
``AlbertAdamW``.

ALBERT's shared layers run at several depths. A shared attention or FFN
module takes the scale of the deepest layer that runs it (with every layer
shared, the whole stack learns at ``decay`` and only the embeddings are
slower), so it is never slowed more than any of its uses would ask.
"""


def layer_rate_scales(encoder, decay):
    """``{variable path: learning-rate scale}`` for ``encoder``'s variables.

    Variables not listed (the pooler, the task head) take the full rate.

    Args:
        encoder: an ``AlbertEncoder`` (its ``embeddings`` and
            ``transformer`` layers, and the transformer's block plan).
        decay: the factor per layer, in (0, 1]; 1 scales nothing.

    Returns:
        A dict for ``AlbertAdamW(lr_scales=...)``; empty when ``decay`` is 1.

    Example:
    >>> scales = layer_rate_scales(encoder, 0.8)  # doctest: +SKIP
    >>> scales["embeddings/token_embedding/embeddings"]  # doctest: +SKIP
    0.512
    """
    if not 0 < decay <= 1:
        raise ValueError(f"layer_decay must be in (0, 1], got {decay}")
    if decay == 1:
        return {}
    transformer = encoder.transformer
    layers = transformer.num_layers
    scales = {v.path: decay ** (layers + 1) for v in encoder.embeddings.trainable_variables}
    deepest_attention, deepest_ffn = {}, {}
    for layer, blocks in enumerate(transformer.plan):
        for attention, ffn in blocks:
            deepest_attention[attention] = layer
            deepest_ffn[ffn] = layer
    for modules, deepest in ((transformer.attention_blocks, deepest_attention),
                             (transformer.ffn_blocks, deepest_ffn)):
        for index, module in enumerate(modules):
            for v in module.trainable_variables:
                scales[v.path] = decay ** (layers - deepest[index])
    return scales
