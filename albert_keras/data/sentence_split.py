"""Splitting paragraphs into sentences with rules, no downloaded model.

Written by hand because the libraries that do this well (nltk punkt, spaCy,
stanza) fetch their models from a hub at run time, which this project must
not do. The rules: a sentence ends at ``.``, ``!`` or ``?`` (optionally followed
by closing quotes or brackets) when whitespace and an uppercase letter, digit,
quote or bracket follow, unless the word before the period is a known
abbreviation or a single letter (``U.S.``, ``J. Smith``). CJK full stops
(``。！？``) always end a sentence.
"""

import re

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "gov",
    "sen", "rep", "rev", "hon", "pres", "lt", "col", "capt", "sgt", "cmdr", "adm",
    "vs", "etc", "e.g", "i.e", "cf", "al", "no", "nos", "vol", "fig", "art", "sec",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
    "dec", "inc", "co", "corp", "ltd", "dept", "univ", "approx", "est", "u.s",
    "u.k", "d.c", "a.m", "p.m",
}
# The lookbehind starts a match only at the first mark of a run, so a line
# of a million "!" is one linear scan, not a scan from every position.
_BOUNDARY = re.compile(
    r"""(?<![.!?])([.!?]+["'\u201d\u2019)\]]*)\s+(?=["'\u201c\u2018(\[]?[A-Z0-9\u00C0-\u024F\u0400-\u04FF])"""
)
_SPACES = re.compile(r"\s+")
_CJK_BOUNDARY = re.compile(r"([\u3002\uff01\uff1f]+)")


_WORD_BEFORE_PERIOD = re.compile(r"([\w.]+)\.$")


def _ends_with_abbreviation(text, start, end):
    """Whether ``text[start:end]`` ends with an abbreviation's period."""
    # Only the tail can hold the word before the period; searching from
    # ``start`` would rescan a long run-on sentence at every period.
    match = _WORD_BEFORE_PERIOD.search(text, max(start, end - 32), end)
    if not match:
        return False
    word = match.group(1).lower()
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha())


def split_sentences(paragraph):
    """Returns the sentences of a paragraph (whitespace-normalised).

    Example:
    >>> split_sentences("Mr. Smith went to Washington. He stayed! Did he?")
    ['Mr. Smith went to Washington.', 'He stayed!', 'Did he?']
    """
    # one regex pass, not str.split(): a 50 MB line would become millions
    # of word objects
    text = _SPACES.sub(" ", paragraph).strip()
    if not text:
        return []
    pieces = []
    for part in _CJK_BOUNDARY.split(text):
        if _CJK_BOUNDARY.fullmatch(part) and pieces:
            pieces[-1] += part
        elif part.strip():
            pieces.append(part.strip())
    sentences = []
    for piece in pieces:
        start = 0
        for match in _BOUNDARY.finditer(piece):
            end = match.end(1)
            if piece[match.start(1)] == "." and _ends_with_abbreviation(piece, start, end):
                continue
            sentences.append(piece[start:end].strip())
            start = match.end()
        tail = piece[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


def split_long(text, max_chars):
    """Cuts a text longer than ``max_chars`` at whitespace (or hard, if none).

    Linear in the length of ``text``: it walks one offset forward instead of
    re-slicing the rest of the text after every cut.

    Example:
    >>> split_long("aaa bbb ccc", 7)  # cut at the last whitespace inside the window
    ['aaa', 'bbb ccc']
    """
    out = []
    start, end = 0, len(text)
    while start < end and text[start].isspace():
        start += 1
    while end - start > max_chars:
        cut = max(text.rfind(c, start, start + max_chars) for c in " \n\t\r\f\v")
        if cut <= start:
            cut = start + max_chars
        piece = text[start:cut].strip()
        if piece:
            out.append(piece)
        start = cut
        while start < end and text[start].isspace():
            start += 1
    tail = text[start:end].strip()
    if tail:
        out.append(tail)
    return out
