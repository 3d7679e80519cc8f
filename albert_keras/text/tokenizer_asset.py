"""A tokenizer's files, held in memory, so a ``.keras`` model can carry them.

An encoder keeps its tokenizer as a ``TokenizerAsset``: the files the
tokenizer kind writes (``spm.model``, or ``vocab.txt`` and
``tokenizer_config.json``) and a record naming the kind, the main file and
the kind's options. Keras' ``save_assets``/``load_assets`` write and read
those files inside the ``.keras`` archive, so a bare model file knows its
special ids and how its text is cut. The host-side tokenizer is built from
the bytes only when asked for: this module imports neither TensorFlow nor
the tokenizer kinds, so a model that carries one still loads on JAX and
torch machines without TensorFlow.
"""

import json
import os
import tempfile

from albert_keras.files import write_json

RECORD_FILE = "tokenizer_kind.json"


class TokenizerAsset:
    """The files of a tokenizer and its record (kind, file, options).

    Args:
        files: ``{file name: bytes}``, as the tokenizer kind wrote them.
        record: ``{"kind": ..., "file": ..., "options": {...}}``.

    Example:
    >>> asset = TokenizerAsset.of(tokenizer)  # doctest: +SKIP
    >>> asset.tokenizer().special_ids["cls"]  # doctest: +SKIP
    2
    """

    def __init__(self, files, record):
        if record.get("file") not in files:
            raise ValueError(f"tokenizer asset: the record names {record.get('file')!r}, "
                             f"which is not among its files {sorted(files)}")
        self.files, self.record = dict(files), dict(record)
        self._tokenizer = None

    @classmethod
    def of(cls, tokenizer):
        """The asset of a host-side tokenizer (its kind writes the files)."""
        with tempfile.TemporaryDirectory() as folder:
            write_record(folder, tokenizer)
            asset = cls.read(folder)
        asset._tokenizer = tokenizer
        return asset

    @classmethod
    def read(cls, folder):
        """The asset written in ``folder``, or None when it holds no record."""
        path = os.path.join(folder or "", RECORD_FILE)
        if not folder or not os.path.isfile(path):
            return None
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
        files = {}
        for name in sorted(os.listdir(folder)):
            if name != RECORD_FILE and os.path.isfile(os.path.join(folder, name)):
                with open(os.path.join(folder, name), "rb") as f:
                    files[name] = f.read()
        return cls(files, record)

    def write(self, folder):
        """Writes the files and the record into ``folder``."""
        for name, data in self.files.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        write_json(os.path.join(folder, RECORD_FILE), self.record)

    @property
    def kind(self):
        return self.record["kind"]

    def kind_class(self):
        """The class of the recorded kind (``text.registry.TOKENIZERS``)."""
        from albert_keras.text.registry import TOKENIZERS

        if self.kind not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer kind {self.kind!r}; known: "
                             f"{', '.join(TOKENIZERS)}")
        return TOKENIZERS[self.kind]

    def tokenizer(self):
        """The host-side tokenizer, built from the bytes on first use."""
        if self._tokenizer is None:
            from albert_keras.text.registry import load_tokenizer

            with tempfile.TemporaryDirectory() as folder:
                self.write(folder)
                # every kind reads its files whole when built, so the
                # temporary folder can go
                self._tokenizer = load_tokenizer(os.path.join(folder, self.record["file"]),
                                                 self.record["kind"],
                                                 self.record.get("options"))
        return self._tokenizer


def write_record(folder, tokenizer):
    """Puts the tokenizer's files in ``folder`` and records its kind, file and
    options (``tokenizer_kind.json``); returns the record."""
    from albert_keras.text.registry import TOKENIZERS

    if tokenizer.kind not in TOKENIZERS:
        raise ValueError(f"unknown tokenizer kind {tokenizer.kind!r}")
    name = tokenizer.save(folder)
    record = {"kind": tokenizer.kind, "file": name}
    if getattr(tokenizer, "options", None):
        record["options"] = tokenizer.options
    write_json(os.path.join(folder, RECORD_FILE), record)
    return record
