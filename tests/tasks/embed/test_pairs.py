"""Pairs files: read from CSV, TSV and JSONL, bad ones refused in one line
naming the file, the line and the column."""

import json

import pytest

from albert_keras.tasks.embed.pairs import corpus_of
from albert_keras.tasks.embed.pairs import python_pairs
from albert_keras.tasks.embed.pairs import read_pairs
from albert_keras.tasks.readers import TaskDataError


def _csv(path, header, rows):
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def test_pairs_and_triplets_read_from_csv_and_jsonl(tmp_path):
    pairs = read_pairs(_csv(tmp_path / "p.csv", ["anchor", "positive"],
                            [["capital of France?", "Paris is the capital."],
                             ["largest ocean?", "The Pacific."]]))
    assert pairs.columns == {"anchor": ["capital of France?", "largest ocean?"],
                             "positive": ["Paris is the capital.", "The Pacific."]}
    assert pairs.rows == [2, 3] and len(pairs) == 2
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps({"q": f"q{i}", "doc": f"d{i}", "negative": f"n{i}"})
                              for i in range(3)) + "\n", encoding="utf-8")
    # a column called "negative" is read as the hard negatives unless named otherwise
    triplets = read_pairs(str(path), "q", "doc")
    assert triplets.columns["negative"] == ["n0", "n1", "n2"]
    assert triplets.take([2, 0]).columns["anchor"] == ["q2", "q0"]


@pytest.mark.parametrize("header, rows, kwargs, message", [
    (["anchor"], [["a"]], {}, r"p.csv: no column 'positive' \(set --positive-column\); "
                              "columns are anchor"),
    (["anchor", "positive"], [["a", "b"], ["c", " "]], {}, r"p.csv:3: empty text in column "
                                                            "'positive'"),
    (["anchor", "positive"], [], {}, "p.csv: no pairs"),
    (["anchor", "positive"], [["a", "b"]], {"negative_column": "neg"},
     r"no column 'neg' \(set --negative-column\)"),
    (["anchor", "positive"], [["a", "b"]], {"negative_column": "anchor"},
     "the anchor, positive and negative columns must differ"),
])
def test_bad_pairs_files_are_one_line_errors(tmp_path, header, rows, kwargs, message):
    path = _csv(tmp_path / "p.csv", header, rows)
    with pytest.raises(TaskDataError, match=message):
        read_pairs(path, **kwargs)


def test_the_corpus_holds_each_text_once():
    pairs = python_pairs(["q1", "q2", "q3"], ["same", "other", "same"], ["x", "same", "y"])
    texts, relevant = corpus_of(pairs)
    assert texts == ["same", "other", "x", "y"]
    assert relevant == [{0}, {1}, {0}]


@pytest.mark.parametrize("args, message", [
    ((["a", "b"], ["c"]), "the columns differ in length: anchors 2, positives 1"),
    ((["a", ""], ["c", "d"]), r"anchors\[1\]: empty text"),
    ((["a"], [3]), r"positives\[0\]: int, not a text"),
    (("a", ["c"]), "anchors: a list of texts, got str"),
    (([], []), "anchors: no pairs"),
])
def test_bad_python_pairs_name_the_argument_and_row(args, message):
    with pytest.raises(ValueError, match=message):
        python_pairs(*args)
