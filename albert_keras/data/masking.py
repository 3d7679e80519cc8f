"""Whole-word n-gram masking, as the original ALBERT (static, seeded).

For one packed sequence:

1. Candidates are all tokens but ``[CLS]``, ``[SEP]`` and padding. With
   ``whole_word``, a piece that does not start with U+2581 joins the word
   before it (a piece right after ``[CLS]``/``[SEP]`` starts a new word).
2. ``num_to_predict = min(max_predictions, max(1, round(len * prob)))``.
3. Words are visited in random order; at each, an n-gram length ``n`` is
   drawn from ``{1..max_ngram}`` with ``p ~ 1/n`` (6/11, 3/11, 2/11 for 3), cut
   to the words left; ``n`` is shortened while the n-gram would exceed the
   budget, and an n-gram that touches an already masked token is skipped.
4. Each chosen token becomes ``[MASK]`` (80%), stays (10%) or becomes a
   random non-special piece (10%).

The original draws ``n`` from numpy's global RNG, so its output cannot be
reproduced; here one seeded ``random.Random`` drives everything. The
``dynamic_masking`` module runs the same algorithm in TF ops.
"""

import dataclasses

from albert_keras.text.special_ids import ALBERT_SPECIAL_IDS as ALBERT_IDS

FIRST_NORMAL_ID = 5  # random replacements never pick a special token


def ngram_weights(max_ngram):
    """``p(n) ~ 1/n`` for n in 1..max_ngram (favor_shorter_ngram)."""
    weights = [1.0 / n for n in range(1, max_ngram + 1)]
    total = sum(weights)
    return [w / total for w in weights]


# SpanBERT: span lengths in words are geometric, p = 0.2, clipped at 10.
SPAN_P = 0.2
SPAN_MAX = 10
MASKINGS = ("ngram", "span", "token")


def span_weights(p=SPAN_P, max_len=SPAN_MAX):
    """SpanBERT's ``p(n) ~ p (1 - p)^(n - 1)`` for n in 1..max_len (mean ~3.8)."""
    weights = [p * (1 - p) ** (n - 1) for n in range(1, max_len + 1)]
    total = sum(weights)
    return [w / total for w in weights]


def masking_scheme(masking="ngram", max_ngram=3, whole_word=True):
    """``(length probabilities, whole_word)`` of a ``--masking`` choice.

    ``ngram``: ALBERT's whole-word n-grams, ``p ~ 1/n`` up to ``max_ngram``;
    ``span``: SpanBERT's geometric spans of whole words; ``token``: BERT's
    original single pieces.
    """
    if masking == "ngram":
        return ngram_weights(max_ngram), whole_word
    if masking == "span":
        return span_weights(), True
    if masking == "token":
        return [1.0], False
    raise ValueError(f"masking must be one of {MASKINGS}, got {masking!r}")


def candidate_words(tokens, word_starts, whole_word=True, special_ids=None):
    """Groups candidate positions into words: a list of lists of indices."""
    special = {**ALBERT_IDS, **(special_ids or {})}
    skip = {special["cls"], special["sep"], special["pad"]}
    words = []
    previous_special = True
    for i, token in enumerate(tokens):
        if token in skip:
            previous_special = True
            continue
        if whole_word and words and not previous_special and not word_starts[token]:
            words[-1].append(i)
        else:
            words.append([i])
        previous_special = False
    return words


@dataclasses.dataclass(frozen=True)
class MaskingScheme:
    """What a masking step masks, and how (host and in-graph masking alike).

    Args:
        masked_lm_prob: share of the real tokens to mask.
        max_predictions: the most masked tokens per sequence.
        max_ngram: longest n-gram (words), with ``ngram_weights``.
        whole_word: a word's pieces are masked together.
        special_ids: the tokenizer's ``{"pad", "cls", "sep", "mask"}`` ids
            (default: ALBERT's).
        ngram_probs: the length distribution (``masking_scheme``); replaces
            ``ngram_weights(max_ngram)``, and its length is the longest n.
    """

    masked_lm_prob: float = 0.15
    max_predictions: int = 20
    max_ngram: int = 3
    whole_word: bool = True
    special_ids: dict = None
    ngram_probs: tuple = None

    @property
    def weights(self):
        """The n-gram length weights; their count is the longest n."""
        return list(self.ngram_probs) if self.ngram_probs else ngram_weights(self.max_ngram)

    @property
    def ids(self):
        return {**ALBERT_IDS, **(self.special_ids or {})}


def mask_sequence(tokens, word_starts, rng, vocab_size, scheme=None,  # noqa: PLR0913 (the sequence, its RNG, and two optional counters)
                  drawn_counts=None, masked_counts=None, **fields):
    """Masks one packed sequence.

    Args:
        tokens: the packed ids (no padding).
        word_starts: per vocabulary id, does the piece start a word.
        rng: a seeded ``random.Random``.
        vocab_size: for random replacements.
        scheme: a ``MaskingScheme`` (see the module for the algorithm).
        drawn_counts: optional list of length ``max_ngram`` counting every
            n drawn (distributed as ``ngram_weights``).
        masked_counts: the same for the n-grams actually masked; shorter
            than drawn, because an n-gram that would pass the budget is
            shortened and one that overlaps a masked token is skipped (as in
            the original).
        **fields: ``MaskingScheme`` fields, as a shorthand for ``scheme``.

    Returns:
        ``(masked_tokens, positions, labels)``, positions ascending.
    """
    scheme = dataclasses.replace(scheme or MaskingScheme(), **fields)
    special = scheme.ids
    words = candidate_words(tokens, word_starts, scheme.whole_word, special)
    budget = min(scheme.max_predictions,
                 max(1, int(round(len(tokens) * scheme.masked_lm_prob))))
    chosen = _chosen_positions(words, budget, scheme.weights, rng, (drawn_counts, masked_counts))
    masked = list(tokens)
    for i in chosen:
        if rng.random() < 0.8:
            masked[i] = special["mask"]
        elif rng.random() < 0.5:
            pass
        else:
            masked[i] = rng.randint(FIRST_NORMAL_ID, vocab_size - 1)
    return masked, chosen, [tokens[i] for i in chosen]


def _chosen_positions(words, budget, weights, rng, counts):
    """Token positions of the n-grams chosen, ascending (steps 3 of the module)."""
    drawn_counts, masked_counts = counts
    max_ngram = len(weights)
    order = list(range(len(words)))
    rng.shuffle(order)
    covered = set()
    chosen = []
    for w in order:
        if len(chosen) >= budget:
            break
        max_n = min(max_ngram, len(words) - w)
        n = rng.choices(range(1, max_n + 1), weights=weights[:max_n])[0]
        if drawn_counts is not None:
            drawn_counts[n - 1] += 1
        span = []
        while n >= 1:
            span = [i for k in range(w, w + n) for i in words[k]]
            if len(chosen) + len(span) <= budget:
                break
            n -= 1
        if n == 0 or any(i in covered for i in span):
            continue
        covered.update(span)
        chosen.extend(span)
        if masked_counts is not None:
            masked_counts[n - 1] += 1
    chosen.sort()
    return chosen
