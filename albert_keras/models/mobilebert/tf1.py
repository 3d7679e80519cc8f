"""google-research's original MobileBERT: its ``bert_config.json`` and TF1 checkpoints.

The variable names are those of google-research ``mobilebert/modeling.py``
and ``run_pretraining.py``: ``bert/encoder/layer_3/ffn_layer_1/output/dense``,
``FakeLayerNorm`` for a ``no_norm`` normalisation,
``cls/predictions/extra_output_weights`` for the MLM decoder's extra rows.

Two differences from the original code are kept on purpose, since our
MobileBERT computes what HF transformers' does (and so what the HF folders
of the same checkpoints give): padded keys are masked out completely, where
the original adds -6 to their scores (a quantization-friendly mask), so
outputs agree on unpadded rows only; and with ``layer_norm``, the LayerNorms
where HF passes no epsilon use PyTorch's 1e-5, where the original uses 1e-12.
"""

import re

from albert_keras.config_dicts import ConfigError
from albert_keras.convert.assign import assign_tensors
from albert_keras.models.mobilebert.checkpoints import hf_names
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.models.mobilebert.mobilebert_encoder import MobileBertEncoder
from albert_keras.models.pretrainers.encoder_pretrainer import EncoderPretrainer

# The original BertConfig's own fields and defaults (modeling.py): not HF's
# MobileBertConfig defaults, which describe the published model instead.
_ORIGINAL_DEFAULTS = {
    "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
    "intermediate_size": 3072, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 512,
    "type_vocab_size": 16, "initializer_range": 0.02, "embedding_size": None,
    "trigram_input": False, "use_bottleneck": False, "intra_bottleneck_size": None,
    "use_bottleneck_attention": False, "key_query_shared_bottleneck": False,
    "num_feedforward_networks": 1, "normalization_type": "layer_norm",
    "classifier_activation": True,
}
# Keys only a MobileBERT config has (a BERT or ALBERT config has none of them).
MOBILEBERT_KEYS = frozenset(_ORIGINAL_DEFAULTS) - {
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob",
    "max_position_embeddings", "type_vocab_size", "initializer_range", "embedding_size"}
# The original's "gelu" is the tanh approximation
_ACTIVATIONS = {"gelu": "gelu_new"}


def reads_tf1_config(data):
    """Whether a ``bert_config.json`` dict is the original MobileBERT's."""
    return isinstance(data, dict) and bool(MOBILEBERT_KEYS & set(data))


def config_from_original(data, source="bert_config.json"):
    """A ``MobileBertConfig`` from the original code's ``bert_config.json``.

    Missing keys take the original code's defaults. Unknown keys and
    activations the model does not build are one-line errors naming the
    file (``relu6``, the quantization-aware configs', is built).

    Example:
    >>> config_from_original({"vocab_size": 100, "hidden_size": 64, "num_attention_heads": 2,
    ...                       "use_bottleneck": True, "intra_bottleneck_size": 32}).true_hidden_size
    32
    """
    unknown = sorted(set(data) - set(_ORIGINAL_DEFAULTS) - {"vocab_size"})
    if unknown:
        raise ConfigError(f"{source}: unknown MobileBERT config key {unknown[0]!r}")
    if "vocab_size" not in data:
        raise ConfigError(f"{source}: no vocab_size")
    fields = {**_ORIGINAL_DEFAULTS, **data}
    fields["embedding_size"] = fields["embedding_size"] or fields["hidden_size"]
    fields["intra_bottleneck_size"] = fields["intra_bottleneck_size"] or fields["hidden_size"]
    act = fields["hidden_act"]
    fields["hidden_act"] = _ACTIVATIONS.get(act, act) if isinstance(act, str) else act
    fields["layer_norm_eps"] = 1e-12  # tf.contrib.layers.layer_norm's
    try:
        return MobileBertConfig.from_dict(fields, source)
    except ConfigError as e:
        message = str(e)
        raise ConfigError(message if message.startswith(source) else f"{source}: {message}") \
            from None


def tf1_names(config):
    """Our stable name -> ``(TF1 variable name, transform)`` for ``config``."""
    norm = "FakeLayerNorm" if config.normalization_type == "no_norm" else "LayerNorm"
    names = {}
    for ours, (hf, _) in hf_names(config).items():
        if not hf.startswith("classifier."):  # run_classifier's head is not read
            names[ours] = _tf1_name(hf, norm)
    return {k: v for k, v in names.items() if v is not None}


def _tf1_name(hf, norm):
    """The original variable name of an HF MobileBERT tensor name."""
    special = {"cls.predictions.bias": ("cls/predictions/output_bias", None),
               "cls.predictions.dense.weight": ("cls/predictions/extra_output_weights", None),
               "cls.seq_relationship.weight": ("cls/seq_relationship/output_weights", "T"),
               "cls.seq_relationship.bias": ("cls/seq_relationship/output_bias", None)}
    if hf in special:
        return special[hf]
    name = hf if hf.startswith("cls.") else "bert." + hf
    name = re.sub(r"\.layer\.(\d+)\.", r".layer_\1.", name)
    name = re.sub(r"\.ffn\.(\d+)\.", r".ffn_layer_\1.", name)
    # the MLM head's transform has a real LayerNorm whatever the blocks use
    head = name.startswith("cls.predictions.transform.")
    scope, leaf = name.rsplit(".", 1)
    if scope.endswith(".LayerNorm"):
        scope = scope[: -len("LayerNorm")] + ("LayerNorm" if head else norm)
        leaf = {"weight": "gamma", "bias": "beta"}[leaf]
    elif scope.endswith("_embeddings"):  # a table is the variable itself
        return scope.replace(".", "/"), None
    elif leaf == "weight":
        leaf = "kernel"
    return f"{scope}.{leaf}".replace(".", "/"), None


def load_tf1(prefix, data, tensors, source, strict=True, dtype=None):
    """``(model, report)`` of an original MobileBERT checkpoint (``tensors``,
    read from ``prefix``) with the config dict ``data`` read from ``source``:
    an ``EncoderPretrainer`` with the MLM head (and NSP as its sentence head)
    when the checkpoint has ``cls/predictions``, else a ``MobileBertEncoder``.
    A distillation checkpoint's ``teacher/`` variables are left out (named in
    the report)."""
    config = config_from_original(data, source)
    teacher = {k for k in tensors if k.startswith("teacher/")}
    encoder = MobileBertEncoder(config, dtype=dtype)
    model = encoder
    if any(k.startswith("cls/predictions/") for k in tensors):
        model = EncoderPretrainer(encoder, dtype=dtype,
                                 sentence_order="cls/seq_relationship/output_weights" in tensors)
    report = assign_tensors(model, tensors, tf1_names(config), prefix, ignored=teacher,
                            strict=strict)
    if teacher:
        report["teacher_left_out"] = len(teacher)
    return model, report

