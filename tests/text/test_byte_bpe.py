"""The byte-level BPE kind (ModernBERT's and Ettin's tokenizer.json): packed
ids equal transformers' fast tokenizer on the same file, special tokens,
truncation and pairs included, on a hard set; the file travels in a model's
asset and reads the same in tokenizers.js."""

import json

import numpy as np
import pytest

from albert_keras.text.byte_bpe_tokenizer import ByteLevelBPE
from albert_keras.text.packer import pack_texts
from albert_keras.text.registry import load_tokenizer
from albert_keras.text.tokenizer_asset import TokenizerAsset
from tests.helpers import WORDPIECE_TEXTS
from tests.helpers import make_bpe_file
from tests.helpers import make_sentences
from tests.web.driver import encode_in_node

# accents, CJK, emoji, control characters, runs of spaces, very long words
# (the shared hard set), and texts longer than the model
TEXTS = [t for t in WORDPIECE_TEXTS if t.strip()] + [
    " ".join(make_sentences(40, seed=2)), "  leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\n", "[MASK] written out, and [CLS] too"]


@pytest.fixture(scope="module")
def bpe_file(tmp_path_factory):
    return make_bpe_file(tmp_path_factory.mktemp("bpe"), TEXTS)


def _transformers(path):
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=path, cls_token="[CLS]", sep_token="[SEP]",
                                   pad_token="[PAD]", mask_token="[MASK]", unk_token="[UNK]")


def test_the_kind_is_found_from_the_file_with_its_special_ids(bpe_file):
    ours = load_tokenizer(bpe_file)
    assert ours.kind == "bpe" and isinstance(ours, ByteLevelBPE)
    hf = _transformers(bpe_file)
    assert ours.special_ids == {"cls": hf.cls_token_id, "sep": hf.sep_token_id,
                                "pad": hf.pad_token_id, "mask": hf.mask_token_id,
                                "unk": hf.unk_token_id}
    assert ours.vocabulary_size == len(hf)
    starts = ours.word_starts()
    assert starts[hf.convert_tokens_to_ids("\u0120the")] and starts[hf.cls_token_id]
    assert not ours.in_graph
    with pytest.raises(ValueError, match="no in-graph form"):
        ours.keras_layer()


@pytest.mark.parametrize("length", [16, 64])
def test_packed_ids_are_transformers(bpe_file, length):
    ours, hf = load_tokenizer(bpe_file), _transformers(bpe_file)
    packed = pack_texts(ours, TEXTS, None, length)
    want = hf(TEXTS, max_length=length, truncation=True, padding="max_length")
    assert packed["token_ids"].tolist() == want["input_ids"]
    assert packed["padding_mask"].tolist() == want["attention_mask"]


def test_packed_pairs_are_transformers(bpe_file):
    """Pairs where the longer side alone is cut. (Where both sides are cut
    to an odd budget, the Rust library gives the spare piece to the second
    text, and our packer, as BERT's original code, to the first.)"""
    ours, hf = load_tokenizer(bpe_file), _transformers(bpe_file)
    short = ["a question?", "naïve café", "東京 😀", "two words"]
    firsts, seconds = short + TEXTS[:4], TEXTS[4:8] + short
    packed = pack_texts(ours, firsts, seconds, 32)
    want = hf(firsts, seconds, max_length=32, truncation="longest_first",
              padding="max_length", return_token_type_ids=True)
    assert packed["token_ids"].tolist() == want["input_ids"]
    assert packed["segment_ids"].tolist() == want["token_type_ids"]


def test_offsets_point_at_each_pieces_characters(bpe_file):
    ours = load_tokenizer(bpe_file)
    text = "Hello, naïve world: 東京 😀!"
    ids, starts, ends = ours.encode_with_offsets(text)
    assert ids == ours.encode([text])[0]
    assert ours.decode(ids) == text
    assert all(0 <= s <= e <= len(text) for s, e in zip(starts, ends))
    assert starts[0] == 0 and "Hello".startswith(text[starts[0]:ends[0]])
    assert starts == sorted(starts) and all(e > s for s, e in zip(starts, ends))


def test_a_model_carries_the_file_and_reads_it_back(bpe_file):
    ours = load_tokenizer(bpe_file)
    asset = TokenizerAsset.of(ours)
    assert asset.record["kind"] == "bpe" and asset.record["file"] == "tokenizer.json"
    back = asset.tokenizer()
    assert back.encode(TEXTS) == ours.encode(TEXTS)
    assert back.special_ids == ours.special_ids


def test_tokenizers_js_reads_the_web_file_to_our_ids(bpe_file):
    """The web page's tokenizer.json (the file without its packing) in
    tokenizers.js, which transformers.js uses too."""
    ours = load_tokenizer(bpe_file)
    # Not U+FEFF after a space: JavaScript's \s matches it and Rust's does
    # not, so tokenizers.js splits " \ufeff" where the Rust library keeps
    # it whole (a difference of the two libraries, on our file and any other)
    texts = [t for t in TEXTS if "\ufeff" not in t]
    assert len(texts) >= len(TEXTS) - 1
    assert encode_in_node(ours, texts) == ours.encode(texts)


