"""Sentence-order pairs, as google-research/albert's create_pretraining_data.

For one document (a list of tokenized segments):

1. The target length is ``max_seq_length - 3``; with probability
   ``short_seq_prob`` (0.1) it is ``randint(2, target)`` instead.
2. Segments are accumulated until the target is reached (or the document
   ends); the chunk is split at ``randint(1, n - 1)`` into A and B.
3. With probability 0.5 A and B are swapped: label 1. Otherwise label 0.
4. The pair is truncated to fit, one token at a time from the longer side,
   from the front or the back with probability 0.5 each.

One change from the original: a chunk of a single segment (one sentence
longer than the target) takes B from a *random other document* there and
labels it 1 even under SOP, which mixes next-sentence noise into the SOP
labels. Here the segment itself is split at a random token instead, so every
label-1 pair is exactly a swap. ``random_next=True`` gives the original NSP
task (B from another document half the time) for ablations.
"""

import dataclasses

from albert_keras.text.special_ids import ALBERT_SPECIAL_IDS


@dataclasses.dataclass
class SopPair:
    tokens_a: list
    tokens_b: list
    label: int  # 0: original order, 1: swapped (or random next under NSP)

    def packed(self, special_ids=None):
        """``([CLS] A [SEP] B [SEP], segment_ids)`` with the tokenizer's ids."""
        special = {**ALBERT_SPECIAL_IDS, **(special_ids or {})}
        cls, sep = special["cls"], special["sep"]
        tokens = [cls] + self.tokens_a + [sep] + self.tokens_b + [sep]
        segments = [0] * (len(self.tokens_a) + 2) + [1] * (len(self.tokens_b) + 1)
        return tokens, segments


def truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Original ``truncate_seq_pair``: trim the longer side, front or back."""
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del longer[0]
        else:
            longer.pop()


def _flatten(segments):
    return [t for s in segments for t in s]


def document_pairs(
    document,
    max_seq_length,
    rng,
    short_seq_prob=0.1,
    random_next=False,
    all_documents=None,
    document_index=None,
):
    """Returns the ``SopPair``s of one tokenized document.

    Args:
        document: a list of segments, each a list of token ids.
        max_seq_length: the packed length, ``[CLS]``/``[SEP]`` included.
        rng: a ``random.Random`` (seeded per document by the caller).
        short_seq_prob: probability of a shorter target length.
        random_next: NSP instead of SOP (ablations only).
        all_documents, document_index: needed for ``random_next``.
    """
    document = [s for s in document if s]
    max_num_tokens = max_seq_length - 3
    target = max_num_tokens
    if rng.random() < short_seq_prob:
        target = rng.randint(2, max_num_tokens)

    pairs = []
    chunk, length, i = [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        length += len(document[i])
        if i == len(document) - 1 or length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            pair = None
            if random_next and (len(chunk) == 1 or rng.random() < 0.5):
                tokens_a = _flatten(chunk[:a_end])
                tokens_b = _random_document_tokens(
                    all_documents, document_index, target - len(tokens_a), rng
                )
                i -= len(chunk) - a_end  # unused segments go back to the pool
                if tokens_b:
                    pair = SopPair(tokens_a, tokens_b, 1)
            elif len(chunk) == 1:
                tokens = list(chunk[0])
                if len(tokens) >= 2:
                    cut = rng.randint(1, len(tokens) - 1)
                    pair = _ordered(tokens[:cut], tokens[cut:], random_next, rng)
            else:
                pair = _ordered(
                    _flatten(chunk[:a_end]), _flatten(chunk[a_end:]), random_next, rng
                )
            if pair is not None:
                truncate_pair(pair.tokens_a, pair.tokens_b, max_num_tokens, rng)
                if pair.tokens_a and pair.tokens_b:
                    pairs.append(pair)
            chunk, length = [], 0
        i += 1
    return pairs


def _ordered(tokens_a, tokens_b, random_next, rng):
    if not random_next and rng.random() < 0.5:
        return SopPair(tokens_b, tokens_a, 1)
    return SopPair(tokens_a, tokens_b, 0)


def _random_document_tokens(all_documents, document_index, target_b_length, rng):
    if not all_documents or len(all_documents) < 2:
        raise ValueError("next-sentence prediction needs at least two documents")
    # Documents of the other split are empty here (held-out text must not
    # leak into training pairs); draw again, then walk to the next usable one.
    for _ in range(10):
        other = rng.randint(0, len(all_documents) - 1)
        if other != document_index and all_documents[other]:
            break
    else:
        n = len(all_documents)
        other = next((i % n for i in range(other + 1, other + n)
                      if i % n != document_index and all_documents[i % n]), None)
        if other is None:
            raise ValueError("next-sentence prediction needs at least two documents")
    doc = all_documents[other]
    start = rng.randint(0, len(doc) - 1)
    tokens = []
    for segment in doc[start:]:
        tokens.extend(segment)
        if len(tokens) >= target_b_length:
            break
    return tokens
