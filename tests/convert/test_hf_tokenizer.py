"""``convert --to hf`` writes the model's tokenizer beside the weights, in the
form transformers reads; its ids are checked against transformers'
tokenizers built from the written files and options."""

import json
import os

import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.cli import main
from albert_keras.convert import save_hf
from albert_keras.convert.hf_tokenizer import write_hf_tokenizer
from albert_keras.sources.registry import read_tokenizer
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.tokenizer_asset import TokenizerAsset
from albert_keras.text.wordpiece_tokenizer import WordPiece
from tests.helpers import SMALL
from tests.helpers import WORDPIECE_TEXTS
from tests.helpers import hf_albert_tokenizer
from tests.helpers import make_deberta_spm
from tests.helpers import make_sentences
from tests.helpers import make_wordpiece_vocab

# AlbertTokenizer rewrites `` and '' as quotes, which SentencePiece models do not
TEXTS = [t for t in WORDPIECE_TEXTS if "``" not in t and "''" not in t] + make_sentences(
    20, seed=5) + ["Hello WORLD, naïve CAFÉ crème BRÛLÉE 1,000,000."]


@pytest.fixture(scope="module")
def cased_spm(tmp_path_factory):
    """A case-keeping SentencePiece model (the shared fixture's folds case)."""
    from albert_keras.text.spm_trainer import train_sentencepiece

    path = tmp_path_factory.mktemp("cased") / "spm.model"
    return train_sentencepiece(make_sentences(3000), str(path), vocab_size=120, lowercase=False)


def _hangul_apart(text):
    """NFKD splits Hangul syllables into jamo. SentencePiece (which HF's
    AlbertTokenizer ran up to transformers 4, and ours runs) joins them again;
    transformers 5's tokenizers backend leaves them apart, so with accents
    stripped the two differ on such text, whatever the folder says."""
    return any(0xAC00 <= ord(c) <= 0xD7A3 for c in text)


def _encoder_with(tokenizer):
    encoder = AlbertEncoder(AlbertConfig(vocab_size=tokenizer.vocabulary_size, **SMALL))
    encoder.tokenizer = tokenizer
    return encoder


def _config(folder):
    return json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("lowercase, keep_accents", [(False, True), (True, False)])
def test_sentencepiece_folder_cuts_text_as_transformers_does(cased_spm, tmp_path, lowercase,
                                                             keep_accents):
    ours = SentencePiece(cased_spm, lowercase=lowercase, keep_accents=keep_accents)
    save_hf(_encoder_with(ours), str(tmp_path / "hf"))
    config = _config(tmp_path / "hf")
    assert config.pop("tokenizer_class") == "AlbertTokenizer"
    hf = hf_albert_tokenizer(tmp_path / "hf" / "spiece.model", **config)
    texts = [t for t in TEXTS if keep_accents or not _hangul_apart(t)]
    assert len(texts) > 20
    assert ours.encode(texts) == [hf(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert {name: getattr(hf, f"{name}_token_id") for name in ours.special_ids} == \
        ours.special_ids
    back = read_tokenizer(str(tmp_path / "hf"))  # what finetune --init on the folder reads
    assert back.options == ours.options
    assert back.encode(TEXTS) == ours.encode(TEXTS)


def test_a_case_keeping_model_is_not_lower_cased_by_transformers(cased_spm, tmp_path):
    """HF's AlbertTokenizer lower-cases unless told: the file must tell it."""
    ours = SentencePiece(cased_spm)
    assert ours.options == {"lowercase": False, "keep_accents": True}
    save_hf(_encoder_with(ours), str(tmp_path / "hf"))
    assert _config(tmp_path / "hf")["do_lower_case"] is False
    text = "Hello WORLD"
    lowered = hf_albert_tokenizer(tmp_path / "hf" / "spiece.model")(
        text, add_special_tokens=False)["input_ids"]
    assert ours.encode([text])[0] != lowered


def test_wordpiece_folder_loads_in_auto_tokenizer(tmp_path):
    import transformers

    ours = WordPiece(make_wordpiece_vocab(tmp_path / "vocab", lowercase=False))
    save_hf(_encoder_with(ours), str(tmp_path / "hf"))
    hf = transformers.AutoTokenizer.from_pretrained(str(tmp_path / "hf"))
    texts = make_sentences(20, seed=6) + ["Hello WORLD, naïve CAFÉ 3.14 o'clock!"]
    assert ours.encode(texts) == [hf(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert hf.mask_token_id == ours.special_ids["mask"]


def test_deberta_pieces_become_a_deberta_tokenizer(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "hf").mkdir()
    ours = SentencePiece(make_deberta_spm(tmp_path / "src"))
    assert write_hf_tokenizer(str(tmp_path / "hf"), TokenizerAsset.of(ours)) == \
        ["spm.model", "tokenizer.json", "tokenizer_config.json"]
    config = _config(tmp_path / "hf")
    assert config["tokenizer_class"] == "DebertaV2Tokenizer"
    assert config["mask_token"] == "[MASK]" and config["cls_token"] == "[CLS]"
    back = read_tokenizer(str(tmp_path / "hf"))
    assert back.special_ids == ours.special_ids
    assert back.encode(TEXTS) == ours.encode(TEXTS)


def test_accent_stripping_deberta_pieces_are_refused_and_nothing_is_left(tmp_path):
    (tmp_path / "src").mkdir()
    ours = SentencePiece(make_deberta_spm(tmp_path / "src"), keep_accents=False)
    with pytest.raises(ValueError, match="DebertaV2Tokenizer cannot"):
        save_hf(_encoder_with(ours), str(tmp_path / "hf"))
    assert not os.path.exists(tmp_path / "hf")


def test_convert_takes_a_model_folder_and_its_tokenizer(init_folder, tmp_path, capsys):
    """The fixture's files carry no tokenizer (an older folder): the folder's is used."""
    out = tmp_path / "hf"
    assert main(["convert", init_folder, "--to", "hf", "--out", str(out)]) == 0
    assert "tokenizer: spiece.model" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["architectures"] == \
        ["AlbertForPreTraining"]
    assert read_tokenizer(str(out)).encode(TEXTS) == read_tokenizer(init_folder).encode(TEXTS)


def test_convert_to_hf_refuses_what_is_not_a_model(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert main(["convert", str(notes), "--to", "hf", "--out", str(tmp_path / "hf")]) != 0
    assert f"{notes}: --to hf takes a .keras model file or a model folder" in \
        capsys.readouterr().err
    assert not os.path.exists(tmp_path / "hf")
