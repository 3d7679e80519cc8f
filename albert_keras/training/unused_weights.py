"""Keras' warning about the pooler, which some models never read.

Every ``AlbertEncoder`` has a pooler (the ``[CLS]`` dense layer). A tagger, a
question answerer and ELECTRA's discriminator never read it, so Keras warns
"Gradients do not exist for variables [...pooler...]" on every run. Freezing
the pooler instead would be saved in the encoder's file and silently stop a
classifier fine-tuned from it later from training its pooler, so the warning
is hidden, and only when every variable it names belongs to a pooler.

ModernBERT's pooler is HF's prediction head (``head``), which its masked LM
reads as its transform, except in the lite form, whose narrower table needs
a head of its own.

The same holds for the absolute position table of a DeBERTa-v3 encoder
(``position_biased_input=false``): only the enhanced mask decoder reads it,
and it is kept for that decoder, so a run without the decoder never trains it.
"""

import contextlib
import logging
import re
import warnings

# the names Keras lists: "encoder/pooler/pooler_dense/kernel", ...; ModernBERT's
# pooler is HF's prediction head, "head/dense/kernel" (never "mlm_head/...")
_UNREAD = r"'(?:[^']*(?:pooler|position_embedding)[^']*|(?:[^']*/)?head/(?:dense|norm)/[^']*)'"
_POOLER_ONLY = re.compile(
    rf"Gradients do not exist for variables \[({_UNREAD}, )*{_UNREAD}\]")

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
            warnings.filterwarnings("ignore", message=_POOLER_ONLY.pattern)
        yield
