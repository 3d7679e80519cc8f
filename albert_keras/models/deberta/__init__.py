"""The DeBERTa family: ALBERT's encoder with disentangled attention.

DeBERTa's config is ``DebertaConfig`` (``deberta_config.py``): ALBERT's
fields with DeBERTa-v3-base's values. Its encoder is ``AlbertEncoder``
with ``relative_attention`` on, so ALBERT's sharing variants (all,
attention, FFN, none) apply to it too, which no other implementation
offers: ``DebertaConfig(sharing="all", num_hidden_groups=1,
embedding_size=128)`` shares one disentangled-attention block across the
layers as ALBERT shares its own (an ALBERT config with
``relative_attention=True`` is the same model, and DeBERTa's family claims
it). Its layers (``DisentangledAttentionBlock``,
the relative-position buckets, the enhanced mask decoder) are in
``albert_keras.layers``, since ALBERT's shared stack and every pretrainer
use them; what is DeBERTa's own lives here: the HF ``deberta-v2`` config
dialect (``hf_config.py``), presets and registration (``family.py``). Its
HF folders go through ALBERT's checkpoint module, which writes the
``deberta-v2`` layout.
"""
