"""Keras' warning about the pooler, which some models never read.

Every ``AlbertEncoder`` has a pooler (the ``[CLS]`` dense layer). A tagger, a
question answerer and ELECTRA's discriminator never read it, so Keras warns
"Gradients do not exist for variables [...pooler...]" on every run. Freezing
the pooler instead would be saved in the encoder's file and silently stop a
classifier fine-tuned from it later from training its pooler, so the warning
is hidden, and only when every variable it names belongs to a pooler.

A family may keep more weights that some runs never read (its
``Family.unread_weights``: ModernBERT's prediction head, DeBERTa-v3's
absolute position table); a warning naming only those is hidden too.
"""

import contextlib
import logging
import warnings

from albert_keras.families import families

# the names Keras lists: "encoder/pooler/pooler_dense/kernel", ...
_POOLER = r"[^']*pooler[^']*"


logger = logging.getLogger(__name__)


@contextlib.contextmanager
def unused_pooler_quiet():
    """Hides Keras' missing-gradient warning when it names only pooler (and
    unread position-table) variables.

    With the ``albert_keras`` logger at DEBUG (``--verbose``) it shows.

    Example:
    >>> with unused_pooler_quiet():
    ...     warnings.warn("Gradients do not exist for variables ['pooler/kernel'] when ...")
    """
    with warnings.catch_warnings():
        if not logger.isEnabledFor(logging.DEBUG):
            warnings.filterwarnings("ignore", message=_pooler_only())
        yield


def _pooler_only():
    """The warning's pattern when every variable it names is unread."""
    unread = [_POOLER, *(p for family in families() for p in family.unread_weights)]
    one = "'(?:" + "|".join(unread) + ")'"
    return rf"Gradients do not exist for variables \[({one}, )*{one}\]"
