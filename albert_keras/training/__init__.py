"""Training: optimizer, schedule, strategies, callbacks and the pretraining driver."""


def split_features(features):
    """Splits a pretraining feature dict into ``(x, y)`` for ``fit``."""
    x = {k: features[k] for k in ("token_ids", "segment_ids", "padding_mask",
                                   "masked_positions")}
    y = {k: features[k] for k in ("masked_ids", "masked_weights", "sop_label")}
    return x, y
