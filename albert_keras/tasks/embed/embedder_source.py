"""Where an embedder's encoder is read from, and how the folder says it
pools: an embedder trained here (``finetune --task embed``: its
``model.keras`` is the ``SentenceEmbedder``) or a sentence-transformers
folder (its ``modules.json``)."""

from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.embed.st_folder import is_st_folder
from albert_keras.tasks.embed.st_folder import read_st_folder

# What an embedder pools when neither the caller nor the folder says.
EMBEDDER_DEFAULTS = {"pooling": "mean", "layers": (-1,), "combine": "concat", "normalize": False,
                     "dimensions": None}


def trained_choices(origin):
    """The pooling choices of a folder whose model is an embedder trained
    here (``finetune --task embed``) or a sentence-transformers folder's
    (its ``modules.json``), else {}."""
    if is_st_folder(origin.path):
        found = read_st_folder(origin.path)
        return {"pooling": found["pooling"], "normalize": found["normalize"]}
    if not origin.task_spec or origin.is_checkpoint:
        return {}
    model, _ = origin.task_model()
    if not isinstance(model, SentenceEmbedder):
        return {}
    return {"pooling": model.pooling, "layers": tuple(model.layers_),
            "combine": model.combine, "normalize": model.normalize,
            "dimensions": model.dimensions}


def embedder_source(source, tokenizer=None):
    """``(ModelSource of the encoder, its folder's pooling choices)`` for
    ``source``: a sentence-transformers folder's transformer may sit in a
    subfolder (``0_Transformer/``)."""
    origin = ModelSource(str(source), tokenizer)
    trained = trained_choices(origin)
    if is_st_folder(origin.path):
        origin = ModelSource(read_st_folder(origin.path)["encoder"], tokenizer)
    return origin, trained
