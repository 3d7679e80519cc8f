"""``AlbertEncoder``'s variables under canonical names (``embeddings/word``,
``attention_3/query/kernel``, ``pooler/kernel``...): what its checkpoint
tables (``weight_names``) map. The one place besides the encoder itself
that walks its inner layers."""

from albert_keras.layers.variable_names import dense_variables
from albert_keras.layers.variable_names import norm_variables


def albert_variables(encoder):
    """Canonical name -> variable for an ``AlbertEncoder``."""
    emb = encoder.embeddings
    # Without position_biased_input only DeBERTa's enhanced mask decoder
    # reads the absolute table: an optional group, as in DeBERTa-v3 files.
    position = "embeddings/position" if emb.position_biased_input else "decoder_position"
    out = {
        "embeddings/word": emb.token_embedding.embeddings,
        position: emb.position_embedding.embeddings,
        **norm_variables("embeddings/layer_norm", emb.layer_norm),
    }
    if emb.segment_embedding is not None:
        out["embeddings/segment"] = emb.segment_embedding.embeddings
    if emb.projection is not None:
        out.update(dense_variables("projection", emb.projection))
    table = encoder.transformer.rel_embeddings
    if table is not None:
        out["relative/embeddings"] = table.embeddings
        if table.norm is not None:
            out.update(norm_variables("relative/layer_norm", table.norm))
    for k, block in enumerate(encoder.transformer.attention_blocks):
        for part in ("query", "key", "value", "pos_key", "pos_query"):
            if getattr(block, part, None) is not None:
                out.update(dense_variables(f"attention_{k}/{part}", getattr(block, part)))
        out.update(dense_variables(f"attention_{k}/output", block.output_dense))
        out.update(norm_variables(f"attention_{k}/layer_norm", block.layer_norm))
    for k, block in enumerate(encoder.transformer.ffn_blocks):
        out.update(dense_variables(f"ffn_{k}/intermediate", block.intermediate))
        out.update(dense_variables(f"ffn_{k}/output", block.output_dense))
        out.update(norm_variables(f"ffn_{k}/layer_norm", block.layer_norm))
    out.update(dense_variables("pooler", encoder.pooler.dense))
    return out
