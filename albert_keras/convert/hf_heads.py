"""Task heads in HF folders: which ``...For<Task>`` class a task model
becomes, where its head's tensors go, and the labels in ``config.json``.

A task model declares its HF task (``hf_task``) and the dense layers of
its head by canonical name (``head_layers``); this module turns those into
HF's class name, HF's tensor names and the config fields transformers'
``pipeline`` reads (``id2label``, ``problem_type``). Every family's HF
writer goes through it, so the heads are written down once.

Example:
>>> from types import SimpleNamespace
>>> architecture("bert", SimpleNamespace(hf_task="SequenceClassification", pooling="pooled"))
'BertForSequenceClassification'
"""

from albert_keras.convert.assign import ConversionError

# HF's class prefix of each model_type
_CLASS_PREFIX = {"albert": "Albert", "bert": "Bert", "electra": "Electra",
                 "deberta-v2": "DebertaV2", "mobilebert": "MobileBert"}
# The head's dense layers by canonical name -> HF tensor name, where HF
# keeps them outside the encoder's prefix. A pooler listed here is the
# head's own (DeBERTa's ContextPooler); one not listed stays in the encoder.
_HEAD_TENSORS = {"classifier": "classifier", "qa_outputs": "qa_outputs"}
# (model_type, task) pairs HF computes differently from our head: ELECTRA's
# sentence heads put a GELU dense where our pooler has tanh.
_UNLIKE = {
    ("electra", "SequenceClassification"): "ELECTRA's classification head",
    ("electra", "MultipleChoice"): "ELECTRA's sequence summary",
}
HEAD_PREFIXES = tuple(f"{name}." for name in _HEAD_TENSORS.values())


def architecture(model_type, model):
    """HF's class name of the task ``model`` (its ``hf_task``:
    ``SequenceClassification``, ``TokenClassification``,
    ``QuestionAnswering``, ``MultipleChoice``) for ``model_type``; a head HF
    has no class for, or computes otherwise, is a one-line error."""
    task = model.hf_task
    pooling = getattr(model, "pooling", "pooled")
    if pooling != "pooled":
        raise ConversionError(f"a classifier with pooling {pooling!r} has no HF class (HF's "
                              "classifiers read the pooled [CLS] vector); export its encoder "
                              "instead, or fine-tune with pooling 'pooled'")
    if (model_type, task) in _UNLIKE:
        raise ConversionError(
            f"{_UNLIKE[model_type, task]} has a GELU dense where this model's pooler has "
            "tanh, so transformers would give other outputs: write --model-type bert "
            "(embedding_size = hidden_size) or albert instead")
    return f"{_CLASS_PREFIX[model_type]}For{task}"


def head_names():
    """Canonical name -> ``(HF tensor name, transform)`` of every task
    head's dense layers (torch's ``[out, in]`` weight is our kernel
    transposed)."""
    names = {}
    for ours, theirs in _HEAD_TENSORS.items():
        names[f"{ours}/kernel"] = (f"{theirs}.weight", "T")
        names[f"{ours}/bias"] = (f"{theirs}.bias", None)
    return names


def reads_pooler(model):
    """Whether HF's class of a task model reads the pooled vector (its
    sentence and multiple-choice heads; the token and span heads do not,
    and HF builds their encoders without a pooler)."""
    return getattr(model, "hf_task", None) in ("SequenceClassification", "MultipleChoice")


def keeps_pooler(model):
    """Whether the written encoder has its pooler: every model but a task
    model whose head reads none."""
    return reads_pooler(model) or not getattr(model, "hf_task", None)


def label_fields(model):
    """The ``config.json`` fields of a task model's outputs: ``num_labels``,
    ``id2label``/``label2id`` (a classifier or tagger with named labels)
    and ``problem_type`` (a classifier: regression with one output); none
    for a model without labels (an encoder, a pretrainer, QA, choices)."""
    task = getattr(model, "hf_task", None)
    if task in (None, "QuestionAnswering", "MultipleChoice"):
        return {}
    count = int(model.num_classes)
    labels = list(model.labels) if len(model.labels) == count else [
        f"LABEL_{i}" for i in range(count)]
    fields = {"num_labels": count, "id2label": dict(enumerate(labels)),
              "label2id": {name: i for i, name in enumerate(labels)}}
    if task == "SequenceClassification":
        fields["problem_type"] = ("regression" if count == 1
                                  else "single_label_classification")
    return fields
