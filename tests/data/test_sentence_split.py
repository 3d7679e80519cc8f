"""Long-line handling: the pieces always reassemble the text, whatever it is."""

import re

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from albert_keras.data import corpus
from albert_keras.data.corpus import CorpusStats
from albert_keras.data.corpus import read_documents
from albert_keras.data.sentence_split import split_long
from albert_keras.data.sentence_split import split_sentences

_TEXT = st.text(alphabet=st.sampled_from(list("ab .!?\n\t'\"Aé日😀")), max_size=300)


def _squash(text):
    return re.sub(r"\s+", "", text)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=_TEXT, max_chars=st.integers(1, 40))
def test_split_long_pieces_reassemble_the_text(text, max_chars):
    pieces = split_long(text, max_chars)
    assert all(0 < len(p) <= max_chars for p in pieces)
    assert _squash("".join(pieces)) == _squash(text)
    # a cut at whitespace keeps the words: joining with spaces gives the
    # whitespace-normalised text back when no word is longer than a piece
    if all(len(w) <= max_chars for w in text.split()):
        assert " ".join(" ".join(pieces).split()) == " ".join(text.split())


@settings(max_examples=200, deadline=None, derandomize=True)
@given(text=_TEXT)
def test_sentences_reassemble_the_paragraph(text):
    assert " ".join(split_sentences(text)) == " ".join(text.split())


@settings(max_examples=100, deadline=None, derandomize=True)
@given(line=st.text(alphabet=st.sampled_from(list("ab .Xé日😀")), min_size=1, max_size=200),
       chunk=st.integers(4, 30))
def test_a_long_line_read_in_pieces_keeps_every_character(tmp_path_factory, line, chunk):
    path = tmp_path_factory.mktemp("c") / "c.txt"
    path.write_text(f"First line here.\n{line}\nLast line.\n", encoding="utf-8")
    pieces = list(corpus._lines(str(path), "strict", CorpusStats(), chunk=chunk))
    lines = ["First line here.", line, "Last line."]
    for number, expected in enumerate(lines, 1):
        mine = [(t, whole) for n, t, whole in pieces if n == number]
        # every piece but the last is marked as part of a longer line
        assert [whole for _, whole in mine] == [False] * (len(mine) - 1) + [True]
        assert "".join(t for t, _ in mine) == expected
    assert [n for n, _, _ in pieces] == sorted(n for n, _, _ in pieces)
    assert all(len(t.encode()) <= 2 * chunk for _, t, _ in pieces)


def test_a_line_without_any_space_or_period_becomes_bounded_sentences(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus, "_LINE_CHUNK", 1000)
    text = "word " * 3000 + "é" * 5000 + "\n\nA second doc. It has two sentences.\n"
    (tmp_path / "c.txt").write_text(text, encoding="utf-8")
    docs = list(read_documents([str(tmp_path / "c.txt")], layout="lines",
                               max_sentence_chars=300))
    assert len(docs) == 2
    assert all(len(s) <= 300 for s in docs[0])
    assert _squash("".join(docs[0])) == _squash(text.split("\n\n")[0])
    assert docs[1] == ["A second doc.", "It has two sentences."]
