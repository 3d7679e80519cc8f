"""Task heads in HF folders: which ``...For<Task>`` class a task model
becomes, where its head's tensors go, and the labels in ``config.json``;
and, reading, which task an HF folder's class is and its ``task.json``.

A task model declares its HF task (``hf_task``) and the dense layers of
its head by canonical name (``head_layers``); this module turns those into
HF's class name, HF's tensor names and the config fields transformers'
``pipeline`` reads (``id2label``, ``problem_type``). Every family's HF
writer goes through it, so the heads are written down once.

Example:
>>> from types import SimpleNamespace
>>> architecture("Bert", SimpleNamespace(hf_task="SequenceClassification", pooling="pooled"))
'BertForSequenceClassification'
"""

import dataclasses

from albert_keras.convert.conversion_error import ConversionError


@dataclasses.dataclass(frozen=True)
class HfTask:
    """One of transformers' task classes (``<Prefix>For<name>``): how a task
    model that declares it (``hf_task = name``) is written and read.

    Args:
        name: the class' task, as ``SequenceClassification``.
        unit: our task that reads a folder of it (``task.json``'s ``task``).
        head: the head's dense layer, by its canonical name (which is also
            HF's tensor prefix).
        labels: ``config.json`` names the outputs (``id2label``).
        problem_type: ``config.json`` says regression (one output) or
            classification.
        reads_pooler: HF's head reads the pooled vector (the encoder keeps
            its pooler).
        sequence_length: the ``task.json`` length a converted folder starts
            with (the model's own position count caps it).
    """

    name: str
    unit: str
    head: str = "classifier"
    labels: bool = True
    problem_type: bool = False
    reads_pooler: bool = False
    sequence_length: int = 128


# transformers' task classes that our task models read and write; a task
# model with one more adds its line here
HF_TASKS = {task.name: task for task in (
    HfTask("SequenceClassification", "classify", problem_type=True, reads_pooler=True),
    HfTask("TokenClassification", "tag"),
    HfTask("QuestionAnswering", "qa", head="qa_outputs", labels=False, sequence_length=384),
    HfTask("MultipleChoice", "choice", labels=False, reads_pooler=True),
)}

# The head's dense layers by canonical name (HF's tensor prefix, outside the
# encoder's); a pooler is the encoder's.
HEAD_NAMES = tuple(sorted({task.head for task in HF_TASKS.values()}))
HEAD_PREFIXES = tuple(f"{name}." for name in HEAD_NAMES)


def architecture(prefix, model, unlike=None):
    """HF's class name of the task ``model`` (its ``hf_task``:
    ``SequenceClassification``, ``TokenClassification``,
    ``QuestionAnswering``, ``MultipleChoice``) in a family whose class
    names start with ``prefix`` (``Bert``); a head HF has no class for, or
    computes otherwise, is a one-line error.

    Args:
        prefix: the family's HF class prefix, as its layout declares it.
        model: a task model.
        unlike: ``{hf_task: what HF's class computes}`` for the heads the
            family's HF classes compute otherwise than ours (ELECTRA's
            sentence heads), or None.
    """
    task = model.hf_task
    pooling = getattr(model, "pooling", "pooled")
    if pooling != "pooled":
        raise ConversionError(f"a classifier with pooling {pooling!r} has no HF class (HF's "
                              "classifiers read the pooled [CLS] vector); export its encoder "
                              "instead, or fine-tune with pooling 'pooled'")
    if task in (unlike or {}):
        raise ConversionError(
            f"{unlike[task]} has a GELU dense where this model's pooler has "
            "tanh, so transformers would give other outputs: write --model-type bert "
            "(embedding_size = hidden_size) or albert instead")
    return f"{prefix}For{task}"


def head_names():
    """Canonical name -> ``(HF tensor name, transform)`` of every task
    head's dense layers (torch's ``[out, in]`` weight is our kernel
    transposed)."""
    names = {}
    for head in HEAD_NAMES:
        names[f"{head}/kernel"] = (f"{head}.weight", "T")
        names[f"{head}/bias"] = (f"{head}.bias", None)
    return names


def reads_pooler(model):
    """Whether HF's class of a task model reads the pooled vector (its
    sentence and multiple-choice heads; the token and span heads do not,
    and HF builds their encoders without a pooler)."""
    task = HF_TASKS.get(getattr(model, "hf_task", None))
    return bool(task and task.reads_pooler)


