"""The DeBERTa family: ALBERT's encoder with disentangled attention.

DeBERTa's config is ``DebertaConfig`` (``deberta_config.py``): ALBERT's
fields and DeBERTa's relative-attention fields and checks, with
DeBERTa-v3-base's values. Its encoder is ``AlbertEncoder``, which runs the
attention the config asks for, so ALBERT's sharing variants (all,
attention, FFN, none) apply to it too, which no other implementation
offers: ``DebertaConfig(sharing="all", num_hidden_groups=1,
embedding_size=128)`` shares one disentangled-attention block across the
layers as ALBERT shares its own (``--model-overrides
'{"relative_attention": true}'`` on an ALBERT preset gives the same
class). Its layers (``DisentangledAttentionBlock``, the relative-position
buckets, the enhanced mask decoder) are in ``albert_keras.layers``, since
ALBERT's shared stack and every pretrainer use them; what is DeBERTa's own
lives here: the HF ``deberta-v2`` config dialect (``hf_config.py``), its
tensor names (``weight_names.py``), its HF reader and writer
(``checkpoints.py``, an ``HfLayout`` for ALBERT's), presets and
registration (``family.py``).
"""
