"""Whether a tokenizer fits the model it feeds, said before training starts.

An HF folder can hold a ``tokenizer.json`` that is not the model's (5 pieces
for a 400-id model, say): nothing fails, but nearly every word becomes
``[UNK]`` and fine-tuning learns from noise. Checked on the model's
vocabulary size and on the training file's own ids.
"""

import logging

import numpy as np

logger = logging.getLogger(__name__)

# Below this share of the model's ids the tokenizer is reported: published
# vocabularies are often padded by a few hundred ids, never by half.
_LEAST_COVERAGE = 0.9
# Above this share of [UNK] among the training file's pieces, it is reported.
_MOST_UNKNOWN = 0.2


def check_tokenizer_fit(pieces, vocab_size, token_ids, padding_mask, path):
    """Raises for a tokenizer with more pieces than the model has ids; logs one
    line when it covers little of the model's vocabulary, or when ``[UNK]`` is
    a large share of the training file's pieces.

    Args:
        pieces: the host-side tokenizer (``vocabulary_size``, ``special_ids``,
            ``source``).
        vocab_size: the model's vocabulary size.
        token_ids, padding_mask: the training file's packed inputs.
        path: the training file, for the message.

    Returns:
        The share of ``[UNK]`` among the real (unpadded, non-special) pieces.

    Example:
    >>> check_tokenizer_fit(tokenizer, 30000, x["token_ids"], x["padding_mask"],
    ...                     "train.csv")  # doctest: +SKIP
    """
    size = pieces.vocabulary_size
    if size > vocab_size:
        raise ValueError(f"{pieces.source}: {size} pieces, but the model's vocabulary "
                         f"has {vocab_size}")
    if size < _LEAST_COVERAGE * vocab_size:
        logger.warning(f"{pieces.source}: {size} pieces for a model of {vocab_size} ids; "
                       "is this the model's own tokenizer?")
    special = pieces.special_ids
    ids = np.asarray(token_ids)
    real = (np.asarray(padding_mask) == 1) & ~np.isin(
        ids, [special[k] for k in ("cls", "sep", "pad") if k in special])
    unknown = float(((ids == special.get("unk", -1)) & real).sum() / max(real.sum(), 1))
    if unknown > _MOST_UNKNOWN:
        logger.warning(f"{path}: {unknown:.0%} of the pieces are [UNK] with "
                       f"{pieces.source}; is this the model's own tokenizer?")
    return unknown