def keeps_pooler(model):
    """Whether the written encoder has its pooler: every model but a task
    model whose head reads none."""
    return reads_pooler(model) or not getattr(model, "hf_task", None)


def label_fields(model):
    """The ``config.json`` fields of a task model's outputs: ``num_labels``,
    ``id2label``/``label2id`` (a classifier or tagger with named labels)
    and ``problem_type`` (a classifier: regression with one output); none
    for a model without labels (an encoder, a pretrainer, QA, choices)."""
    task = HF_TASKS.get(getattr(model, "hf_task", None))
    if task is None or not task.labels:
        return {}
    count = int(model.num_classes)
    labels = list(model.labels) if len(model.labels) == count else [
        f"LABEL_{i}" for i in range(count)]
    fields = {"num_labels": count, "id2label": dict(enumerate(labels)),
              "label2id": {name: i for i, name in enumerate(labels)}}
    if task.problem_type:
        fields["problem_type"] = ("regression" if count == 1
                                  else "single_label_classification")
    return fields


_DEFAULT_LENGTH = 128  # a config.json without max_position_embeddings


def folder_task(data):
    """HF's task of a ``config.json`` dict (``SequenceClassification`` for
    ``BertForSequenceClassification``...), from its ``architectures``; None
    for a folder of no task class (an encoder, a pretraining checkpoint).

    Example:
    >>> folder_task({"architectures": ["AlbertForTokenClassification"]})
    'TokenClassification'
    """
    for name in data.get("architectures") or ():
        task = str(name).rpartition("For")[2]
        if "For" in str(name) and task in HF_TASKS:
            return task
    return None


def reads_as_task(task, unlike=None):
    """Whether a folder of HF's ``task`` class reads back as our task model:
    not where the family's class computes the head otherwise (``unlike``,
    as ``architecture`` takes it: ELECTRA's sentence heads)."""
    return task is not None and task not in (unlike or {})


def task_spec(data, source="config.json"):
    """The ``task.json`` dict of an HF task folder's ``config.json`` dict (its
    labels from ``id2label``, a regression from ``problem_type`` or one
    output), or ``{}`` for a folder of no task class.

    Example:
    >>> task_spec({"architectures": ["BertForSequenceClassification"],
    ...            "id2label": {"0": "neg", "1": "pos"}})["labels"]
    ['neg', 'pos']
    """
    task = HF_TASKS.get(folder_task(data))
    if task is None:
        return {}
    length = min(task.sequence_length,
                 int(data.get("max_position_embeddings") or _DEFAULT_LENGTH))
    spec = {"task": task.unit, "sequence_length": length, "labels": []}
    if not task.labels:
        return spec
    names = data.get("id2label") or {}
    if not isinstance(names, dict):
        raise ConversionError(f"{source}: id2label is not a mapping")
    count = len(names) or int(data.get("num_labels") or 2)
    if task.problem_type and (data.get("problem_type") == "regression" or count == 1):
        return {**spec, "regression": True}
    labels = {str(k): str(v) for k, v in names.items()}
    labels = [labels.get(str(i), f"LABEL_{i}") for i in range(count)]
    if labels == [f"LABEL_{i}" for i in range(count)]:
        # transformers' placeholders for labels never named: the ids, as a
        # classifier built by hand is named here (so labels 0..n-1 train it)
        labels = [str(i) for i in range(count)]
    spec["labels"] = labels
    return spec


def head_dropout(data):
    """The dropout before an HF task head (``classifier_dropout``, ALBERT's
    ``classifier_dropout_prob``, DeBERTa's ``cls_dropout``, else the hidden
    dropout, as transformers' heads choose it)."""
    for key in ("classifier_dropout", "classifier_dropout_prob", "cls_dropout"):
        if data.get(key) is not None:
            return float(data[key])
    return float(data.get("hidden_dropout_prob", 0.1))


def head_outputs(task, tensors, source):
    """The number of outputs of HF's ``task`` head, read from its tensors."""
    name = f"{HF_TASKS[task].head}.weight"
    if name not in tensors:
        raise ConversionError(f"{source}: a ...For{task} folder without its head tensor "
                              f"{name}")
    return int(tensors[name].shape[0])
