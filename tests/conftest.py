import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


import random  # noqa: E402

import pytest  # noqa: E402

_WORDS = (
    "the quick brown fox jumps over a lazy dog while people watch from their "
    "windows and talk about weather markets congress nation freedom union "
    "café naïve résumé 안녕하세요 세계 東京 emoji 😀 data model training"
).split()


def make_sentences(n, seed=0, low=6, high=14):
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."
        for _ in range(n)
    ]


@pytest.fixture(scope="session")
def spm_path(tmp_path_factory):
    """A tiny unigram SentencePiece model with ALBERT's special ids (~1 s)."""
    from albert_keras.text.spm_trainer import train_sentencepiece

    path = tmp_path_factory.mktemp("spm") / "spm.model"
    return train_sentencepiece(make_sentences(3000), str(path), vocab_size=120)


@pytest.fixture(scope="session")
def corpus_file(tmp_path_factory):
    """A corpus in the BERT layout: 40 documents of 4-12 sentences."""
    rng = random.Random(1)
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    docs = []
    for d in range(40):
        docs.append("\n".join(make_sentences(rng.randint(4, 12), seed=100 + d)))
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return str(path)
