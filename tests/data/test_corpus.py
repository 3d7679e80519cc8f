import json
import os

import pytest

from albert_keras.data.corpus import CorpusError
from albert_keras.data.corpus import CorpusStats
from albert_keras.data.corpus import read_documents
from albert_keras.data.corpus import sotu_files
from albert_keras.data.sentence_split import split_sentences


def test_sentence_splitting():
    text = ("Mr. Smith went to Washington, D.C. on Jan. 5. He stayed! "
            "Did the U.S. Senate agree? \"Yes.\" J. Adams wrote 3 letters.")
    assert split_sentences(text) == [
        "Mr. Smith went to Washington, D.C. on Jan. 5.",
        "He stayed!",
        "Did the U.S. Senate agree?",
        "\"Yes.\"",
        "J. Adams wrote 3 letters.",
    ]
    assert split_sentences("今天天气很好。我们去公园吧！好吗？") == [
        "今天天气很好。", "我们去公园吧！", "好吗？"]
    assert split_sentences("   ") == []


def test_lines_layout_skips_and_counts(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("One. Two.\nThree.\n\n\n\nOnly one sentence.\n\nAlpha. Beta. Gamma.\n", encoding="utf-8")
    stats = CorpusStats()
    docs = list(read_documents([str(path)], stats=stats))
    assert docs == [["One.", "Two.", "Three."], ["Alpha.", "Beta.", "Gamma."]]
    assert stats.documents == 2 and stats.skipped_one_sentence == 1


def test_file_layout_and_folders(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("First para. Second.\n\nThird para.\n")
    (tmp_path / "sub" / "b.txt").write_text("Other doc. More.\n")
    (tmp_path / "ignored.bin").write_bytes(b"\xff")
    docs = list(read_documents([str(tmp_path)], layout="file"))
    assert docs == [["First para.", "Second.", "Third para."], ["Other doc.", "More."]]


def test_jsonl(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"body": "Line one. Line two.\nLine three."}) + "\n\n"
                    + json.dumps({"body": ""}) + "\n")
    stats = CorpusStats()
    docs = list(read_documents([str(path)], text_field="body", stats=stats))
    assert docs == [["Line one.", "Line two.", "Line three."]]
    assert stats.skipped_empty == 1
    with pytest.raises(CorpusError, match=r"c.jsonl:1: no 'text' field"):
        list(read_documents([str(path)]))
    path.write_text('{"text": "ok. ok."}\n{broken\n')
    with pytest.raises(CorpusError, match=r"c.jsonl:2: invalid JSON"):
        list(read_documents([str(path)]))


def test_bad_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"Good line. Fine.\nBad \xff\xfe byte. Here.\n")
    with pytest.raises(CorpusError, match=r"bad.txt:2: not valid UTF-8"):
        list(read_documents([str(path)]))
    stats = CorpusStats()
    docs = list(read_documents([str(path)], errors="replace", stats=stats))
    assert "\ufffd" in docs[0][2] and stats.replaced_bytes_lines == 1


def test_extremely_long_line_is_split(tmp_path):
    path = tmp_path / "long.txt"
    path.write_text(" ".join(["word"] * 200_000) + "\nEnd. Really.\n")
    stats = CorpusStats()
    docs = list(read_documents([str(path)], stats=stats))
    assert stats.long_lines_split == 1
    assert max(len(s) for s in docs[0]) <= 2000 and len(docs[0]) > 400


def test_missing_input():
    with pytest.raises(CorpusError, match="nowhere.txt: no such file"):
        list(read_documents(["nowhere.txt"]))


def test_sotu_corpus_is_one_document_per_speech():
    files = sotu_files()
    assert len(files) >= 240
    docs = list(read_documents(files[:3], layout="file"))
    assert len(docs) == 3 and all(len(d) > 10 for d in docs)


def test_tokenizer_trains_on_one_sentence_documents_and_names_an_empty_corpus(tmp_path):
    from albert_keras.data.corpus import train_corpus_tokenizer
    from albert_keras.data.data_config import DataConfig
    from albert_keras.text.spm_trainer import TokenizerConfig

    short = tmp_path / "short.txt"
    short.write_text("One lone sentence here.\n\nAnother lone one.\n\nA third one.\n",
                     encoding="utf-8")
    path, stats = train_corpus_tokenizer([str(short)], DataConfig(), TokenizerConfig(
        vocab_size=40), str(tmp_path / "short.model"))
    assert os.path.isfile(path) and stats.documents == 3

    empty = tmp_path / "empty.txt"
    empty.write_text("\n   \n\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"empty.txt: no text to train a tokenizer on"):
        train_corpus_tokenizer([str(empty)], DataConfig(), TokenizerConfig(vocab_size=40),
                               str(tmp_path / "empty.model"))
    assert sorted(os.listdir(tmp_path)) == ["empty.txt", "short.model", "short.txt",
                                            "short.vocab"]


def test_csv_and_tsv_rows_are_documents(tmp_path):
    # a task file: quoted fields with commas and a newline, a label column
    path = tmp_path / "train.csv"
    path.write_text('\ufefflabel,text\n'
                    'a,"First row, one. Its second."\n'
                    'b,"Two paragraphs.\nThe second one."\n'
                    'c,\n', encoding="utf-8")
    stats = CorpusStats()
    docs = list(read_documents([str(path)], stats=stats))
    assert docs == [["First row, one.", "Its second."], ["Two paragraphs.", "The second one."]]
    assert stats.documents == 2 and stats.skipped_empty == 1
    tsv = tmp_path / "train.tsv"
    tsv.write_text("body\tlabel\nOne here. Two here.\tx\n", encoding="utf-8")
    assert list(read_documents([str(tsv)], text_field="body")) == [["One here.", "Two here."]]
    # "lines" still reads a .csv as plain text when asked
    assert list(read_documents([str(tsv)], layout="lines"))[0][0] == "body label"


def test_csv_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("label,text\na,Fine. Fine.\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"t\.csv: no column 'body' \(set --text-field\); "
                                          r"columns are label, text"):
        list(read_documents([str(path)], text_field="body"))
    path.write_text("", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"t\.csv: empty file"):
        list(read_documents([str(path)]))
    path.write_text("label,text\na,Fine. Fine.\nb\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=r"t\.csv:3: 1 fields, no 'text' value"):
        list(read_documents([str(path)]))
    path.write_bytes(b"label,text\n" + b"a,Fine. Fine.\n" * 3000 + b"b,bad \xff byte. Yes.\n")
    with pytest.raises(CorpusError, match=r"t\.csv:3002: not valid UTF-8"):
        list(read_documents([str(path)]))
    stats = CorpusStats()
    docs = list(read_documents([str(path)], errors="replace", stats=stats))
    assert len(docs) == 3001 and stats.replaced_bytes_lines == 1
    path.write_bytes(b'label,text\na,"unclosed quote. Yes.\n')
    with pytest.raises(CorpusError, match=r"t\.csv:2: not valid CSV"):
        list(read_documents([str(path)]))


def test_folders_skip_tables(tmp_path):
    (tmp_path / "a.txt").write_text("One doc. Two.\n", encoding="utf-8")
    (tmp_path / "metadata.csv").write_text("text\nNot. This.\n", encoding="utf-8")
    assert list(read_documents([str(tmp_path)])) == [["One doc.", "Two."]]
