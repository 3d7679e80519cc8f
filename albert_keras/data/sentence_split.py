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
_BOUNDARY = re.compile(
    r"""([.!?]+["'\u201d\u2019)\]]*)\s+(?=["'\u201c\u2018(\[]?[A-Z0-9\u00C0-\u024F\u0400-\u04FF])"""
)
_CJK_BOUNDARY = re.compile(r"([\u3002\uff01\uff1f]+)")


def _ends_with_abbreviation(text):
    match = re.search(r"([\w.]+)\.$", text)
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
    text = " ".join(paragraph.split())
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
            candidate = piece[start : match.end(1)]
            if match.group(1).startswith(".") and _ends_with_abbreviation(candidate):
                continue
            sentences.append(candidate.strip())
            start = match.end()
        tail = piece[start:].strip()
        if tail:
            sentences.append(tail)
    return sentences


def split_long(text, max_chars):
    """Cuts a text longer than ``max_chars`` at whitespace (or hard, if none)."""
    out = []
    while len(text) > max_chars:
        cut = text.rfind(" ", 0, max_chars)
        if cut <= 0:
            cut = max_chars
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return out
