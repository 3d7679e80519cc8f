"""``export --web --web-corpus FILE``: an embedder's search page.

The texts of ``FILE`` (one per line) are embedded at export time by the
Keras model the ``.tflite`` was validated against, and written into the web
folder as ``corpus.json`` (``{"texts", "vectors"}``); the page embeds the
query in the browser with the exported file and lists the nearest texts by
cosine (``albert.js``'s ``search``). The vectors are plain JSON, so the
corpus is capped (``MAX_TEXTS``) to keep the folder a page can fetch.
"""

import numpy as np

from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.export.converter import ExportError
from albert_keras.export.export_config import arg
from albert_keras.text.packer import pack_texts

CORPUS_FILE = "corpus.json"
# 20,000 texts of 384 numbers are about 60 MB of JSON
MAX_TEXTS = 20_000


def read_web_corpus(path):
    """The non-empty lines of ``path``; a one-line ``ExportError`` for a
    missing, unreadable, empty or too large file.

    Example:
    >>> read_web_corpus("notes.txt")[:1]  # doctest: +SKIP
    ['Buy milk on the way home']
    """
    try:
        with open(path, encoding="utf-8") as f:
            texts = [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        raise ExportError(f"{path}: no such file ({arg('web_corpus')})") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ExportError(f"{path}: cannot be read as UTF-8 text ({arg('web_corpus')}): "
                          f"{e}") from None
    if not texts:
        raise ExportError(f"{path}: no text to search ({arg('web_corpus')}: one text a line)")
    if len(texts) > MAX_TEXTS:
        raise ExportError(f"{path}: {len(texts)} texts; a search page holds at most "
                          f"{MAX_TEXTS} ({arg('web_corpus')})")
    return texts


def corpus_record(model, tokenizer, path, sequence_length):
    """``corpus.json``'s content: the texts of ``path`` and their vectors
    from ``model`` (an embedder), rounded to 6 decimals.

    Args:
        model: the Keras embedder (output ``embeddings``).
        tokenizer: its tokenizer.
        path: the corpus file (``read_web_corpus``'s).
        sequence_length: texts are cut to this many pieces, as the page cuts.
    """
    texts = read_web_corpus(path)
    packed = pack_texts(tokenizer, texts, None, sequence_length)
    vectors = np.asarray(predict_in_buckets(model, packed, 64)["embeddings"], np.float32)
    return {"texts": list(texts), "vectors": np.round(vectors, 6).tolist()}
