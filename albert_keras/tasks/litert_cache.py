"""Converted LiteRT models kept on disk, so that a service started again
does not convert again.

Converting a task model for ``runtime="litert"`` takes seconds (MiniLM-L6's
shape about 9 s, BERT-base's 27 s) and gives the same bytes for the same
model. The file is kept under a key made of everything the bytes depend on:
the converted model's configuration (layer names included: a model loaded
again from the same file has the same ones), every weight's path and
bytes, the output names, and the TensorFlow and LiteRT versions. A model
that differs in any of them gets a key of its own, never another model's
file. The newest ``KEEP`` files stay; older ones are removed.

A kept file is checked before use: its name carries the SHA-256 of its
bytes (``<key>-<digest>.tflite``), and a file whose bytes do not match (a
flipped byte, a truncated write, another program's file) is removed and
converted again. Nothing in the cache can stop or change a prediction: a
file that cannot be read, checked, written or removed is skipped with a
log line.

Where: ``$ALBERT_KERAS_CACHE/litert`` if that variable is set (set it
empty to keep nothing), else ``$XDG_CACHE_HOME/albert_keras/litert``, else
``~/.cache/albert_keras/litert``. A folder that cannot be written is
skipped with a log line: the cache only saves time.
"""

import glob
import hashlib
import importlib.metadata
import json
import logging
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

logger = logging.getLogger(__name__)

CACHE_ENV = "ALBERT_KERAS_CACHE"
KEEP = 4  # converted files kept, the most recently used
# what the key covers changes with this (a new serving function, say)
_FORMAT = "albert_keras litert 1"


def cache_folder():
    """The folder converted files are kept in, or None when turned off."""
    root = os.environ.get(CACHE_ENV)
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".cache")
        root = os.path.join(base, "albert_keras")
    return os.path.join(root, "litert") if root else None


def model_key(model, output_names):
    """The hex digest that names ``model``'s converted file."""
    digest = hashlib.sha256()
    versions = (tf.__version__, importlib.metadata.version("ai-edge-litert"))
    for part in (_FORMAT, *versions, json.dumps(list(output_names)),
                 json.dumps(model.get_config(), sort_keys=True, default=str)):
        digest.update(part.encode("utf-8") + b"\0")
    for variable in model.weights:
        value = np.ascontiguousarray(keras.ops.convert_to_numpy(variable))
        digest.update(f"{variable.path}:{value.dtype}:{value.shape}".encode("utf-8") + b"\0")
        digest.update(value.tobytes())
    return digest.hexdigest()


def _path(folder, key, blob):
    return os.path.join(folder, f"{key}-{hashlib.sha256(blob).hexdigest()}.tflite")


def cached(key):
    """The kept bytes of ``key`` if they are what was written, else None."""
    folder = cache_folder()
    if not folder:
        return None
    for path in glob.glob(os.path.join(glob.escape(folder), f"{key}-*.tflite")):
        try:
            with open(path, "rb") as f:
                blob = f.read()
        except OSError as e:
            logger.info(f"the kept LiteRT model {path} was not read: {e}")
            continue
        if _path(folder, key, blob) == path:
            _touch(path)  # recently used: kept longest
            logger.info(f"LiteRT model read from {path}")
            return blob
        logger.info(f"the kept LiteRT model {path} does not match its digest: converting "
                    f"again")
        _remove(path)
    return None


def keep(key, blob):
    """Writes ``blob`` under ``key`` (whole or not at all) and removes the
    oldest files beyond ``KEEP``."""
    folder = cache_folder()
    if not folder:
        return
    part = None
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, suffix=".part", delete=False) as f:
            part = f.name
            f.write(blob)
        os.replace(part, _path(folder, key, blob))
        part = None
        kept = sorted(glob.glob(os.path.join(glob.escape(folder), "*.tflite")),
                      key=_modified)
        for old in kept[:-KEEP]:
            _remove(old)
    except OSError as e:  # a full disk, a read-only home, another process pruning
        logger.info(f"the converted model was not kept in {folder}: {e}")
    finally:
        if part is not None:
            _remove(part)


def _modified(path):
    try:
        return os.path.getmtime(path)
    except OSError:  # removed meanwhile by another process
        return 0.0


def _touch(path):
    try:
        os.utime(path)
    except OSError:  # a read-only cache is still read
        pass


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        logger.info(f"{path} was not removed: {e}")
