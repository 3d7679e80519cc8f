"""The host side of a tokenizer kind that HF's ``tokenizers`` runs.

WordPiece and byte-level BPE tokenize on the host with a
``tokenizers.Tokenizer`` (``self._hf``, no padding or truncation); the ids,
offsets and text back are read from it the same way for both, without the
file's own special tokens (our packer adds them).
"""


class HFHostSide:
    """``encode``, ``encode_with_offsets``, ``decode`` and ``id_to_piece``
    over ``self._hf``, a ``tokenizers.Tokenizer``.

    Example:
    >>> class Kind(HFHostSide):  # doctest: +SKIP
    ...     def __init__(self, hf):
    ...         self._hf = hf
    """

    @property
    def hf_tokenizer(self):
        """The HF ``tokenizers.Tokenizer`` that tokenizes on the host."""
        return self._hf

    def id_to_piece(self, index):
        return self._hf.id_to_token(int(index))

    def decode(self, ids):
        return self._hf.decode([int(i) for i in ids], skip_special_tokens=False)

    def encode(self, texts):
        return [e.ids for e in self._hf.encode_batch(list(texts), add_special_tokens=False)]

    def encode_with_offsets(self, text):
        encoding = self._hf.encode(text, add_special_tokens=False)
        return (list(encoding.ids), [s for s, _ in encoding.offsets],
                [e for _, e in encoding.offsets])
