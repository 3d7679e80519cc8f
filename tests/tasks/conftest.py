"""What the task tests share: a published-style HF BERT folder."""

import json

import pytest

from tests.helpers import make_hf_model
from tests.helpers import make_wordpiece_vocab


@pytest.fixture(scope="module")
def bert_folder(tmp_path_factory):
    """A random ``BertForPreTraining`` folder with its lowercasing WordPiece
    vocabulary (400 pieces, 64 positions), as transformers writes one."""
    folder = tmp_path_factory.mktemp("bert-hf")
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    make_hf_model("BertForPreTraining", folder, vocab_size=size, max_position_embeddings=64)
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    return str(folder)