@pytest.mark.parametrize("edit, words", [
    (lambda spec: spec["model"].update(type="Unigram"), "a Unigram tokenizer, not BPE"),
    (lambda spec: spec.update(pre_tokenizer={"type": "Whitespace"}), "without byte-level"),
    (lambda spec: spec.update(added_tokens=[t for t in spec["added_tokens"]
                                            if t["content"] != "[MASK]"]), None),
])
def test_a_file_this_kind_cannot_read_is_one_line(bpe_file, tmp_path, edit, words):
    spec = json.load(open(bpe_file, encoding="utf-8"))
    edit(spec)
    if words is None:  # no [MASK]: the vocabulary itself lacks it
        spec["model"]["vocab"].pop("[MASK]", None)
        words = "no \\[MASK\\] or <mask> token"
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError, match=words) as error:
        ByteLevelBPE(str(path))
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_word_starts_mark_the_pieces_after_a_space(bpe_file):
    ours = load_tokenizer(bpe_file)
    pieces = [ours.id_to_piece(i) for i in ours.encode(["the quick brown fox"])[0]]
    starts = ours.word_starts()
    ids = ours.encode(["the quick brown fox"])[0]
    # "the" opens the text without a space before it; the others follow one
    assert [bool(starts[i]) for i in ids[1:]] == [p.startswith("\u0120") for p in pieces[1:]]
    assert np.all([starts[i] for i, p in zip(ids, pieces) if p.startswith("\u0120")])


def test_a_string_in_export_is_refused_for_this_kind(bpe_file, tmp_path):
    """TFLite has no byte-level BPE op: --with-tokenizer is refused in one
    line before any conversion, and nothing is written."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras.export import ExportConfig
    from albert_keras.export import ExportError
    from albert_keras.export import export_tflite
    from albert_keras.saving import save_model
    from tests.helpers import SMALL

    ours = load_tokenizer(bpe_file)
    encoder = AlbertEncoder(AlbertConfig(vocab_size=ours.vocabulary_size, **SMALL))
    encoder.tokenizer = ours
    path = str(tmp_path / "encoder.keras")
    save_model(encoder, path)
    with pytest.raises(ExportError, match="its bpe tokenizer has no in-graph form") as error:
        export_tflite(path, str(tmp_path / "m.tflite"),
                      ExportConfig(with_tokenizer=True, sequence_length=16, examples=4))
    assert "\n" not in str(error.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["encoder.keras"]


def test_a_classifier_of_this_kind_fine_tunes_predicts_and_runs_in_the_browser(
        bpe_file, task_files, tmp_path):
    """The kind through the whole pipeline: ``finetune`` from an encoder
    carrying it, ``predict``, the ids-in export and its web page (which packs
    with tokenizers.js reading the kind's file), against our LiteRT runner."""
    from albert_keras import AlbertConfig
    from albert_keras import AlbertEncoder
    from albert_keras.drivers.finetune import finetune
    from albert_keras.drivers.inference import predict
    from albert_keras.export import ExportConfig
    from albert_keras.export import export_tflite
    from albert_keras.saving import save_model
    from albert_keras.tasks.finetune_config import FinetuneConfig
    from tests.export.test_web_folder import _check_page
    from tests.helpers import SMALL

    encoder = AlbertEncoder(AlbertConfig(vocab_size=load_tokenizer(bpe_file).vocabulary_size,
                                         **SMALL))
    encoder.tokenizer = load_tokenizer(bpe_file)
    init = str(tmp_path / "encoder.keras")
    save_model(encoder, init)
    out = str(tmp_path / "cls")
    metrics = finetune(init, task_files["cls_train"], task_files["cls_eval"], out,
                       FinetuneConfig(task="classify", epochs=2, batch_size=8,
                                      sequence_length=32))
    assert 0.0 <= metrics["accuracy"] <= 1.0
    assert load_tokenizer(f"{out}/tokenizer.json").encode(TEXTS) == \
        load_tokenizer(bpe_file).encode(TEXTS)  # the folder keeps the kind's file
    rows = predict(out, task_files["cls_eval"])
    assert len(rows) == 16 and {r["label"] for r in rows} <= {"dog", "fox"}
    site = str(tmp_path / "site")
    export_tflite(out, config=ExportConfig(web=site, examples=8, lengths=[16]))
    config = json.load(open(f"{site}/model.json"))
    assert "tokenizer.json" in config["files"]
    _check_page(out, site, ["The quick brown fox jumps.", "a dog and a fox", "",
                            "naïve café 😀 " * 20])


def test_the_kind_trains_from_raw_text_as_transformers_reads_it(tmp_path, capsys):
    """``tokenizer train --tokenizer-kind bpe``: a byte-level BPE file whose
    ids (specials included) transformers' fast tokenizer gives too."""
    from transformers import PreTrainedTokenizerFast

    from albert_keras.cli import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(make_sentences(400)) + "\n", encoding="utf-8")
    out = tmp_path / "tokenizer.json"
    assert main(["tokenizer", "train", "--input", str(corpus), "--out", str(out),
                 "--tokenizer-kind", "bpe", "--vocab-size", "600", "--no-lowercase"]) == 0
    ours = load_tokenizer(str(out))
    # the bytes, the specials and merges up to the size (a small corpus has fewer)
    assert ours.kind == "bpe" and 256 + 5 + 100 < ours.vocabulary_size <= 600
    theirs = PreTrainedTokenizerFast(tokenizer_file=str(out))
    for text in TEXTS[:12]:
        assert theirs(text)["input_ids"] == [ours.special_ids["cls"], *ours.encode([text])[0],
                                             ours.special_ids["sep"]], text
    capsys.readouterr()
    assert main(["tokenizer", "train", "--input", str(corpus), "--out",
                 str(tmp_path / "x.model"), "--tokenizer-kind", "bpe"]) != 0
    assert "x.model: a byte-level BPE tokenizer file must end in .json" in capsys.readouterr().err
    assert not (tmp_path / "x.model").exists()
