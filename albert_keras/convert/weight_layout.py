"""Our variables by stable names, and where each checkpoint format keeps them.

Every converter goes through ``model_variables``: a dict from a canonical
name (``attention_3/query/kernel``) to the Keras variable. Format tables map
the same names to a source tensor name and a transform (``"T"``: transpose a
PyTorch ``[out, in]`` Linear weight into a Keras ``[in, out]`` kernel).
"""

# Tensors come in groups. The encoder group must be complete; the others are
# loaded whole or not at all (e.g. AlbertForMaskedLM has no pooler).
REQUIRED_GROUP = "encoder"


def group_of(name):
    head = name.split("/")[0]
    if head in ("pooler", "mlm", "sop", "rtd", "classifier", "qa_outputs", "decoder_position"):
        return head
    return REQUIRED_GROUP


def _dense(prefix, layer):
    """A dense layer's variables (its bias where it has one)."""
    out = {f"{prefix}/kernel": layer.kernel, f"{prefix}/bias": layer.bias}
    return {name: v for name, v in out.items() if v is not None}


def _norm(prefix, layer):
    """A LayerNorm's variables (its beta where it centres)."""
    out = {f"{prefix}/gamma": layer.gamma, f"{prefix}/beta": layer.beta}
    return {name: v for name, v in out.items() if v is not None}


def encoder_variables(encoder):
    """Canonical name -> variable for an ``AlbertEncoder``."""
    emb = encoder.embeddings
    # Without position_biased_input only DeBERTa's enhanced mask decoder
    # reads the absolute table: an optional group, as in DeBERTa-v3 files.
    position = "embeddings/position" if emb.position_biased_input else "decoder_position"
    out = {
        "embeddings/word": emb.token_embedding.embeddings,
        position: emb.position_embedding.embeddings,
        **_norm("embeddings/layer_norm", emb.layer_norm),
    }
    if emb.segment_embedding is not None:
        out["embeddings/segment"] = emb.segment_embedding.embeddings
    if emb.projection is not None:
        out.update(_dense("projection", emb.projection))
    table = encoder.transformer.rel_embeddings
    if table is not None:
        out["relative/embeddings"] = table.embeddings
        if table.norm is not None:
            out.update(_norm("relative/layer_norm", table.norm))
    for k, block in enumerate(encoder.transformer.attention_blocks):
        for part in ("query", "key", "value", "pos_key", "pos_query"):
            if getattr(block, part, None) is not None:
                out.update(_dense(f"attention_{k}/{part}", getattr(block, part)))
        out.update(_dense(f"attention_{k}/output", block.output_dense))
        out.update(_norm(f"attention_{k}/layer_norm", block.layer_norm))
    for k, block in enumerate(encoder.transformer.ffn_blocks):
        out.update(_dense(f"ffn_{k}/intermediate", block.intermediate))
        out.update(_dense(f"ffn_{k}/output", block.output_dense))
        out.update(_norm(f"ffn_{k}/layer_norm", block.layer_norm))
    out.update(_dense("pooler", encoder.pooler.dense))
    return out


def model_variables(model):
    """Canonical name -> variable for an ``AlbertEncoder`` or ``EncoderPretrainer``."""
    encoder = getattr(model, "encoder", model)
    # a family with other layers names its own variables (MobileBERT)
    named = getattr(encoder, "checkpoint_variables", None)
    out = named() if named is not None else encoder_variables(encoder)
    if hasattr(model, "mlm_head"):
        mlm = model.mlm_head
        if mlm.dense is not None:  # else the encoder's own layer (ModernBERT's head)
            out.update(_dense("mlm/dense", mlm.dense))
            out.update(_norm("mlm/layer_norm", mlm.layer_norm))
        if mlm.output_bias is not None:  # ModernBERT's decoder_bias switch
            out["mlm/output_bias"] = mlm.output_bias
        if getattr(mlm, "extra_output", None) is not None:  # MobileBERT's decoder rows
            out["mlm/extra_output"] = mlm.extra_output
        if getattr(model, "sop_head", None) is not None:  # none under RoBERTa's MLM-only
            out.update(_dense("sop", model.sop_head.classifier))
    for canonical, layer in getattr(model, "head_layers", {}).items():  # a task model's head
        out.update(_dense(canonical, model.get_layer(layer)))
    if hasattr(model, "rtd_head"):
        out.update(_dense("rtd/dense", model.rtd_head.dense))
        out.update(_dense("rtd/output", model.rtd_head.output_dense))
    return out


