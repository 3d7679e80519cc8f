"""The readers of every kind of source, by module name; adding a kind of
source is one module and one line here.

A reader module has ``claims(path)`` (whether the path is its kind),
``tokenizer(path)`` (the source's own tokenizer, or None), ``model(path)``
(the stored model), ``encoder(path, settings, stored=None)`` (the encoder
with a run's ``EncoderSettings``; ``stored``: the model read before),
``pretrainer(path)`` (``(model, path)`` with the masked-LM head),
``task_model(path)`` (``(model, task_spec_dict)``), ``task_spec(path)``
and ``PUBLISHED`` (a published checkpoint, whose encoder starts any task).
The first reader that claims a path reads it.

``Backbone.from_preset`` and ``Tokenizer.from_preset`` come here: the
readers sit above the models and tokenizers they build, so this table names
them instead of importing them.

Example:
>>> reader_of("bert_tiny").__name__
'albert_keras.sources.preset_reader'
"""

import importlib
import os

from albert_keras.models.encoder_settings import EncoderSettings

READERS = (
    "albert_keras.sources.tokenizer_file_reader",  # spm.model, vocab.txt, tokenizer.json
    "albert_keras.sources.saved_reader",  # our folders and .keras files
    "albert_keras.sources.checkpoint_reader",  # HF, TF1 and keras-hub folders
    "albert_keras.sources.preset_reader",  # preset names: new weights
)


def reader_of(path):
    """The reader module of the first kind that claims ``path``, or a
    one-line ``FileNotFoundError``."""
    path = os.fspath(path)
    for name in READERS:
        reader = importlib.import_module(name)
        if reader.claims(path):
            return reader
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file or folder, nor a preset name")
    raise FileNotFoundError(
        f"{path}: no model here (expected model.keras, encoder.keras or pretrainer.keras, "
        "or an HF or TF1 checkpoint folder)")


def read_tokenizer(path, tokenizer=None):
    """The tokenizer file ``tokenizer`` when given, else the source's own
    (a ``FileNotFoundError`` when it has none)."""
    found = reader_of(tokenizer if tokenizer else path).tokenizer(tokenizer or path)
    if found is None:
        raise FileNotFoundError(f"{path}: carries no tokenizer; pass --tokenizer")
    return found


def tokenizer_from_preset(source):
    """``Tokenizer.from_preset``: the tokenizer file ``source``, or the
    tokenizer of a model folder, ``.keras`` file or checkpoint folder."""
    return read_tokenizer(os.fspath(source))


def encoder_from_preset(source, dtype=None, tokenizer=None):
    """``Backbone.from_preset``: the encoder of anything ``--init`` takes, or
    of a preset name (new weights); ``tokenizer`` gives it that file, else
    it keeps its own, else takes the source's."""
    source = os.fspath(source)
    reader = reader_of(source)
    encoder = reader.encoder(source, EncoderSettings(dtype=dtype))
    if tokenizer:
        encoder.tokenizer = read_tokenizer(tokenizer)
    elif encoder.tokenizer is None:
        encoder.tokenizer = reader.tokenizer(source)
    return encoder
