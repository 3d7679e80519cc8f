"""``export --web DIR``: a static folder that runs the exported model in a browser.

The folder holds the ``.tflite`` (the only copy unless ``--out`` also asks
for one), its sidecar (``sidecar.json``) and card (``MODEL.md``), the
tokenizer as an HF ``tokenizer.json``
(``text.tokenizer_json``), ``model.json`` (what the page needs of the
sidecar: kind, labels, the input lengths and their signatures, special ids,
truncation), ``albert.js`` (``loadModel``, ``classify``, ``embed``: packs
each text at the shortest length that holds it and binds the inputs by
name), ``index.html`` (a text box, the label and a bar per class) and
``vendor/``: LiteRT.js and tokenizers.js at the versions pinned in
``web/package-lock.json``, so the page needs no CDN. It is served as it is
by any static server (``python -m http.server``); threads need the page to
be cross-origin isolated, and it runs on one thread otherwise.

A ``--metadata`` file goes to MediaPipe's web runtime instead (its
``TextClassifier`` or ``TextEmbedder``, which tokenize from the file; the
page lower-cases and strips accents first where our tokenizer does, which
MediaPipe's tokenizers do not), and the folder holds MediaPipe's files.

The runtimes are fetched by ``npm ci`` from that lock file (integrity hashes
included) once, into ``$XDG_CACHE_HOME/albert_keras/web-runtime/`` (default
``~/.cache``; safe to delete), and copied from there.

Only ids-in classifiers and embedders go to the web: LiteRT.js has no
string tensors and neither web runtime has tf-text's tokenizer ops.
"""

import hashlib
import json
import os
import shutil
import subprocess
import tempfile

from albert_keras.export.converter import ExportError
from albert_keras.export.export_config import arg
from albert_keras.export.web_corpus import CORPUS_FILE
from albert_keras.export.web_corpus import read_web_corpus
from albert_keras.files import write_json

WEB_FORMAT = "albert-keras-web/1"
_HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "web")
# our own files, copied as they are
PAGE_FILES = ("index.html", "albert.js", "mediapipe.js")
# what each runtime needs: node_modules path -> the folder's path
LITERT_FILES = {
    "@litertjs/core/dist/index.js": "vendor/litertjs/core/index.js",
    "@litertjs/wasm-utils/dist/index.js": "vendor/litertjs/wasm-utils/index.js",
    "@huggingface/tokenizers/dist/tokenizers.min.mjs": "vendor/tokenizers/tokenizers.min.mjs",
    "@huggingface/tokenizers/LICENSE": "vendor/tokenizers/LICENSE",
    # LiteRT.js loads one of these by what the browser supports: relaxed
    # SIMD (internal), none (compat) or relaxed SIMD with threads (threaded)
    **{f"@litertjs/core/wasm/litert_wasm_{variant}internal.{ext}":
       f"vendor/litertjs/wasm/litert_wasm_{variant}internal.{ext}"
       for variant in ("", "compat_", "threaded_") for ext in ("js", "wasm")},
}
MEDIAPIPE_FILES = {
    "@mediapipe/tasks-text/text_bundle.mjs": "vendor/mediapipe/text_bundle.mjs",
    # FilesetResolver picks one by the browser's SIMD support
    **{f"@mediapipe/tasks-text/wasm/text_wasm_{variant}internal.{ext}":
       f"vendor/mediapipe/wasm/text_wasm_{variant}internal.{ext}"
       for variant in ("", "nosimd_") for ext in ("js", "wasm")},
}
MODEL_FILE = "model.tflite"
# the export's sidecar and model card, under names the page's model.json leaves free
SIDECAR_FILE = "sidecar.json"
CARD_FILE = "MODEL.md"


def check_web_kind(c, kind):
    """Refuses a ``web`` export of a model the page cannot run."""
    if c.web and not kind.web:
        raise ExportError(f"{arg('web')}: the page runs classifiers and embedders; this is "
                          f"{kind.article()} {kind} model")
    if c.web_corpus and str(kind) != "embedder":
        raise ExportError(f"{arg('web_corpus')}: the page searches with an embedder; this is "
                          f"{kind.article()} {kind} model")


def check_web_request(c, out):
    """Refuses, before any work, a web folder that cannot be written (or
    that would hold ``out``, the ``.tflite``); fetches the runtime once."""
    if c.web_corpus and not c.web:
        raise ExportError(f"{arg('web_corpus')} is for {arg('web')} (the page searches it)")
    if c.web_corpus:
        read_web_corpus(c.web_corpus)
    if not c.web:
        return
    if out is not None and os.path.abspath(out).startswith(os.path.abspath(c.web) + os.sep):
        raise ExportError(f"{out}: the .tflite goes outside {arg('web')} {c.web} (the "
                          f"folder gets its own copy)")
    if c.with_tokenizer:
        raise ExportError(f"{arg('web')} takes ids-in files; LiteRT.js has no string "
                          f"tensors and no web runtime has tf-text's tokenizer ops: drop "
                          f"{arg('with_tokenizer')}")
    _check_folder(c.web, c.overwrite)
    runtime_folder()


def _check_folder(folder, overwrite):
    if not os.path.exists(folder):
        return
    if not os.path.isdir(folder):
        raise ExportError(f"{folder}: exists and is not a folder")
    if not os.listdir(folder):
        return
    ours = _our_files(folder)
    if ours is None:
        raise ExportError(f"{folder}: holds files that albert-keras did not write; give an "
                          f"empty or new folder")
    if not overwrite:
        raise ExportError(f"{folder}: exists; pass {arg('overwrite')} to replace it")