# -- HF transformers ------------------------------------------------------------


def hf_linear(hf, ours):
    """A torch Linear's two tensors under our dense layer's names."""
    return {f"{ours}/kernel": (f"{hf}.weight", "T"), f"{ours}/bias": (f"{hf}.bias", None)}


def hf_norm(hf, ours):
    """A torch LayerNorm's two tensors under our norm's names."""
    return {f"{ours}/gamma": (f"{hf}.weight", None), f"{ours}/beta": (f"{hf}.bias", None)}


def _hf_embeddings():
    return {
        "embeddings/word": ("embeddings.word_embeddings.weight", None),
        "embeddings/segment": ("embeddings.token_type_embeddings.weight", None),
        "embeddings/position": ("embeddings.position_embeddings.weight", None),
        **hf_norm("embeddings.LayerNorm", "embeddings/layer_norm"),
    }


def hf_albert_names(config):
    """Canonical name -> (HF ALBERT tensor name, transform).

    Encoder names are given without the ``albert.`` prefix; head names
    (``predictions.*``, ``sop_classifier.*``) never have one.
    """
    inner = config.inner_group_num
    out = _hf_embeddings()
    out.update(hf_linear("encoder.embedding_hidden_mapping_in", "projection"))
    for k in range(config.num_attention_modules()):
        hf = f"encoder.albert_layer_groups.{k // inner}.albert_layers.{k % inner}"
        for part in ("query", "key", "value"):
            out.update(hf_linear(f"{hf}.attention.{part}", f"attention_{k}/{part}"))
        out.update(hf_linear(f"{hf}.attention.dense", f"attention_{k}/output"))
        out.update(hf_norm(f"{hf}.attention.LayerNorm", f"attention_{k}/layer_norm"))
    for k in range(config.num_ffn_modules()):
        hf = f"encoder.albert_layer_groups.{k // inner}.albert_layers.{k % inner}"
        out.update(hf_linear(f"{hf}.ffn", f"ffn_{k}/intermediate"))
        out.update(hf_linear(f"{hf}.ffn_output", f"ffn_{k}/output"))
        out.update(hf_norm(f"{hf}.full_layer_layer_norm", f"ffn_{k}/layer_norm"))
    out.update(hf_linear("pooler", "pooler"))
    out.update(hf_linear("predictions.dense", "mlm/dense"))
    out.update(hf_norm("predictions.LayerNorm", "mlm/layer_norm"))
    out["mlm/output_bias"] = ("predictions.bias", None)
    out.update(hf_linear("sop_classifier.classifier", "sop"))
    return out


def hf_bert_names(config):
    """Canonical name -> (HF BERT tensor name, transform); prefix ``bert.`` omitted."""
    out = _hf_embeddings()
    for k in range(config.num_hidden_layers):
        hf = f"encoder.layer.{k}"
        for part in ("query", "key", "value"):
            out.update(
                hf_linear(f"{hf}.attention.self.{part}", f"attention_{k}/{part}")
            )
        out.update(hf_linear(f"{hf}.attention.output.dense", f"attention_{k}/output"))
        out.update(
            hf_norm(f"{hf}.attention.output.LayerNorm", f"attention_{k}/layer_norm")
        )
        out.update(hf_linear(f"{hf}.intermediate.dense", f"ffn_{k}/intermediate"))
        out.update(hf_linear(f"{hf}.output.dense", f"ffn_{k}/output"))
        out.update(hf_norm(f"{hf}.output.LayerNorm", f"ffn_{k}/layer_norm"))
    out.update(hf_linear("pooler.dense", "pooler"))
    out.update(hf_linear("cls.predictions.transform.dense", "mlm/dense"))
    out.update(hf_norm("cls.predictions.transform.LayerNorm", "mlm/layer_norm"))
    out["mlm/output_bias"] = ("cls.predictions.bias", None)
    out.update(hf_linear("cls.seq_relationship", "sop"))
    return out


