"""keras-hub preset folders (``save_to_preset``'s, as Kaggle hosts them):
finding one, reading its tokenizer, and handing its backbone to the family
that converts it (``Family.keras_hub``). This module imports no model.
keras-hub is an optional dependency (``pip install 'albert-keras[keras-hub]'``).
"""

import importlib
import json
import os
import tempfile

from albert_keras.convert.conversion_error import ConversionError
from albert_keras.families import families
from albert_keras.families import family_of
from albert_keras.text.registry import TOKENIZERS as KINDS

# keras-hub backbone class -> its tokenizer class
TOKENIZERS = {"AlbertBackbone": "AlbertTokenizer", "BertBackbone": "BertTokenizer"}


def keras_hub():
    """The ``keras_hub`` module, or a one-line error saying how to install it."""
    try:
        return importlib.import_module("keras_hub")
    except ImportError:
        raise ConversionError("keras-hub preset folders need keras-hub: pip install "
                              "'albert-keras[keras-hub]'") from None


def from_preset(cls, folder):
    """``cls.from_preset(folder)``; a preset keras-hub cannot read is the
    user's folder, named in one line (``ConversionError``)."""
    try:
        return cls.from_preset(folder)
    except (ValueError, TypeError, KeyError, OSError) as e:
        first = " ".join(str(e).split(". ")[0].split())
        raise ConversionError(f"{os.path.join(folder, 'config.json')}: keras-hub cannot read "
                              f"this preset ({type(e).__name__}: {first[:200]})") from None


def preset_backbone(folder):
    """The keras-hub backbone class name of a preset folder, or None."""
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        # a keras-hub preset and an HF folder both need it: the folder's own
        # file is named first, before its tokenizer or weights are looked for
        # (a preset copied without metadata.json was taken for an HF folder
        # and refused for its tokenizer)
        raise ConversionError(f"{path}: not valid JSON ({' '.join(str(e).split())})") \
            from None
    if not isinstance(config, dict) or not str(config.get("module", "")).startswith(
            "keras_hub"):
        return None
    return config.get("class_name")


def is_keras_hub_preset(path):
    """True for a folder ``save_to_preset`` wrote (a ``keras_hub`` backbone config)."""
    return os.path.isdir(path) and preset_backbone(path) is not None


def _converter(folder):
    """The keras-hub module of the family that reads the preset's backbone."""
    name = preset_backbone(folder)
    if name is None:
        raise ConversionError(f"{os.path.join(folder, 'config.json')}: not a keras-hub "
                              "backbone config (no keras_hub module and class_name)")
    for family in families():
        if family.keras_hub and name in family.keras_hub_module().BACKBONES:
            return family.keras_hub_module()
    raise ConversionError(f"{folder}: a keras-hub {name} preset; only "
                          f"{' and '.join(TOKENIZERS)} convert")


def load_keras_hub_preset(folder):
    """``(our encoder, our tokenizer)`` from a keras-hub preset folder.

    Example:
    >>> encoder, tokenizer = load_keras_hub_preset("albert_base_en_uncased/")  # doctest: +SKIP
    """
    return _converter(folder).load_keras_hub_preset(folder)


def preset_tokenizer(folder):
    """Our tokenizer from a preset's (its SentencePiece model or vocabulary)."""
    backbone_name = preset_backbone(folder)
    if backbone_name not in TOKENIZERS:
        raise ConversionError(f"{folder}: a keras-hub {backbone_name} preset; only "
                              f"{' and '.join(TOKENIZERS)} convert")
    hub_name = TOKENIZERS[backbone_name]
    tokenizer = from_preset(getattr(keras_hub().tokenizers, hub_name), folder)
    kind = next(k for k in KINDS.values() if k.keras_hub_tokenizer == hub_name)
    with tempfile.TemporaryDirectory() as work:
        return kind.from_keras_hub(tokenizer, work)


def save_keras_hub_preset(encoder, tokenizer, folder):
    """Writes ``encoder`` and ``tokenizer`` as a keras-hub preset folder that
    ``AlbertBackbone.from_preset`` (or ``BertBackbone``) and the matching
    ``TextClassifier.from_preset`` load; a family without a keras-hub form
    is refused in one line.

    Example:
    >>> save_keras_hub_preset(encoder, tokenizer, "albert_preset/")  # doctest: +SKIP
    """
    family = family_of(encoder.config)
    if family.keras_hub is None:
        raise ConversionError(f"a {family.name} model has no keras-hub preset form here (only "
                              "ALBERT and BERT layouts convert to keras-hub's AlbertBackbone "
                              "and BertBackbone); write --to hf or keep it as .keras")
    return family.keras_hub_module().save_keras_hub_preset(encoder, tokenizer, folder)
