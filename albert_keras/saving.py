"""Writing and reading ``.keras`` files safely."""

import contextlib
import hashlib
import json
import os
import shutil
import tempfile

import keras


def write_json(path, data):
    """Writes JSON atomically (temporary name, then rename)."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


@contextlib.contextmanager
def writing_folder(folder):
    """Yields a temporary folder that replaces ``folder`` when the block ends.

    On any error (or interruption) the temporary folder is removed and
    ``folder`` is left as it was, so no half-written output survives.
    """
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(folder)}.tmp", dir=parent)
    try:
        yield tmp
        if os.path.exists(folder):
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def sha256_file(path):
    """The hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def save_model(model, path, overwrite=False):
    """Saves ``model`` to ``path`` (``.keras``) atomically.

    The file is written under a temporary name in the same folder and then
    renamed, so a crash never leaves a half-written model at ``path``.

    Args:
        model: a Keras model.
        path: destination ending in ``.keras``.
        overwrite: replace an existing file.
    """
    if not str(path).endswith(".keras"):
        raise ValueError(f"{path}: a Keras model file must end in .keras")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; pass --overwrite to replace it")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp{os.getpid()}.keras")
    try:
        model.save(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def load_model(path):
    """Loads one of our ``.keras`` files with Keras' safe mode on.

    Safe mode refuses Lambda layers and other arbitrary code, so a model file
    from a stranger cannot run code on load.
    """
    import albert_keras  # noqa: F401  (registers our classes)
    import albert_keras.training.optimizer  # noqa: F401  (and the optimizers saved with them)

    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such model file")
    try:
        return keras.saving.load_model(path, safe_mode=True)
    except (ValueError, OSError, KeyError, TypeError) as e:
        message = " ".join(str(e).split())
        if len(message) > 300:
            message = message[:300] + " ..."
        raise ValueError(f"{path}: cannot load model: {message}") from None
