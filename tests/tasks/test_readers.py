"""Task file readers: formats and errors that name file and row."""

import json

import pytest

from albert_keras.tasks import readers


def _write(path, text):
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_csv_tsv_jsonl_read_the_same(tmp_path):
    csv_path = _write(tmp_path / "a.csv", 'text,label\n"hello, world",pos\nbye,neg\n')
    tsv_path = _write(tmp_path / "a.tsv", "text\tlabel\nhello, world\tpos\nbye\tneg\n")
    jsonl_path = _write(tmp_path / "a.jsonl", '{"text": "hello, world", "label": "pos"}\n\n'
                        '{"text": "bye", "label": "neg"}\n')
    for path in (csv_path, tsv_path, jsonl_path):
        examples = readers.read_text_table(path)
        assert examples.texts == ["hello, world", "bye"]
        assert examples.labels == ["pos", "neg"]


def test_labels_are_discovered_and_unknown_ones_named(tmp_path):
    assert readers.discover_labels(["10", "9", "2"]) == ["2", "9", "10"]
    assert readers.discover_labels(["b", "a", "b"]) == ["a", "b"]
    path = _write(tmp_path / "e.csv", "text,label\nx,a\ny,c\n")
    examples = readers.read_text_table(path)
    with pytest.raises(readers.TaskDataError, match=r"e\.csv:3: unknown label 'c'"):
        readers.label_ids(path, examples, ["a", "b"])


def test_bad_rows_are_named(tmp_path):
    path = _write(tmp_path / "b.csv", "text,label\nfine,a\n   ,b\n")
    with pytest.raises(readers.TaskDataError, match=r"b\.csv:3: empty text in column 'text'"):
        readers.read_text_table(path)
    with pytest.raises(readers.TaskDataError, match=r"b\.csv: no column 'sentence' \(set --text-column\)"):
        readers.read_text_table(path, text_column="sentence")
    bad_json = _write(tmp_path / "c.jsonl", '{"text": "a", "label": 1}\n{oops\n')
    with pytest.raises(readers.TaskDataError, match=r"c\.jsonl:2: not JSON"):
        readers.read_text_table(bad_json)
    with pytest.raises(readers.TaskDataError, match="unknown format"):
        readers.read_text_table(_write(tmp_path / "d.txt", "x"))
    path = _write(tmp_path / "r.csv", "text,label\nx,1.5\ny,high\n")
    with pytest.raises(readers.TaskDataError, match=r"r\.csv:3: label 'high' is not a number"):
        readers.regression_targets(path, readers.read_text_table(path))


def test_conll(tmp_path):
    path = _write(tmp_path / "t.conll",
                  "-DOCSTART- -X- O\n\nJohn NNP B-PER\nlives VBZ O\n\n\nParis NNP B-LOC\n")
    sentences = readers.read_conll(path)
    assert [(s[0], s[1]) for s in sentences] == [
        (["John", "lives"], ["B-PER", "O"]), (["Paris"], ["B-LOC"])]
    assert sentences[1][2] == 7  # the first line of the sentence
    bad = _write(tmp_path / "u.conll", "John B-PER\nlives\n")
    with pytest.raises(readers.TaskDataError, match=r"u\.conll:2: expected 'token tag'"):
        readers.read_conll(bad)


def _squad(path, answer_start):
    data = {"data": [{"paragraphs": [{
        "context": "Le café est à Paris.",
        "qas": [{"id": "q1", "question": "Où?", "answers": [{"text": "à Paris",
                                                             "answer_start": answer_start}]},
                {"id": "q2", "question": "Quoi?", "answers": [], "is_impossible": True}],
    }]}]}
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_squad(tmp_path):
    examples = readers.read_squad(_squad(tmp_path / "s.json", 12))
    assert examples[0].answers == [("à Paris", 12)]
    assert examples[1].is_impossible and examples[1].answers == []
    with pytest.raises(readers.TaskDataError,
                       match=r"s2\.json: question q1: answer 'à Paris' is not in its context"):
        readers.read_squad(_squad(tmp_path / "s2.json", 3))


def test_choices(tmp_path):
    rows = [{"context": "The sky", "question": "is", "choices": ["blue", "green"], "label": 0},
            {"context": "Grass", "choices": ["blue", "green"], "label": "green"}]
    path = _write(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in rows))
    examples = readers.read_choices(path)
    assert examples.choices == [["is blue", "is green"], ["blue", "green"]]
    assert examples.labels == [0, 1]
    rows.append({"context": "x", "choices": ["a", "b", "c"], "label": 0})
    path = _write(tmp_path / "d.jsonl", "\n".join(json.dumps(r) for r in rows))
    with pytest.raises(readers.TaskDataError, match=r"d\.jsonl:3: 3 choices, but earlier rows have 2"):
        readers.read_choices(path)


def test_equal_numbers_are_one_label_and_json_values_keep_their_spelling(tmp_path):
    path = _write(tmp_path / "n.jsonl", "\n".join(json.dumps(r) for r in [
        {"text": "a", "label": 0}, {"text": "b", "label": 0.0}, {"text": "c", "label": "0.0"},
        {"text": "d", "label": True}, {"text": "e", "label": " 1.50"}]) + "\n")
    examples = readers.read_text_table(path)
    names = readers.discover_labels(examples.labels)
    assert names == ["0", "1.5", "true"]
    assert readers.label_ids(path, examples, names) == [0, 0, 0, 2, 1]
    # a model trained before labels were canonical knows "0.0": it still matches
    assert readers.label_ids(path, examples, ["0.0", "1.5", "true"]) == [0, 0, 0, 2, 1]


@pytest.mark.parametrize("row, words", [
    ({"text": "a", "label": [1, 2]}, "n.jsonl:1: column 'label' holds a JSON list"),
    ({"text": "a", "label": {"x": 1}}, "n.jsonl:1: column 'label' holds a JSON object"),
    ({"text": {"body": "a"}, "label": "x"}, "n.jsonl:1: column 'text' holds a JSON object"),
    ({"text": 12, "label": "x"}, "n.jsonl:1: column 'text' holds a number"),
])
def test_non_scalar_labels_and_texts_are_refused_with_file_and_row(tmp_path, row, words):
    path = _write(tmp_path / "n.jsonl", json.dumps(row) + "\n")
    with pytest.raises(readers.TaskDataError) as error:
        readers.read_text_table(path)
    assert str(error.value).endswith(words) or words in str(error.value)


@pytest.mark.parametrize("value", ["nan", "1e999", "-inf", "true"])
def test_regression_targets_must_be_finite_numbers(tmp_path, value):
    path = _write(tmp_path / "r.csv", f"text,label\na,1.5\nb,{value}\n")
    examples = readers.read_text_table(path)
    with pytest.raises(readers.TaskDataError, match=r"r\.csv:3: label .* (not a finite number|"
                                                    r"is not a number)"):
        readers.regression_targets(path, examples)


def test_many_numeric_labels_suggest_regression():
    assert readers.looks_like_regression([str(i / 10) for i in range(40)], 40)
    assert not readers.looks_like_regression([str(i) for i in range(5)], 400)
    assert not readers.looks_like_regression([f"c{i}" for i in range(40)], 40)
