import random

from albert_keras.data.sop_pairs import document_pairs
from albert_keras.data.sop_pairs import truncate_pair


def numbered_document(num_sentences, rng):
    """Sentence k is made of tokens k * 1000 + j, so each token names its sentence."""
    return [[k * 1000 + j for j in range(rng.randint(3, 20))] for k in range(1, num_sentences + 1)]


def sentence_of(token):
    return token // 1000


def test_order_and_swap_exactly():
    rng = random.Random(0)
    labels = []
    for d in range(300):
        doc = numbered_document(rng.randint(2, 30), rng)
        for pair in document_pairs(doc, 64, random.Random(d)):
            a = [sentence_of(t) for t in pair.tokens_a]
            b = [sentence_of(t) for t in pair.tokens_b]
            assert a == sorted(a) and b == sorted(b)
            if pair.label == 0:
                assert max(a) <= min(b)  # A then B, in the document's order
            else:
                assert max(b) <= min(a)  # exactly the swap
            # Each side is a contiguous run of the document (truncation only
            # trims its ends).
            flat = [t for s in doc for t in s]
            for side in (pair.tokens_a, pair.tokens_b):
                start = flat.index(side[0])
                assert flat[start:start + len(side)] == side
            assert len(pair.tokens_a) + len(pair.tokens_b) <= 64 - 3
            labels.append(pair.label)
    balance = sum(labels) / len(labels)
    assert len(labels) > 1000 and abs(balance - 0.5) < 0.04


def test_short_target_probability():
    rng = random.Random(3)
    lengths_default, lengths_short = [], []
    for d in range(400):
        doc = numbered_document(40, rng)
        for prob, out in ((0.0, lengths_default), (1.0, lengths_short)):
            for pair in document_pairs(doc, 128, random.Random(d), short_seq_prob=prob):
                out.append(len(pair.tokens_a) + len(pair.tokens_b))
    assert sum(lengths_short) / len(lengths_short) < 0.75 * sum(lengths_default) / len(lengths_default)


def test_truncation_trims_the_longer_side():
    rng = random.Random(0)
    a, b = list(range(10)), list(range(100, 103))
    truncate_pair(a, b, 8, rng)
    assert len(a) == 5 and b == [100, 101, 102]
    assert a == list(range(10))[a[0]:a[0] + 5]  # contiguous: cut from front/back


def test_nsp_takes_b_from_another_document():
    docs = [[[d * 100000 + k * 1000 + j for j in range(5)] for k in range(1, 9)] for d in range(20)]
    random_next = 0
    for d, doc in enumerate(docs):
        for pair in document_pairs(doc, 40, random.Random(d), random_next=True,
                                   all_documents=docs, document_index=d):
            other = {t // 100000 for t in pair.tokens_b} != {d}
            assert other == (pair.label == 1)
            random_next += pair.label
    assert random_next > 0
