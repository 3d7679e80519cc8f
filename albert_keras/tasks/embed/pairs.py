"""Pairs files: a query and the text that answers it per row (and a hard
negative), read from CSV, TSV or JSONL, and packed column by column."""

import dataclasses
import logging
import math

import numpy as np

from albert_keras.tasks import readers
from albert_keras.text.packer import pack_texts

logger = logging.getLogger(__name__)

# The flags that name each column, for errors.
_FLAGS = {"anchor": "--anchor-column", "positive": "--positive-column",
          "negative": "--negative-column"}
# A pairs file with this column is scored pairs (STS): each pair's gold
# similarity, which an embedder is scored on by Spearman's correlation.
SCORE_COLUMN = "score"


@dataclasses.dataclass
class PairExamples:
    """The texts of a pairs file, column by column, with their line numbers.

    Args:
        columns: ``{"anchor": texts, "positive": texts}`` and, with hard
            negatives, ``"negative"``.
        rows: each row's line in the file (1-based; a CSV's header is 1).
        scores: each pair's gold similarity (a file with a ``score``
            column: STS), or None.
    """

    columns: dict
    rows: list
    scores: list = None

    def __len__(self):
        return len(self.rows)

    def take(self, examples):
        """The rows ``examples`` (indices), in that order."""
        picked = [int(i) for i in examples]
        return PairExamples({name: [texts[i] for i in picked]
                             for name, texts in self.columns.items()},
                            [self.rows[i] for i in picked],
                            None if self.scores is None else [self.scores[i] for i in picked])


def read_pairs(path, anchor_column="anchor", positive_column="positive", negative_column=None):
    """The pairs (or triplets) of a CSV, TSV or JSONL file.

    Every row needs a non-empty anchor and positive (and negative, when
    there is a negative column); an error names the file, the line and the
    column. With ``negative_column`` None, a column called ``negative`` is
    read as the hard negatives when the file has one. A file with a
    ``score`` column is scored pairs (STS): each row's number is read as
    the pair's gold similarity.

    Args:
        path: the file.
        anchor_column: the anchors' column.
        positive_column: the positives' column.
        negative_column: the hard negatives' column, or None.

    Returns:
        ``PairExamples``.

    Example:
        ```python
        read_pairs("pairs.csv").columns["anchor"][:1]  # ['capital of France?']
        ```
    """
    rows, columns = readers.read_rows(path)
    if not rows:
        raise readers.TaskDataError(f"{path}: no pairs")
    if negative_column is None and "negative" in columns:
        negative_column = "negative"
        logger.info(f"{path}: column 'negative' read as hard negatives")
    wanted = {"anchor": anchor_column, "positive": positive_column}
    if negative_column:
        wanted["negative"] = negative_column
    for name, column in wanted.items():
        readers.need_column(path, columns, column, _FLAGS[name])
    if len(set(wanted.values())) < len(wanted):
        raise readers.TaskDataError(f"{path}: the anchor, positive and negative columns must "
                                    f"differ; got {', '.join(wanted.values())}")
    texts = {name: [readers.text_field(path, number, row, column) for number, row in rows]
             for name, column in wanted.items()}
    scores = ([_score(path, number, row) for number, row in rows]
              if SCORE_COLUMN in columns else None)
    return PairExamples(texts, [number for number, _ in rows], scores)


def _score(path, number, row):
    """The finite number in the ``score`` column of line ``number``."""
    value = row.get(SCORE_COLUMN)
    try:
        score = float(value)
    except (TypeError, ValueError):
        score = math.nan
    if isinstance(value, bool) or not math.isfinite(score):
        raise readers.TaskDataError(f"{path}:{number}: column {SCORE_COLUMN!r} holds "
                                    f"{value!r}, not a number")
    return score


def pack_pairs(tokenizer, examples, sequence_length, truncate, lengths=None):
    """``{column: encoder inputs}``: each column's texts packed alone.

    Args:
        tokenizer: the host-side tokenizer.
        examples: ``PairExamples``.
        sequence_length: texts are cut to this many pieces.
        truncate: how a long text is cut (``SegmentPacker``'s modes).
        lengths: an optional list; every text's whole length is appended
            (the anchors', then the positives', ...), to count the cut ones.
    """
    return {name: pack_texts(tokenizer, texts, None, sequence_length, truncate,
                             lengths=lengths)
            for name, texts in examples.columns.items()}


def corpus_of(examples):
    """``(texts, relevant)``: the distinct positives and negatives of a
    pairs file as a corpus, and per anchor the set holding its positive's
    place in it (a text that is several rows' positive is one corpus row)."""
    place, texts = {}, []
    for name in ("positive", "negative"):
        for text in examples.columns.get(name, ()):
            if text not in place:
                place[text] = len(texts)
                texts.append(text)
    relevant = [{place[text]} for text in examples.columns["positive"]]
    return texts, relevant


def python_pairs(anchors, positives, negatives=None):
    """``PairExamples`` of Python lists, checked as a file's rows are: each
    column a list of non-empty strings, all of one length; errors name the
    argument and the row."""
    columns = {"anchor": anchors, "positive": positives}
    if negatives is not None:
        columns["negative"] = negatives
    counts = {}
    for name, column in columns.items():
        if isinstance(column, str) or not hasattr(column, "__len__"):
            raise ValueError(f"{name}s: a list of texts, got {type(column).__name__}")
        for i, text in enumerate(column):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"{name}s[{i}]: "
                                 + ("empty text" if isinstance(text, str) else
                                    f"{type(text).__name__}, not a text"))
        counts[name] = len(column)
    if len(set(counts.values())) > 1:
        raise ValueError("the columns differ in length: " + ", ".join(
            f"{name}s {count}" for name, count in counts.items()))
    if not counts["anchor"]:
        raise ValueError("anchors: no pairs")
    return PairExamples({name: list(column) for name, column in columns.items()},
                        list(np.arange(1, counts["anchor"] + 1)))
