"""Where each checkpoint format keeps the ALBERT, BERT and ELECTRA weights.

Tables from our canonical names of an ``AlbertEncoder``'s variables
(``encoder_variables``) to HF's and the original TF1 code's tensor names, each with a transform (``"T"``: transpose a PyTorch ``[out, in]``
Linear weight into a Keras ``[in, out]`` kernel). The generic machinery
(groups, heads, loading) is ``albert_keras.convert``'s.

Example:
>>> from albert_keras.models.albert.albert_config import AlbertConfig
>>> names = hf_albert_names(AlbertConfig(num_hidden_layers=2))
>>> names["attention_0/query/kernel"]
('encoder.albert_layer_groups.0.albert_layers.0.attention.query.weight', 'T')
"""

from albert_keras.convert.weight_layout import hf_linear
from albert_keras.convert.weight_layout import hf_norm


def hf_embeddings():
    """BERT's embedding tensors under our names (ALBERT and ELECTRA keep them)."""
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
    out = hf_embeddings()
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
    out = hf_embeddings()
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
