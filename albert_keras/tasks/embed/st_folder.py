"""Reading a sentence-transformers folder's own description of its embedder:
which subfolder holds the transformer, how it pools, whether it normalizes.

A folder such as all-MiniLM-L6-v2 holds an HF encoder (at its root, or in
``0_Transformer/`` in older ones), a ``modules.json`` listing its modules in
order, and each module's settings in its subfolder (``1_Pooling/config.json``).
Written here rather than by loading sentence-transformers, which is not one
of the package's dependencies and would bring torch.
"""

import os

from albert_keras.files import read_json
from albert_keras.files import write_json

MODULES_FILE = "modules.json"
# A Pooling config's modes that we compute, by both spellings: sentence-
# transformers 5+ writes "pooling_mode": "mean", earlier versions one flag per mode.
_MODES = ("mean", "cls", "max")
_OLD_FLAGS = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
              "pooling_mode_max_tokens": "max", "pooling_mode_mean_sqrt_len_tokens":
              "mean_sqrt_len", "pooling_mode_weightedmean_tokens": "weightedmean",
              "pooling_mode_lasttoken": "lasttoken"}
_KNOWN = ("Transformer", "Pooling", "Normalize")


def is_st_folder(path):
    """Whether ``path`` is a sentence-transformers folder (it has ``modules.json``)."""
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, MODULES_FILE))


def read_st_folder(path):
    """What a sentence-transformers folder's modules say.

    Args:
        path: the folder (``is_st_folder``).

    Returns:
        ``{"encoder": the transformer's folder, "pooling": "mean", "cls" or
        "max", "normalize": bool}``.

    Raises:
        ValueError: a module other than Transformer, Pooling and Normalize
            (a Dense projection, say), no Pooling, or a pooling mode we do
            not compute; the message names the file.

    Example:
    >>> read_st_folder("all-MiniLM-L6-v2")["pooling"]  # doctest: +SKIP
    'mean'
    """
    source = os.path.join(path, MODULES_FILE)
    modules = read_json(source)
    if not isinstance(modules, list) or not all(isinstance(m, dict) and "type" in m
                                                for m in modules):
        raise ValueError(f"{source}: expected a list of modules, each with a 'type'")
    found = {}
    for module in modules:
        kind = str(module["type"]).rsplit(".", 1)[-1]
        if kind not in _KNOWN:
            raise ValueError(f"{source}: module {kind} ({module.get('path', '?')}) is not read "
                             f"here; an embedder of {', '.join(_KNOWN)} modules is")
        found[kind] = os.path.join(path, str(module.get("path", "")))
    for kind in ("Transformer", "Pooling"):
        if kind not in found:
            raise ValueError(f"{source}: no {kind} module")
    return {"encoder": found["Transformer"].rstrip(os.sep),
            "pooling": _pooling(os.path.join(found["Pooling"], "config.json")),
            "normalize": "Normalize" in found}


def _pooling(config_path):
    """The one pooling mode of a Pooling module's ``config.json``."""
    config = read_json(config_path)
    if "pooling_mode" in config:
        modes = config["pooling_mode"]
        modes = [modes] if isinstance(modes, str) else list(modes)
    else:
        modes = [mode for flag, mode in _OLD_FLAGS.items() if config.get(flag)]
    if len(modes) != 1 or modes[0] not in _MODES:
        raise ValueError(f"{config_path}: pooling {'+'.join(map(str, modes)) or 'none'}; an "
                         f"embedder here pools one of {', '.join(_MODES)}")
    return modes[0]


def write_st_modules(folder, pooling, normalize, hidden_size, max_seq_length=None):
    """Makes the HF folder ``folder`` (an encoder transformers loads) a
    sentence-transformers folder: ``modules.json``, the Pooling module's
    ``config.json`` (in the spelling every version reads), a Normalize
    module when ``normalize``, and ``sentence_bert_config.json``.

    Args:
        folder: an HF encoder folder (``save_hf``'s).
        pooling: ``mean``, ``cls`` or ``max``.
        normalize: the vectors are of unit length.
        hidden_size: the encoder's width (the vectors').
        max_seq_length: the longest text in pieces (None: the model's).

    Example:
    >>> write_st_modules("hf_embedder", "mean", True, 384)  # doctest: +SKIP
    """
    if pooling not in _MODES:
        raise ValueError(f"pooling {pooling!r} has no sentence-transformers module; "
                         f"one of {', '.join(_MODES)} has")
    modules = [("Transformer", ""), ("Pooling", "1_Pooling")]
    if normalize:
        modules.append(("Normalize", "2_Normalize"))
    write_json(os.path.join(folder, MODULES_FILE), [
        {"idx": i, "name": str(i), "path": path, "type": f"sentence_transformers.models.{kind}"}
        for i, (kind, path) in enumerate(modules)])
    os.makedirs(os.path.join(folder, "1_Pooling"), exist_ok=True)
    flags = {flag: _OLD_FLAGS[flag] == pooling for flag in _OLD_FLAGS}
    write_json(os.path.join(folder, "1_Pooling", "config.json"),
               {"word_embedding_dimension": int(hidden_size), **flags})
    if normalize:
        os.makedirs(os.path.join(folder, "2_Normalize"), exist_ok=True)
    write_json(os.path.join(folder, "sentence_bert_config.json"),
               {"max_seq_length": max_seq_length, "do_lower_case": False})