def _our_files(folder):
    """The files an earlier ``--web`` wrote into ``folder`` (its
    ``model.json`` lists them), or None when it is not such a folder."""
    try:
        with open(os.path.join(folder, "model.json"), encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != WEB_FORMAT:
        return None
    # only names inside the folder: a hand-edited list removes nothing outside it
    return [name for name in record.get("files", []) if isinstance(name, str)
            and not os.path.isabs(name) and ".." not in name.split("/")]


def runtime_folder():
    """The ``node_modules`` of the pinned web runtime, installed once.

    Raises:
        ExportError: npm is missing or ``npm ci`` failed.
    """
    lock = _read(os.path.join(_HERE, "package-lock.json"))
    key = hashlib.sha256(lock + _read(os.path.join(_HERE, "package.json"))).hexdigest()[:16]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(cache, "albert_keras", "web-runtime", key)
    if os.path.isdir(os.path.join(folder, "node_modules")):
        return os.path.join(folder, "node_modules")
    npm = shutil.which("npm")
    if npm is None:
        raise ExportError(f"{arg('web')} copies LiteRT.js and tokenizers.js into the folder "
                          f"and fetches them once with npm, which is not installed here: "
                          f"install Node.js (it brings npm)")
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    staging = tempfile.mkdtemp(dir=os.path.dirname(folder), prefix=".install-")
    try:
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(os.path.join(_HERE, name), os.path.join(staging, name))
        done = subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund",
                               "--loglevel=error"], cwd=staging, capture_output=True,
                              text=True, timeout=900)
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["no message"])[-1]
            raise ExportError(f"npm ci of the web runtime failed: {said}")
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return os.path.join(folder, "node_modules")


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def web_config(sidecar, tokenizer, files, corpus=False):
    """``model.json``: what ``albert.js`` reads of the sidecar, the runtime
    that runs the file and, for MediaPipe, the text steps it lacks."""
    keys = ("kind", "task", "labels", "quantize", "sequence_length", "signatures", "inputs",
            "outputs", "special_ids", "tokenizer", "truncate", "source", "base_model",
            "size_bytes", "sha256")
    return {"format": WEB_FORMAT, "model": MODEL_FILE, "files": sorted(files),
            "runtime": "mediapipe" if sidecar.get("metadata") else "litert",
            "runtime_versions": _versions(), "prepare": tokenizer.text_steps(),
            "corpus": CORPUS_FILE if corpus else None,
            **{key: sidecar.get(key) for key in keys}}


def _versions():
    lock = json.loads(_read(os.path.join(_HERE, "package-lock.json")))
    return {path.split("node_modules/", 1)[1]: entry["version"]
            for path, entry in lock["packages"].items() if path}


def write_web_folder(folder, model, sidecar, card, tokenizer, overwrite=False, corpus=None):  # noqa: PLR0913 (the export's files, each a part of the folder)
    """Writes the web folder for an exported ``.tflite``.

    Args:
        folder: where (new, empty, or an earlier web folder with ``overwrite``).
        model: the validated ``.tflite``'s bytes (written as ``model.tflite``).
        sidecar: its sidecar dict (written as ``sidecar.json``).
        card: its model card's text (written as ``MODEL.md``).
        tokenizer: the model's tokenizer (``text.registry``).
        overwrite: replace the files an earlier export wrote there (only those).
        corpus: an embedder's search corpus (``web_corpus.corpus_record``),
            written as ``corpus.json``, or None.

    Example:
    >>> write_web_folder("site", blob, sidecar, card, tokenizer)  # doctest: +SKIP
    """
    from albert_keras.text.tokenizer_json import tokenizer_config
    from albert_keras.text.tokenizer_json import tokenizer_json

    _check_folder(folder, overwrite)
    modules = runtime_folder()
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    staging = tempfile.mkdtemp(dir=parent, prefix=".web-")
    mediapipe = bool(sidecar.get("metadata"))
    try:
        # MediaPipe reads the tokenizer packed in the file
        texts = {} if mediapipe else {"tokenizer.json": tokenizer_json(tokenizer),
                                      "tokenizer_config.json": tokenizer_config(tokenizer)}
        texts.update({SIDECAR_FILE: json.dumps(sidecar, indent=2, sort_keys=True),
                      CARD_FILE: card})
        if corpus is not None:
            texts[CORPUS_FILE] = json.dumps(corpus)
        with open(os.path.join(staging, MODEL_FILE), "wb") as f:
            f.write(model)
        for name, text in texts.items():
            with open(os.path.join(staging, name), "w", encoding="utf-8") as f:
                f.write(text)
        copies = {os.path.join(_HERE, name): name for name in PAGE_FILES}
        copies.update({os.path.join(modules, source): target for source, target in
                       (MEDIAPIPE_FILES if mediapipe else LITERT_FILES).items()})
        for source, target in copies.items():
            os.makedirs(os.path.dirname(os.path.join(staging, target)), exist_ok=True)
            shutil.copyfile(source, os.path.join(staging, target))
        files = [*texts, MODEL_FILE, *copies.values(), "model.json"]
        write_json(os.path.join(staging, "model.json"),
                   web_config(sidecar, tokenizer, files, corpus is not None))
        _move_into_place(staging, folder, files)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def _move_into_place(staging, folder, files):
    """``staging``'s files into ``folder``: a new folder is renamed into
    place; an earlier web folder loses the files it listed (nothing else)
    and takes the new ones."""
    if not os.path.exists(folder) or not os.listdir(folder):
        if os.path.isdir(folder):
            os.rmdir(folder)
        os.replace(staging, folder)
        return
    for name in _our_files(folder) or []:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            os.remove(path)
    for name in files:
        target = os.path.join(folder, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.replace(os.path.join(staging, name), target)
