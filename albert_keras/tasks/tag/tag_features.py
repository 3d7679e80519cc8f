"""Token tagging: word -> piece alignment and back.

A word is labelled on its first piece; the other pieces get weight 0 in
the loss and are ignored when decoding, as BERT's NER recipe does.
Sentences longer than the sequence are cut into chunks of whole words.
"""

import dataclasses

import numpy as np


@dataclasses.dataclass
class TagFeatures:
    inputs: dict  # encoder inputs, [N, S]
    labels: np.ndarray  # [N, S] tag ids (0 where not labelled)
    weights: np.ndarray  # [N, S] 1.0 on each word's first piece
    words: list  # per row: [(sentence, word, position)]


def tag_features(tokenizer, sentences, sequence_length, tags=None, tag_index=None):
    """Builds features for ``sentences`` (lists of words).

    Args:
        tokenizer: a host-side ``Tokenizer``.
        sentences: list of word lists.
        sequence_length: S.
        tags: optional list of tag lists (same shape as ``sentences``).
        tag_index: ``{tag: id}``, needed with ``tags``.
    """
    budget = sequence_length - 2
    flat = [w for words in sentences for w in words]
    pieces = iter(tokenizer.encode(flat))
    # a word the tokenizer drops whole (a zero-width joiner, a control
    # character: tweets have them) still takes a position, as [UNK], so its
    # tag is read and predicted; it was [PAD]'s id, a row the model never
    # learned to read
    nothing = [tokenizer.special_ids.get("unk", 0)]
    rows_ids, rows_labels, rows_words = [], [], []
    for s, words in enumerate(sentences):
        chunk_ids, chunk_labels, chunk_words = [], [], []
        for w, _ in enumerate(words):
            word_pieces = next(pieces)[:budget] or nothing
            if chunk_ids and len(chunk_ids) + len(word_pieces) > budget:
                rows_ids.append(chunk_ids)
                rows_labels.append(chunk_labels)
                rows_words.append(chunk_words)
                chunk_ids, chunk_labels, chunk_words = [], [], []
            chunk_words.append((s, w, len(chunk_ids) + 1))  # +1 for [CLS]
            label = tag_index[tags[s][w]] if tags is not None else 0
            chunk_labels.append((len(chunk_ids) + 1, label))
            chunk_ids.extend(word_pieces)
        rows_ids.append(chunk_ids)
        rows_labels.append(chunk_labels)
        rows_words.append(chunk_words)

    n = len(rows_ids)
    token_ids = np.zeros((n, sequence_length), np.int32)
    mask = np.zeros((n, sequence_length), np.int32)
    labels = np.zeros((n, sequence_length), np.int32)
    weights = np.zeros((n, sequence_length), np.float32)
    for r, ids in enumerate(rows_ids):
        row = [tokenizer.special_ids["cls"]] + ids + [tokenizer.special_ids["sep"]]
        token_ids[r, :len(row)] = row
        mask[r, :len(row)] = 1
        for position, label in rows_labels[r]:
            labels[r, position] = label
            weights[r, position] = 1.0
    inputs = {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask}
    return TagFeatures(inputs, labels, weights, rows_words)


def decode_tags(features, logits, sentences, tag_names):
    """Per-sentence predicted tags from ``logits`` ``[N, S, C]``."""
    best = np.argmax(logits, axis=-1)
    out = [["O"] * len(words) for words in sentences]
    for r, words in enumerate(features.words):
        for s, w, position in words:
            out[s][w] = tag_names[best[r, position]]
    return out
