import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
# no converted LiteRT files kept by the tests' fine-tunes (seconds each, in
# the user's cache); tests of the cache give it a folder of their own
os.environ.setdefault("ALBERT_KERAS_CACHE", "")


import json  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402

import pytest  # noqa: E402

from tests import sampling  # noqa: E402
from tests import timing  # noqa: E402
from tests.helpers import make_hf_model  # noqa: E402
from tests.helpers import make_sentences  # noqa: E402
from tests.helpers import make_wordpiece_vocab  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "sampled(keep): a long parametrized check; CI runs `keep` of its "
                   "parameter sets, chosen by the commit (tests/sampling.py)")


def pytest_collection_modifyitems(config, items):
    sampling.sample(config, items)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    sampling.from_worker(node)


def pytest_runtest_logreport(report):
    timing.record(report)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    sampling.report(terminalreporter, config)
    timing.report(terminalreporter)


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



@pytest.fixture(scope="session")
def init_folder(tmp_path_factory, spm_path):
    """A pretraining-style model folder: a tiny encoder + pretrainer (saved
    under mixed_bfloat16, as pretraining leaves them) and the tokenizer."""
    import keras

    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras import EncoderPretrainer

    folder = tmp_path_factory.mktemp("init")
    keras.utils.set_random_seed(0)
    from albert_keras.text.sentencepiece_tokenizer import SentencePiece

    config = AlbertConfig(vocab_size=SentencePiece(spm_path).vocabulary_size, embedding_size=16, hidden_size=32,
                          num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                          max_position_embeddings=64)
    encoder = AlbertEncoder(config, dtype="mixed_bfloat16")
    pretrainer = EncoderPretrainer(encoder)
    encoder.save(str(folder / "encoder.keras"))
    pretrainer.save(str(folder / "pretrainer.keras"))
    shutil.copyfile(spm_path, folder / "spm.model")
    return str(folder)


def _labelled_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for i, text in enumerate(make_sentences(n, seed=seed)):
        label = "fox" if i % 2 else "dog"
        rows.append({"text": f"{label} {text}", "label": label, "other": rng.random()})
    return rows


@pytest.fixture(scope="session")
def task_files(tmp_path_factory):
    """Tiny files for each task format."""
    folder = tmp_path_factory.mktemp("tasks")
    files = {}
    for split, seed in (("train", 1), ("eval", 2)):
        rows = _labelled_rows(48 if split == "train" else 16, seed)
        path = folder / f"cls_{split}.csv"
        lines = ["text,label"] + [f"{r['text']},{r['label']}" for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        files[f"cls_{split}"] = str(path)

        conll = []
        for text in make_sentences(24, seed=seed):
            for word in text.rstrip(".").split():
                conll.append(f"{word} {'B-ANIMAL' if word.lower() in ('fox', 'dog') else 'O'}")
            conll.append("")
        path = folder / f"tag_{split}.conll"
        path.write_text("\n".join(conll), encoding="utf-8")
        files[f"tag_{split}"] = str(path)

        paragraphs = []
        for i, text in enumerate(make_sentences(12, seed=seed)):
            context = f"{text} The answer is café naïve today."
            start = context.index("café naïve")
            qas = [{"id": f"{split}{i}", "question": "What is the answer?",
                    "answers": [{"text": "café naïve", "answer_start": start}]}]
            paragraphs.append({"context": context, "qas": qas})
        path = folder / f"qa_{split}.json"
        path.write_text(json.dumps({"data": [{"paragraphs": paragraphs}]}), encoding="utf-8")
        files[f"qa_{split}"] = str(path)

        rows = []
        for i, text in enumerate(make_sentences(16, seed=seed)):
            rows.append({"context": text, "question": "Which animal?",
                         "choices": ["the fox", "a table"] if i % 2 else ["a table", "the fox"],
                         "label": "the fox"})
        path = folder / f"choice_{split}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
        files[f"choice_{split}"] = str(path)
    return files


@pytest.fixture
def out_dir(tmp_path):
    return os.path.join(str(tmp_path), "model")


@pytest.fixture(scope="session")
def classifier_folder(tmp_path_factory, init_folder, task_files):
    """A small fine-tuned classifier folder, trained until it is sure of its
    classes (train loss about 0.01, eval accuracy 0.75; at 1e-3 for 4 epochs
    it stayed at the majority class with near-tied logits, which any
    quantization flips, so the export checks meant little)."""
    from albert_keras.drivers.finetune import finetune
    from albert_keras.tasks.finetune_config import FinetuneConfig

    out = os.path.join(str(tmp_path_factory.mktemp("cls")), "model")
    cfg = FinetuneConfig(task="classify", epochs=16, batch_size=8, sequence_length=32,
                         learning_rate=3e-3)
    metrics = finetune(init_folder, task_files["cls_train"], task_files["cls_eval"], out, cfg)
    assert metrics["accuracy"] > 0.6, metrics  # a model that learned, or the checks mean little
    return out


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """(For the task and conversion tests.) A random ``BertForPreTraining`` folder with its lowercasing WordPiece
    vocabulary (400 pieces, 64 positions), as transformers writes one."""
    folder = tmp_path_factory.mktemp("bert-hf")
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    make_hf_model("BertForPreTraining", folder, vocab_size=size, max_position_embeddings=64)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    return str(folder)