def hf_electra_names(config):
    """Canonical name -> (HF ELECTRA tensor name, transform); prefix ``electra.``
    omitted. ELECTRA is BERT's encoder with an E -> H projection when E != H
    (``embeddings_project``), no pooler, a generator head (ours is the
    same: dense to E, activation, LayerNorm, tied decoder) and a
    discriminator head."""
    out = {k: v for k, v in hf_bert_names(config).items()
           if not k.startswith(("pooler", "mlm", "sop"))}
    out.update(hf_linear("embeddings_project", "projection"))
    out.update(hf_linear("generator_predictions.dense", "mlm/dense"))
    out.update(hf_norm("generator_predictions.LayerNorm", "mlm/layer_norm"))
    out["mlm/output_bias"] = ("generator_lm_head.bias", None)
    out.update(hf_linear("discriminator_predictions.dense", "rtd/dense"))
    out.update(hf_linear("discriminator_predictions.dense_prediction", "rtd/output"))
    return out


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


# -- the original TF1 code --------------------------------------------------------


def _tf_dense(tf1, ours):
    return {f"{ours}/kernel": (f"{tf1}/kernel", None), f"{ours}/bias": (f"{tf1}/bias", None)}


def _tf_norm(tf1, ours):
    return {f"{ours}/gamma": (f"{tf1}/gamma", None), f"{ours}/beta": (f"{tf1}/beta", None)}


def _tf1_common():
    return {
        "embeddings/word": ("bert/embeddings/word_embeddings", None),
        "embeddings/segment": ("bert/embeddings/token_type_embeddings", None),
        "embeddings/position": ("bert/embeddings/position_embeddings", None),
        **_tf_norm("bert/embeddings/LayerNorm", "embeddings/layer_norm"),
        **_tf_dense("bert/pooler/dense", "pooler"),
        **_tf_dense("cls/predictions/transform/dense", "mlm/dense"),
        **_tf_norm("cls/predictions/transform/LayerNorm", "mlm/layer_norm"),
        "mlm/output_bias": ("cls/predictions/output_bias", None),
        # The original stores the SOP/NSP weights as [2, H].
        "sop/kernel": ("cls/seq_relationship/output_weights", "T"),
        "sop/bias": ("cls/seq_relationship/output_bias", None),
    }


def tf1_albert_names(config):
    """Canonical name -> (variable name in google-research/albert, transform).

    Covers every group (``group_G/inner_group_I``), not only group 0.
    """
    inner = config.inner_group_num
    out = _tf1_common()
    out.update(_tf_dense("bert/encoder/embedding_hidden_mapping_in", "projection"))
    for k in range(config.num_attention_modules()):
        tf1 = f"bert/encoder/transformer/group_{k // inner}/inner_group_{k % inner}"
        for part in ("query", "key", "value"):
            out.update(_tf_dense(f"{tf1}/attention_1/self/{part}", f"attention_{k}/{part}"))
        out.update(_tf_dense(f"{tf1}/attention_1/output/dense", f"attention_{k}/output"))
        out.update(_tf_norm(f"{tf1}/LayerNorm", f"attention_{k}/layer_norm"))
    for k in range(config.num_ffn_modules()):
        tf1 = f"bert/encoder/transformer/group_{k // inner}/inner_group_{k % inner}"
        out.update(_tf_dense(f"{tf1}/ffn_1/intermediate/dense", f"ffn_{k}/intermediate"))
        out.update(
            _tf_dense(f"{tf1}/ffn_1/intermediate/output/dense", f"ffn_{k}/output")
        )
        out.update(_tf_norm(f"{tf1}/LayerNorm_1", f"ffn_{k}/layer_norm"))
    return out


def tf1_bert_names(config):
    """Canonical name -> (variable name in google-research/bert, transform)."""
    out = _tf1_common()
    for k in range(config.num_hidden_layers):
        tf1 = f"bert/encoder/layer_{k}"
        for part in ("query", "key", "value"):
            out.update(_tf_dense(f"{tf1}/attention/self/{part}", f"attention_{k}/{part}"))
        out.update(_tf_dense(f"{tf1}/attention/output/dense", f"attention_{k}/output"))
        out.update(_tf_norm(f"{tf1}/attention/output/LayerNorm", f"attention_{k}/layer_norm"))
        out.update(_tf_dense(f"{tf1}/intermediate/dense", f"ffn_{k}/intermediate"))
        out.update(_tf_dense(f"{tf1}/output/dense", f"ffn_{k}/output"))
        out.update(_tf_norm(f"{tf1}/output/LayerNorm", f"ffn_{k}/layer_norm"))
    return out
