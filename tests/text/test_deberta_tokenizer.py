"""A DeBERTa-v3-style spm.model: [PAD] [CLS] [SEP] [UNK] first, [MASK] added
after the last piece. Ids against transformers' DebertaV2Tokenizer."""

import json
import unicodedata

import pytest
import sentencepiece as spm
import tensorflow as tf

from albert_keras.sources.registry import read_tokenizer
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from tests.helpers import WORDPIECE_TEXTS
from tests.helpers import make_sentences

TEXTS = make_sentences(60, seed=3) + WORDPIECE_TEXTS


@pytest.fixture(scope="module")
def deberta_folder(tmp_path_factory):
    """What microsoft/deberta-v3-* folders hold: spm.model and a tokenizer config."""
    folder = tmp_path_factory.mktemp("deberta-v3")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(make_sentences(2000) + WORDPIECE_TEXTS * 3))
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(folder / "spm"), vocab_size=250,
        model_type="unigram", pad_id=0, pad_piece="[PAD]", bos_id=1, bos_piece="[CLS]",
        eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]", character_coverage=1.0,
        minloglevel=2)
    corpus.unlink()
    (folder / "spm.vocab").unlink()
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "DebertaV2Tokenizer", "do_lower_case": False,
         "split_by_punct": False}))
    return folder


def test_special_ids_are_found_once(deberta_folder, monkeypatch):
    """Packing asks for them on every call; DeBERTa-v3's are looked up among
    128,000 pieces (46 ms a call, more than the model's forward pass for
    one short text). A caller's change to the dict changes no later answer."""
    from albert_keras.text import sentencepiece_tokenizer
    from albert_keras.text.spm_model import special_ids_of

    calls = []
    monkeypatch.setattr(sentencepiece_tokenizer, "special_ids_of",
                        lambda *a: calls.append(a) or special_ids_of(*a))
    tokenizer = SentencePiece(str(deberta_folder / "spm.model"))
    first = tokenizer.special_ids
    first["cls"] = -1
    assert tokenizer.special_ids["cls"] == 1 and len(calls) == 1


def _hf_deberta(path):
    """transformers' DebertaV2Tokenizer on the same pieces and scores (its
    own loader needs protobuf >= 7 to read the file)."""
    import transformers

    processor = spm.SentencePieceProcessor(model_file=str(path))
    vocab = [(processor.id_to_piece(i), processor.get_score(i))
             for i in range(processor.get_piece_size())]
    return transformers.DebertaV2Tokenizer(vocab=vocab, unk_id=3)


def _compatibility_text(text):
    """Characters SentencePiece's nmt_nfkc rule rewrites (NFKC, control and
    zero-width characters), which transformers 5's DeBERTa tokenizer leaves."""
    return unicodedata.normalize("NFKC", text) != text or any(
        unicodedata.category(c) in ("Cc", "Cf") for c in text)


def test_special_ids_follow_deberta_and_mask_comes_after_the_pieces(deberta_folder):
    ours = read_tokenizer(str(deberta_folder))
    hf = _hf_deberta(deberta_folder / "spm.model")
    assert ours.special_ids == {"pad": hf.pad_token_id, "cls": hf.cls_token_id,
                                "sep": hf.sep_token_id, "unk": hf.unk_token_id,
                                "mask": hf.mask_token_id}
    assert ours.special_ids["mask"] == ours.vocabulary_size
    assert ours.options == {"lowercase": False, "keep_accents": True}


def test_ids_equal_transformers_on_the_host_and_in_the_graph(deberta_folder):
    path = deberta_folder / "spm.model"
    ours, hf = SentencePiece(str(path)), _hf_deberta(path)
    graph = ours.keras_layer()(tf.constant(TEXTS)).to_list()
    differing = []
    for text, host_ids, graph_ids in zip(TEXTS, ours.encode(TEXTS), graph):
        assert host_ids == graph_ids, text
        if host_ids != hf(text, add_special_tokens=False)["input_ids"]:
            differing.append(text)
    # Finding: transformers 5.23 builds DeBERTa's normaliser itself (NFC,
    # whitespace) instead of the model file's nmt_nfkc, so texts with
    # compatibility characters differ; ours follow the file, as sentencepiece
    # and the original DeBERTa code do. Every other text must agree.
    assert len(differing) < len(TEXTS) // 10
    assert all(_compatibility_text(t) for t in differing), differing


def test_split_by_punct_is_refused_in_one_line(tmp_path, deberta_folder):
    (tmp_path / "spm.model").write_bytes((deberta_folder / "spm.model").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "DebertaV2Tokenizer", "split_by_punct": True}))
    with pytest.raises(ValueError, match="split_by_punct") as info:
        SentencePiece(str(tmp_path / "spm.model"))
    assert "\n" not in str(info.value)
