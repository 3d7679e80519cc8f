"""Tokenizer kinds by name. Adding a kind is one module and one line here."""

import os

from albert_keras.text.byte_bpe_tokenizer import ByteLevelBPE
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.wordpiece_tokenizer import WordPiece

TOKENIZERS = {
    SentencePiece.kind: SentencePiece,
    WordPiece.kind: WordPiece,
    ByteLevelBPE.kind: ByteLevelBPE,
}


def load_tokenizer(path, kind=None, options=None):
    """The tokenizer in ``path``, of ``kind`` or of the first kind that reads it.

    Args:
        path: a tokenizer file (a SentencePiece ``.model``, a WordPiece
            ``vocab.txt`` or an HF ``tokenizer.json``).
        kind: one of ``TOKENIZERS`` (default: found from the file).
        options: the kind's options (WordPiece: ``lowercase`` and so on).

    Example:
    >>> load_tokenizer("runs/pretrain/spm.model").vocabulary_size  # doctest: +SKIP
    8000
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no tokenizer file")
    if kind is not None:
        if kind not in TOKENIZERS:
            raise ValueError(f"{path}: unknown tokenizer kind {kind!r}; known: "
                             f"{', '.join(TOKENIZERS)}")
        return TOKENIZERS[kind](path, **(options or {}))
    for cls in TOKENIZERS.values():
        if cls.can_read(path):
            return cls(path, **(options or {}))
    raise ValueError(f"{path}: not a tokenizer file of any known kind "
                     f"({', '.join(TOKENIZERS)})")
