"""What an export reads from its source: the model, its task and its tokenizer.

A source is a model folder (fine-tuned or pretraining), a published
checkpoint folder or a lone ``.keras`` file; each knows its tokenizer in its
own way, and the export asks here once.
"""

import os

from albert_keras.export.converter import ExportError
from albert_keras.export.export_config import arg
from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
from albert_keras.saving import load_model
from albert_keras.sources import checkpoint_reader
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.sources.layout import folder_of
from albert_keras.sources.layout import part_file
from albert_keras.sources.registry import read_tokenizer
from albert_keras.tasks.embed.embedder_source import EMBEDDER_DEFAULTS
from albert_keras.tasks.embed.embedder_source import trained_choices
from albert_keras.tasks.task import TaskSpec


def load_source(origin, part="auto", dimensions=None):
    """``(model, spec, tokenizer, folder)`` of a ``ModelSource`` (a folder or
    a ``.keras`` file, with the tokenizer file the user gave, if any).

    ``spec`` is the task's ``TaskSpec`` (a fine-tuned folder's ``task.json``,
    else what the model file carries; None for models without a task);
    ``tokenizer`` is the host-side tokenizer: the ``tokenizer`` file given,
    else the one the model carries, else the folder's; None when there is
    none. ``dimensions`` cuts an embedder's vectors to their first D
    features (``--dimensions``; an error for any other model).
    """
    model, spec, tokenizer, folder = _load_part(origin, part)
    if dimensions is not None:
        model = _cut_vectors(model, dimensions, origin.path)
    return model, spec, tokenizer, folder


def _cut_vectors(model, dimensions, source):
    """``model``, an embedder, with its vectors cut to their first
    ``dimensions`` features (before its normalization)."""
    if not isinstance(model, SentenceEmbedder):
        raise ExportError(f"{source}: {arg('dimensions')} is for embedders (an embed "
                          f"folder, or {arg('part')} embedder); this model is no embedder")
    try:
        return SentenceEmbedder(model.encoder, layers=model.layers_, pooling=model.pooling,
                                combine=model.combine, normalize=model.normalize,
                                dimensions=dimensions, name=model.name)
    except ValueError as e:
        raise ExportError(f"{source}: {arg('dimensions')}: {e}") from None


def _load_part(origin, part):
    source, tokenizer = origin.path, origin.tokenizer_file
    folder = folder_of(source)
    if part == "embedder":
        # what `albert-keras embed` computes by default: an embedder trained
        # here as it was trained, anything else's last layer mean-pooled
        choices = {**EMBEDDER_DEFAULTS, **trained_choices(origin)}
        model = SentenceEmbedder(origin.encoder(
            dtype="float32", output_hidden_states=choices["pooling"] != "pooled"), **choices)
        return model, None, _tokenizer_of(model, source, tokenizer), folder
    if part == "auto" and checkpoint_reader.claims(source) and origin.task_spec:
        # A model fine-tuned with transformers (a ...For<Task> folder): its
        # task model, with the labels of its config.json.
        model, spec = origin.task_model()
        spec = TaskSpec.from_json(spec, os.path.join(source, "config.json"))
        return model, spec, _tokenizer_of(model, source, tokenizer), source
    if checkpoint_reader.claims(source):
        # A published checkpoint: its encoder, or with --part mlm its MLM model.
        # auto/encoder: its encoder; mlm: the model with the MLM head; model:
        # the whole converted model (an ELECTRA discriminator, say).
        model = checkpoint_reader.model(source)
        if part in ("auto", "encoder"):
            model = getattr(model, "encoder", model)
        elif part == "mlm" and not hasattr(model, "mlm_head"):
            raise ExportError(f"{source}: the checkpoint has no masked-LM head")
        return model, None, _tokenizer_of(model, source, tokenizer), source
    try:
        path = part_file(source, part)
    except ValueError as e:
        raise ExportError(str(e)) from None
    if not os.path.isfile(path):
        raise ExportError(f"{path}: no such model file")
    model = load_model(path)
    spec = _spec_of(model, path, origin)
    return model, spec, _tokenizer_of(model, source, tokenizer), folder


def _spec_of(model, path, origin):
    """The task of ``model``: its folder's ``task.json`` (for the folder's
    own task model), else what the model file carries, else None."""
    if os.path.basename(path) == TASK_MODEL_FILE and origin.task_spec:
        return TaskSpec.from_json(origin.task_spec,
                                  os.path.join(folder_of(path), TASK_FILE))
    carried = getattr(model, "task_spec", None)
    return TaskSpec.from_json(carried, path) if carried else None


def _tokenizer_of(model, source, given):
    """The tokenizer file given, else the model's own, else the folder's (or None).

    The model's own comes before the folder's: a lone ``.keras`` may lie
    beside files that are not its own.
    """
    if given:
        return read_tokenizer(source, given)
    encoder = getattr(model, "encoder", model)
    carried = getattr(encoder, "tokenizer", None)
    if carried is not None:
        return carried
    try:
        return read_tokenizer(source)
    except FileNotFoundError:
        return None


def default_spec(model, source):
    """The ``TaskSpec`` a model without one is exported with, as its class
    says (a classifier built by hand: its classes named by id), or None."""
    default = getattr(model, "default_task_spec", None)
    data = default(source) if default else None
    return TaskSpec.from_json(data, source) if data else None
