"""Reading task files: CSV/TSV/JSONL tables, CoNLL, SQuAD JSON, choice JSONL.

Every error names the file and the row (1-based line for text formats, the
question id for SQuAD), so a bad record can be found and fixed.
"""

import csv
import dataclasses
import io
import json
import math
import os


class TaskDataError(ValueError):
    """A task file that cannot be used; the message names file and row."""


def _format(path):
    ext = os.path.splitext(path)[1].lower()
    if ext in (".csv", ".tsv", ".jsonl", ".json"):
        return ext[1:]
    raise TaskDataError(f"{path}: unknown format {ext!r}; use .csv, .tsv or .jsonl")


def _read_text(path):
    """The file's text; bad UTF-8 is a one-line error naming file and line."""
    if not os.path.isfile(path):
        raise TaskDataError(f"{path}: no such file")
    with open(path, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise TaskDataError(f"{path}:{line}: not valid UTF-8 ({e.reason})") from None


def read_rows(path):
    """``(row_number, dict)`` for every record of a CSV, TSV or JSONL file."""
    if not os.path.isfile(path):
        raise TaskDataError(f"{path}: no such file")
    fmt = _format(path)
    with io.StringIO(_read_text(path), newline="") as f:
        if fmt in ("csv", "tsv"):
            reader = csv.DictReader(f, delimiter="," if fmt == "csv" else "\t")
            if not reader.fieldnames:
                raise TaskDataError(f"{path}: empty file (no header row)")
            # Row numbers are file lines: the header is line 1.
            return [(i + 2, row) for i, row in enumerate(reader)], list(reader.fieldnames)
        rows, columns = [], []
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise TaskDataError(f"{path}:{number}: not JSON: {e.msg}") from None
            if not isinstance(row, dict):
                raise TaskDataError(f"{path}:{number}: expected a JSON object")
            rows.append((number, row))
            columns.extend(k for k in row if k not in columns)
        return rows, columns


def need_column(path, columns, name, flag):
    """Refuses a file without the column ``name`` (set by ``flag``)."""
    if name not in columns:
        raise TaskDataError(
            f"{path}: no column {name!r} (set {flag}); columns are {', '.join(map(str, columns))}"
        )


_JSON_KINDS = {dict: "a JSON object", list: "a JSON list", bool: "true/false",
               int: "a number", float: "a number"}


def text_field(path, number, row, column):
    """The non-empty text in ``column`` of the record on line ``number``."""
    value = row.get(column)
    if value is not None and not isinstance(value, str):
        kind = _JSON_KINDS.get(type(value), type(value).__name__)
        raise TaskDataError(f"{path}:{number}: column {column!r} holds {kind}, not a text")
    if value is None or not value.strip():
        raise TaskDataError(f"{path}:{number}: empty text in column {column!r}")
    return value


def _number_name(number):
    # equal numbers are one label: 0, 0.0 and "0.0" are all "0"
    if number.is_integer() and abs(number) < 2 ** 53:
        return str(int(number))
    return repr(number)


def canonical_label(value):
    """One spelling per label value: equal numbers are one label (``0``,
    ``0.0`` and ``"0.0"`` are ``"0"``), JSON ``true``/``false`` keep their JSON
    spelling, text is stripped. Raises ``ValueError`` for lists and objects.

    Example:
    >>> [canonical_label(v) for v in (0, 0.0, "0.0", " 1.50", True, "pos")]
    ['0', '0', '0', '1.5', 'true', 'pos']
    """
    if isinstance(value, (dict, list)):
        raise ValueError(f"a label must be one value, not {_JSON_KINDS[type(value)]}")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = str(value).strip()
        try:
            number = float(text)
        except ValueError:
            return text
    return _number_name(number) if math.isfinite(number) else str(value).strip()


@dataclasses.dataclass
class TextExamples:
    """Texts (and pairs) with raw labels, as read from a table."""

    texts: list
    pairs: list  # None when there is no second text
    labels: list  # raw strings / numbers; None when the file has no labels
    rows: list  # row numbers, for error messages


def read_text_table(path, text_column="text", text_pair_column=None, label_column="label",
                    require_labels=True):
    """Reads classification/regression examples from CSV, TSV or JSONL."""
    rows, columns = read_rows(path)
    if not rows:
        raise TaskDataError(f"{path}: no examples")
    need_column(path, columns, text_column, "--text-column")
    if text_pair_column:
        need_column(path, columns, text_pair_column, "--text-pair-column")
    has_labels = label_column in columns
    if require_labels and not has_labels:
        need_column(path, columns, label_column, "--label-column")
    texts, pairs, labels, numbers = [], [], [], []
    for number, row in rows:
        texts.append(text_field(path, number, row, text_column))
        if text_pair_column:
            pairs.append(text_field(path, number, row, text_pair_column))
        if has_labels:
            label = row.get(label_column)
            if label is None or str(label).strip() == "":
                raise TaskDataError(f"{path}:{number}: empty label in column {label_column!r}")
            if isinstance(label, (dict, list)):
                raise TaskDataError(f"{path}:{number}: column {label_column!r} holds "
                                    f"{_JSON_KINDS[type(label)]}; a label is one value")
            labels.append(label)
        numbers.append(number)
    return TextExamples(texts, pairs if text_pair_column else None,
                        labels if has_labels else None, numbers)


def discover_labels(values):
    """Sorted label names, one per value (``canonical_label``), numerically
    when every label is a number."""
    names = sorted({canonical_label(v) for v in values})
    try:
        return sorted(names, key=float)
    except ValueError:
        return names


def looks_like_regression(label_names, rows):
    """Whether labels that are all numbers are too many to be classes."""
    try:
        [float(name) for name in label_names]
    except ValueError:
        return False
    return len(label_names) > 20 and len(label_names) > rows / 5


def label_ids(path, examples, label_names):
    """Labels to ids; an unseen label is an error naming its row."""
    index = {canonical_label(name): i for i, name in enumerate(label_names)}
    ids = []
    for number, label in zip(examples.rows, examples.labels):
        name = canonical_label(label)
        if name not in index:
            raise TaskDataError(
                f"{path}:{number}: unknown label {name!r}; the model knows "
                f"{', '.join(label_names)}"
            )
        ids.append(index[name])
    return ids


def regression_targets(path, examples):
    """The labels as finite floats; anything else is an error naming its row."""
    values = []
    for number, label in zip(examples.rows, examples.labels):
        try:
            if isinstance(label, bool):
                raise ValueError
            value = float(label)
        except (TypeError, ValueError):
            raise TaskDataError(f"{path}:{number}: label {label!r} is not a number") from None
        if not math.isfinite(value):
            raise TaskDataError(f"{path}:{number}: label {label!r} is not a finite number")
        values.append(value)
    return values


# -- CoNLL -------------------------------------------------------------------------


def read_conll(path, require_tags=True):
    """Sentences from a CoNLL file: one ``token ... tag`` per line, blank
    lines between sentences, ``-DOCSTART-`` lines skipped.

    Returns ``(words, tags, first_line)`` per sentence; ``tags`` is None
    for a file of bare tokens when ``require_tags`` is False.
    """
    if not os.path.isfile(path):
        raise TaskDataError(f"{path}: no such file")
    sentences = []
    words, tags, first = [], [], None

    def flush():
        if words:
            sentences.append((list(words), list(tags) if tags else None, first))
        words.clear()
        tags.clear()

    with io.StringIO(_read_text(path)) as f:
        for number, line in enumerate(f, 1):
            fields = line.split()
            if not fields or fields[0] == "-DOCSTART-":
                flush()
                continue
            if not words:
                first = number
            if len(fields) < 2:
                if require_tags:
                    raise TaskDataError(f"{path}:{number}: expected 'token tag', got {line.strip()!r}")
                if tags:
                    raise TaskDataError(f"{path}:{number}: some lines have tags and some not")
            else:
                tags.append(fields[-1])
            words.append(fields[0])
    flush()
    if not sentences:
        raise TaskDataError(f"{path}: no sentences")
    return sentences


# -- SQuAD -------------------------------------------------------------------------


@dataclasses.dataclass
class QAExample:
    qid: str
    question: str
    context: str
    answers: list  # [(text, char_start)], empty when impossible
    is_impossible: bool


def _of_type(value, kind, where, what):
    """``value`` if it is a ``kind``, else a one-line error naming ``what``."""
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    raise TaskDataError(f"{where}: {what} must be a {kind.__name__}, not "
                        f"{type(value).__name__}")


def _typed(record, key, kind, default, where):
    """``record[key]`` if it is a ``kind`` (``default`` when absent)."""
    return _of_type(record[key], kind, where, repr(key)) if key in record else default


def read_squad(path, require_answers=True):
    """Questions from a SQuAD v1.1 / v2.0 JSON file.

    Every answer is checked against its context: the text at
    ``answer_start`` must be the answer, or the error names the question.
    """
    if not os.path.isfile(path):
        raise TaskDataError(f"{path}: no such file")
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise TaskDataError(f"{path}: not JSON: {e.msg} at line {e.lineno}") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise TaskDataError(f"{path}: not a SQuAD file (no top-level 'data' list)")
    examples = []
    for a, article in enumerate(data["data"]):
        article = _of_type(article, dict, f"{path}: article {a}", "an article")
        for p, paragraph in enumerate(_typed(article, "paragraphs", list, [],
                                             f"{path}: article {a}")):
            at = f"{path}: article {a}, paragraph {p}"
            paragraph = _of_type(paragraph, dict, at, "a paragraph")
            context = _typed(paragraph, "context", str, "", at)
            for qa in _typed(paragraph, "qas", list, [], at):
                qa = _of_type(qa, dict, at, "a question")
                examples.append(_squad_question(qa, context, path, len(examples),
                                                require_answers))
    if not examples:
        raise TaskDataError(f"{path}: no questions")
    return examples


def _squad_question(qa, context, path, index, require_answers):
    """One checked ``QAExample`` (``index`` names a question without an id)."""
    qid = str(qa.get("id", index))
    where = f"{path}: question {qid}"
    question = _typed(qa, "question", str, "", where)
    if not question.strip():
        raise TaskDataError(f"{where}: empty question")
    if not context.strip():
        raise TaskDataError(f"{where}: empty context")
    impossible = bool(qa.get("is_impossible", False))
    answers = [] if impossible else [
        _squad_answer(answer, context, where)
        for answer in _typed(qa, "answers", list, [], where)]
    if require_answers and not impossible and not answers:
        raise TaskDataError(f"{where}: no answers and not marked is_impossible")
    return QAExample(qid, question, context, answers, impossible)


def _squad_answer(answer, context, where):
    """``(text, start)`` of an answer that is where it says in its context."""
    answer = _of_type(answer, dict, where, "an answer")
    text = _typed(answer, "text", str, "", where)
    start = _typed(answer, "answer_start", int, None, where)
    if start is None:
        start = context.find(text)
    if not text or start < 0 or context[start:start + len(text)] != text:
        raise TaskDataError(
            f"{where}: answer {text!r} is not in its context at "
            f"character {answer.get('answer_start')}"
        )
    return text, int(start)


# -- multiple choice -----------------------------------------------------------------


@dataclasses.dataclass
class ChoiceExamples:
    contexts: list
    choices: list  # list of lists, all the same length
    labels: list  # choice index, or None
    rows: list


def read_choices(path, context_column="context", question_column="question",
                 choices_column="choices", label_column="label", require_labels=True):
    """RACE/SWAG-style JSONL: a context, an optional question, a list of
    choices and the index (or the text) of the right one.

    Each pair fed to the model is ``(context, question + " " + choice)``,
    as the original RACE code does.
    """
    rows, columns = read_rows(path)
    if not rows:
        raise TaskDataError(f"{path}: no examples")
    need_column(path, columns, context_column, "--context-column")
    need_column(path, columns, choices_column, "--choices-column")
    contexts, choices, labels, numbers = [], [], [], []
    count = None
    for number, row in rows:
        context = text_field(path, number, row, context_column)
        options = row.get(choices_column)
        if not isinstance(options, list) or len(options) < 2:
            raise TaskDataError(f"{path}:{number}: {choices_column!r} must be a list of 2+ choices")
        if count is not None and len(options) != count:
            raise TaskDataError(
                f"{path}:{number}: {len(options)} choices, but earlier rows have {count}"
            )
        count = len(options)
        question = str(row.get(question_column) or "").strip()
        seconds = []
        for option in options:
            if not str(option).strip():
                raise TaskDataError(f"{path}:{number}: an empty choice")
            seconds.append(f"{question} {option}".strip())
        label = row.get(label_column)
        if label is None:
            if require_labels:
                raise TaskDataError(f"{path}:{number}: no {label_column!r}")
        elif isinstance(label, str) and not label.isdigit():
            if label not in options:
                raise TaskDataError(f"{path}:{number}: label {label!r} is not one of the choices")
            label = options.index(label)
        else:
            label = int(label)
            if not 0 <= label < count:
                raise TaskDataError(f"{path}:{number}: label {label} is out of range 0..{count - 1}")
        contexts.append(context)
        choices.append(seconds)
        labels.append(label)
        numbers.append(number)
    return ChoiceExamples(contexts, choices, labels if labels[0] is not None else None, numbers)
