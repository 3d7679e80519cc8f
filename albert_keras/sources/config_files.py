"""What a model's config files say, read without building the model: a
weightless step (a preprocessor) needs one field, not the weights."""

import json
import os
import zipfile

from albert_keras.files import read_json


def configured_positions(file, folder):
    """``max_position_embeddings`` as a model's config files say it, or
    None: the ``.keras`` ``file``'s archived ``config.json`` (the encoder's
    config inside the model's), else ``folder``'s HF or TF1 ``config.json``,
    or a keras-hub preset's ``max_sequence_length``.

    Args:
        file: the model file (``.keras``), or None.
        folder: the folder beside it (a checkpoint folder's configs).

    Example:
    >>> configured_positions(None, "/no/such/folder") is None
    True
    """
    if file and file.endswith(".keras") and zipfile.is_zipfile(file):
        with zipfile.ZipFile(file) as archive:
            return _first_value(json.loads(archive.read("config.json")),
                                "max_position_embeddings")
    for name in ("config.json", "albert_config.json", "bert_config.json"):
        if os.path.isfile(os.path.join(folder, name)):
            data = read_json(os.path.join(folder, name))
            return (_first_value(data, "max_position_embeddings")
                    or _first_value(data, "max_sequence_length"))
    return None


def _first_value(tree, key):
    """The first value of ``key`` in nested dicts and lists, or None."""
    if isinstance(tree, dict):
        if key in tree and isinstance(tree[key], int):
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for item in tree:
            found = _first_value(item, key)
            if found is not None:
                return found
    return None
