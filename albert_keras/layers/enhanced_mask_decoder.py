"""DeBERTa's enhanced mask decoder (EMD): absolute positions enter at the end.

He et al. 2021 (section 3.3) keep absolute positions out of a relative-
attention encoder's input and add them just before the masked tokens are
decoded: in microsoft/DeBERTa (``apps/models/masked_language_model.py``,
``EnhancedMaskDecoder.emd_context_layer``) the hidden state *before* the
last layer, ``h``, gives keys and values; the queries start as ``h + z``
(``z`` the absolute position embeddings) and the last layer runs twice,
each time on its own output as the next queries, with the same weights.
The MLM head reads the result. Neither HF transformers nor keras-hub has it.

Here it is a function over an encoder's own layers (no weights of its
own), through the encoder's entry points: ``position_rows`` (its absolute
position table, projected E -> H when the embedding is factorized) and
``decode_rows`` (its last block), so a model with ALBERT's sharing decodes
with its shared block. Only the masked rows are decoded.
"""

from keras import ops

# The original runs the last layer twice (``[encoder.layer[-1] for _ in range(2)]``).
DECODER_STEPS = 2


def enhanced_mask_decode(encoder, hidden, padding_mask, positions, training=False,
                         steps=DECODER_STEPS):
    """The decoder's output rows at ``positions``.

    Args:
        encoder: the ``AlbertEncoder`` whose layers decode.
        hidden: ``[B, S, H]``, the state before the last block (keys and
            values of every decoding step).
        padding_mask: ``[B, S]``.
        positions: ``[B, P]`` int positions to decode (the masked ones).
        training: dropout on or off.
        steps: applications of the last block (2 in DeBERTa).

    Returns:
        ``[B, P, H]``: what the MLM head reads at ``positions``.

    Example:
    >>> import keras
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> encoder = AlbertEncoder(get_preset("albert_tiny"))
    >>> hidden = keras.ops.ones((2, 8, 256))
    >>> rows = enhanced_mask_decode(encoder, hidden, keras.ops.ones((2, 8), "int32"),
    ...                             keras.ops.ones((2, 3), "int32"))
    >>> tuple(rows.shape)
    (2, 3, 256)
    """
    positions = ops.cast(positions, "int32")
    query = encoder.position_rows(positions, training) + ops.take_along_axis(
        hidden, positions[:, :, None], axis=1)
    for _ in range(steps):
        query = encoder.decode_rows(hidden, padding_mask, query, positions, training=training)
    return query
