"""Writing and reading ``.keras`` files safely."""

import contextlib
import os
import zipfile

import keras

from albert_keras.files import atomic_path
from albert_keras.files import check_output


def keep_former_name(cls, former):
    """Makes ``.keras`` files that saved ``cls`` under its ``former`` name
    (``albert_keras>{former}``) load as ``cls``; new files name it by its
    own registered name. Returns ``cls``.

    Example:
    >>> class Probe(keras.layers.Layer):
    ...     pass
    >>> keep_former_name(Probe, "OldProbe") is Probe
    True
    >>> keras.saving.get_registered_object("albert_keras>OldProbe") is Probe
    True
    """
    keras.saving.get_custom_objects()[f"albert_keras>{former}"] = cls
    return cls


def save_model(model, path, overwrite=False, optimizer=False):
    """Saves ``model`` to ``path`` (``.keras``) atomically.

    The file is written under a temporary name in the same folder and then
    renamed, so a crash never leaves a half-written model at ``path``. A
    model file is for predicting, exporting and publishing, so by default it
    holds no optimizer state (AdamW's two moments would double its size, as
    HF's ``save_pretrained`` and keras-hub's presets leave them out too);
    training checkpoints, which resume a run, pass ``optimizer=True``.

    Args:
        model: a Keras model.
        path: destination ending in ``.keras``.
        overwrite: replace an existing file.
        optimizer: keep the optimizer's state and the compile settings.
    """
    if not str(path).endswith(".keras"):
        raise ValueError(f"{path}: a Keras model file must end in .keras")
    check_output(path, overwrite=overwrite)
    with atomic_path(path, suffix=".keras") as tmp:
        with contextlib.nullcontext() if optimizer else _without_optimizer(model):
            model.save(tmp)
    return path


@contextlib.contextmanager
def _without_optimizer(model):
    """``model`` as if never compiled, while it is saved: Keras writes an
    optimizer's variables and the compile settings only for a compiled model
    (Keras 3's ``.keras`` format has no ``include_optimizer``)."""
    optimizer, compiled = getattr(model, "optimizer", None), getattr(model, "compiled", False)
    if optimizer is None and not compiled:
        yield
        return
    model.optimizer, model.compiled = None, False
    try:
        yield
    finally:
        model.optimizer, model.compiled = optimizer, compiled


def load_model(path):
    """Loads one of our ``.keras`` files with Keras' safe mode on.

    Safe mode refuses Lambda layers and other arbitrary code, so a model file
    from a stranger cannot run code on load.
    """
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such model file")
    if not zipfile.is_zipfile(path):
        # Keras says "File not found" for a file that is there but cut short
        raise ValueError(f"{path}: not a complete .keras file (no zip archive: truncated, "
                         "or another format)")
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except (ValueError, OSError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        message = " ".join(str(e).split())
        if len(message) > 300:
            message = message[:300] + " ..."
        raise ValueError(f"{path}: cannot load model: {message}") from None
