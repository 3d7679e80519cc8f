"""Where HF's DeBERTa-v2/v3 folders keep the weights of our encoder in its
DeBERTa layout (relative attention, no token types in v3, the enhanced mask
decoder's position table).

Example:
>>> from albert_keras.models.deberta.deberta_config import DebertaConfig
>>> hf_deberta_names(DebertaConfig())["attention_0/pos_key/kernel"]
('encoder.layer.0.attention.self.pos_key_proj.weight', 'T')
"""

from albert_keras.convert.weight_layout import hf_linear
from albert_keras.convert.weight_layout import hf_norm


def hf_deberta_names(config, legacy_head=True):
    """Canonical name -> (HF DeBERTa-v2/v3 tensor name, transform); prefix
    ``deberta.`` omitted.

    Args:
        config: our ``AlbertConfig`` (a DeBERTa layout).
        legacy_head: the masked-LM head as ``cls.predictions.*`` (HF's
            default, ``legacy=True``) or as ``lm_predictions.lm_head.*``
            (the original DeBERTa layout, ``legacy=False``).
    """
    out = {
        "embeddings/word": ("embeddings.word_embeddings.weight", None),
        **hf_norm("embeddings.LayerNorm", "embeddings/layer_norm"),
        "relative/embeddings": ("encoder.rel_embeddings.weight", None),
        **hf_norm("encoder.LayerNorm", "relative/layer_norm"),
    }
    position = "embeddings/position" if config.position_biased_input else "decoder_position"
    out[position] = ("embeddings.position_embeddings.weight", None)
    if config.type_vocab_size:
        out["embeddings/segment"] = ("embeddings.token_type_embeddings.weight", None)
    for k in range(config.num_hidden_layers):
        hf = f"encoder.layer.{k}"
        for part in ("query", "key", "value", "pos_key", "pos_query"):
            out.update(hf_linear(f"{hf}.attention.self.{part}_proj", f"attention_{k}/{part}"))
        out.update(hf_linear(f"{hf}.attention.output.dense", f"attention_{k}/output"))
        out.update(hf_norm(f"{hf}.attention.output.LayerNorm", f"attention_{k}/layer_norm"))
        out.update(hf_linear(f"{hf}.intermediate.dense", f"ffn_{k}/intermediate"))
        out.update(hf_linear(f"{hf}.output.dense", f"ffn_{k}/output"))
        out.update(hf_norm(f"{hf}.output.LayerNorm", f"ffn_{k}/layer_norm"))
    out.update(hf_linear("pooler.dense", "pooler"))
    head = "cls.predictions.transform" if legacy_head else "lm_predictions.lm_head"
    out.update(hf_linear(f"{head}.dense", "mlm/dense"))
    out.update(hf_norm(f"{head}.LayerNorm", "mlm/layer_norm"))
    out["mlm/output_bias"] = ("cls.predictions.bias" if legacy_head
                              else "lm_predictions.lm_head.bias", None)
    out.update(hf_linear("classifier", "classifier"))
    return out
