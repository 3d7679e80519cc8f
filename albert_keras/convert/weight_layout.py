"""Our variables by stable names, and where each checkpoint format keeps them.

Every converter goes through ``model_variables``: a dict from a canonical
name (``attention_3/query/kernel``) to the Keras variable. Format tables map
the same names to a source tensor name and a transform (``"T"``: transpose a
PyTorch ``[out, in]`` Linear weight into a Keras ``[in, out]`` kernel).
"""

from albert_keras.convert.hf_heads import HEAD_NAMES
from albert_keras.layers.variable_names import dense_variables
from albert_keras.layers.variable_names import norm_variables

# Tensors come in groups. The encoder group must be complete; the others are
# loaded whole or not at all (e.g. AlbertForMaskedLM has no pooler).
REQUIRED_GROUP = "encoder"


# the optional groups: the pooler, pretraining heads, task heads, DeBERTa's
# position table read only by its decoder
_OPTIONAL = ("pooler", "mlm", "sop", "rtd", *HEAD_NAMES, "decoder_position")


def group_of(name):
    """The group of a canonical name (``REQUIRED_GROUP``: the encoder's)."""
    head = name.split("/")[0]
    return head if head in _OPTIONAL else REQUIRED_GROUP


def model_variables(model):
    """Canonical name -> variable of an encoder, or of a model around one (a
    pretrainer, a task model): the encoder names its own
    (``checkpoint_variables``, in its family's folder), the heads are named
    here."""
    encoder = getattr(model, "encoder", model)
    out = encoder.checkpoint_variables()
    if hasattr(model, "mlm_head"):
        mlm = model.mlm_head
        if mlm.dense is not None:  # else the encoder's own layer (ModernBERT's head)
            out.update(dense_variables("mlm/dense", mlm.dense))
            out.update(norm_variables("mlm/layer_norm", mlm.layer_norm))
        if mlm.output_bias is not None:  # ModernBERT's decoder_bias switch
            out["mlm/output_bias"] = mlm.output_bias
        if getattr(mlm, "extra_output", None) is not None:  # MobileBERT's decoder rows
            out["mlm/extra_output"] = mlm.extra_output
        if getattr(model, "sop_head", None) is not None:  # none under RoBERTa's MLM-only
            out.update(dense_variables("sop", model.sop_head.classifier))
    for canonical, layer in getattr(model, "head_layers", {}).items():  # a task model's head
        out.update(dense_variables(canonical, model.get_layer(layer)))
    if hasattr(model, "rtd_head"):
        out.update(dense_variables("rtd/dense", model.rtd_head.dense))
        out.update(dense_variables("rtd/output", model.rtd_head.output_dense))
    return out


# -- HF transformers ------------------------------------------------------------


def hf_linear(hf, ours):
    """A torch Linear's two tensors under our dense layer's names."""
    return {f"{ours}/kernel": (f"{hf}.weight", "T"), f"{ours}/bias": (f"{hf}.bias", None)}


def hf_norm(hf, ours):
    """A torch LayerNorm's two tensors under our norm's names."""
    return {f"{ours}/gamma": (f"{hf}.weight", None), f"{ours}/beta": (f"{hf}.bias", None)}
