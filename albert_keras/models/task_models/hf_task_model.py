"""Our task model of an HF ``...For<Task>`` folder, for every family.

HF's four task classes (sequence classification and regression, token
classification, question answering, multiple choice) map onto the task
models that declare the same ``hf_task``; each family's checkpoint reader
builds the head here on its encoder and loads the head's tensors by the
names ``albert_keras.convert.hf_heads`` gives them, so a model fine-tuned
elsewhere reads back with its labels, as ours go out.
"""

from albert_keras.convert import hf_heads
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.models.task_models.choice_scorer import ChoiceScorer
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.models.task_models.span_extractor import SpanExtractor
from albert_keras.models.task_models.token_tagger import TokenTagger

# Our task model of each of transformers' task classes (``hf_heads.HF_TASKS``)
TASK_MODELS = {cls.hf_task: cls for cls in (SequenceClassifier, TokenTagger, SpanExtractor,
                                            ChoiceScorer)}


def task_model_from_hf(data, tensors, encoder, source, dtype=None, unlike=None):  # noqa: PLR0913 (the folder's parts and two options)
    """The task model of an HF folder's class on ``encoder``, carrying the
    folder's ``task.json`` (labels from ``id2label``); None for a folder of
    no task class, or of a head HF computes otherwise (ELECTRA's sentence
    heads: the folder then gives its encoder).

    Args:
        data: the folder's ``config.json`` dict.
        tensors: its tensors, the encoder's prefix taken off.
        encoder: the family's encoder, built from the config.
        source: the folder, for messages.
        dtype: a dtype policy for the model.
        unlike: ``{hf_task: what HF computes}`` for the family's heads
            that HF computes otherwise (``hf_heads.architecture``).

    Example:
    >>> model = task_model_from_hf(data, tensors, encoder, "hf/")  # doctest: +SKIP
    """
    task = hf_heads.folder_task(data)
    if not hf_heads.reads_as_task(task, unlike):
        return None
    spec = hf_heads.task_spec(data, source)
    outputs = hf_heads.head_outputs(task, tensors, source)
    dropout = hf_heads.head_dropout(data)  # what training the head further uses
    model = TASK_MODELS[task].from_hf_head(encoder, outputs, dropout=dropout, dtype=dtype)
    expected = 1 if spec.get("regression") else len(spec["labels"]) or outputs
    if outputs != expected:
        raise ConversionError(f"{source}: the head has {outputs} outputs and config.json "
                              f"names {expected} labels (id2label)")
    model.task_spec = spec
    return model
