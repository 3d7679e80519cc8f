"""The DeBERTa family: disentangled attention and the enhanced mask decoder.

DeBERTa's encoder is ``AlbertEncoder`` with ``relative_attention`` on (so
ALBERT's sharing variants apply to it too); what is DeBERTa's own lives
here: the attention, the relative-position buckets, the decoder head, the
HF ``deberta-v2`` config dialect, presets and registration (``family.py``).
"""
