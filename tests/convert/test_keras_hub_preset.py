"""keras-hub preset folders both ways: ours -> keras-hub -> ours, checked
against keras-hub's own AlbertBackbone / BertBackbone and its tokenizers."""

import os
import shutil

import keras
import keras_hub
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras.cli import main
from albert_keras.convert import ConversionError
from albert_keras.convert.keras_hub_preset import load_keras_hub_preset
from albert_keras.convert.keras_hub_preset import save_keras_hub_preset
from albert_keras.text.registry import load_tokenizer
from tests.helpers import make_hf_model
from tests.helpers import make_sentences
from tests.helpers import make_wordpiece_vocab
from tests.helpers import sample_inputs
from tests.helpers import write_small_vocab

TEXTS = make_sentences(8, seed=3) + ["Hello, World! (really) 42 times.", "東京 data 😀"]
# keras-hub's WordPiece lower-cases after stripping accents with NFKC case
# folding, which recomposes Hangul that HF's (and our) accent stripping left
# decomposed: its ids differ from HF's on Hangul. Everything else agrees.
NO_HANGUL = [t for t in TEXTS if not any("\uac00" <= c <= "\ud7a3" for c in t)]


def _perturbed(config):
    keras.utils.set_random_seed(1)
    encoder = AlbertEncoder(config)
    rng = np.random.default_rng(0)
    for w in encoder.weights:
        w.assign(w + rng.normal(0, 0.2, w.shape).astype("float32"))
    return encoder


def _max_diff(a, b, inputs):
    mask = inputs["padding_mask"].astype(bool)
    seq = np.abs(np.asarray(a["sequence_output"]) - np.asarray(b["sequence_output"]))[mask]
    return max(seq.max(), np.abs(np.asarray(a["pooled_output"]) -
                                 np.asarray(b["pooled_output"])).max())


@pytest.fixture(scope="module")
def albert(spm_path):
    tokenizer = load_tokenizer(spm_path)
    config = AlbertConfig(vocab_size=tokenizer.vocabulary_size, embedding_size=16,
                          hidden_size=32, num_hidden_layers=4, num_hidden_groups=2,
                          num_attention_heads=2, intermediate_size=64,
                          max_position_embeddings=64)
    return _perturbed(config), tokenizer


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    folder = tmp_path_factory.mktemp("vocab")
    tokenizer = load_tokenizer(make_wordpiece_vocab(folder, lowercase=True, vocab_size=300),
                               "wordpiece", {"lowercase": True})
    config = AlbertConfig(vocab_size=tokenizer.vocabulary_size, embedding_size=32,
                          hidden_size=32, num_hidden_layers=2, num_hidden_groups=2,
                          sharing="none", num_attention_heads=2, intermediate_size=64,
                          max_position_embeddings=64, hidden_act="gelu_new")
    return _perturbed(config), tokenizer


@pytest.mark.parametrize("family, backbone, classifier", [
    ("albert", "AlbertBackbone", "AlbertTextClassifier"),
    ("bert", "BertBackbone", "BertTextClassifier"),
])
def test_a_preset_round_trips_through_keras_hub(request, tmp_path, family, backbone,
                                                classifier):
    encoder, tokenizer = request.getfixturevalue(family)
    folder = str(tmp_path / "preset")
    save_keras_hub_preset(encoder, tokenizer, folder)
    inputs = sample_inputs(vocab=tokenizer.vocabulary_size)
    # keras-hub reads it with its own classes: the same outputs, the same ids
    theirs = getattr(keras_hub.models, backbone).from_preset(folder)
    assert _max_diff(encoder(inputs), theirs(inputs), inputs) <= 1e-5
    task = getattr(keras_hub.models, classifier).from_preset(folder, num_classes=3)
    texts = TEXTS if family == "albert" else NO_HANGUL
    assert len(texts) >= 6
    hub_ids = [list(np.asarray(ids)) for ids in task.preprocessor.tokenizer(texts)]
    assert hub_ids == tokenizer.encode(texts)
    # and back: the same model and tokenizer
    again, again_tokenizer = load_keras_hub_preset(folder)
    assert _max_diff(encoder(inputs), again(inputs), inputs) <= 1e-6
    assert again_tokenizer.encode(TEXTS) == tokenizer.encode(TEXTS)


def test_the_command_line_converts_both_ways_and_init_takes_a_preset(
        albert, spm_path, tmp_path, task_files):
    encoder, _ = albert
    source = str(tmp_path / "ours.keras")
    encoder.save(source)
    preset = str(tmp_path / "preset")
    assert main(["convert", source, "--to", "keras-hub", "--tokenizer", spm_path,
                 "--out", preset]) == 0
    back = str(tmp_path / "back.keras")
    assert main(["convert", preset, "--out", back]) == 0
    inputs = sample_inputs(vocab=encoder.config.vocab_size)
    assert _max_diff(encoder(inputs), keras.saving.load_model(back)(inputs), inputs) <= 1e-6
    out = str(tmp_path / "cls")
    assert main(["finetune", "--init", preset, "--train", task_files["cls_train"],
                 "--out", out, "--epochs", "1", "--seq-length", "32"]) == 0
    assert os.path.isfile(os.path.join(out, "model.keras"))


@pytest.mark.parametrize("changes, words", [
    ({"sharing": "attention"}, "sharing='attention'"),
    ({"position_bias": "alibi"}, "no ALiBi"),
    ({"sharing": "none", "embedding_size": 32, "hidden_act": "gelu"}, "tanh GELU"),
])
def test_what_keras_hub_cannot_hold_is_refused_in_one_line(albert, tmp_path, changes, words):
    encoder, tokenizer = albert
    other = AlbertEncoder(AlbertConfig.from_dict({**encoder.config.to_dict(), **changes}))
    with pytest.raises(ConversionError, match=words) as error:
        save_keras_hub_preset(other, tokenizer, str(tmp_path / "preset"))
    assert "\n" not in str(error.value) and not os.path.exists(tmp_path / "preset")


@pytest.mark.parametrize("files", ["all", "no metadata.json", "no tokenizer"])
def test_a_preset_with_a_broken_config_is_named_as_such(albert, tmp_path, capsys, files):
    """A keras-hub preset whose config.json is not JSON: the file is named,
    not taken for another format or called "a keras-hub None preset", and
    named before its tokenizer is looked for (a copy without metadata.json,
    or without its tokenizer, was refused for its tokenizer)."""
    encoder, tokenizer = albert
    folder = tmp_path / "preset"
    save_keras_hub_preset(encoder, tokenizer, str(folder))
    (folder / "config.json").write_text('{"module": "keras_hub.src.models', encoding="utf-8")
    if files != "all":
        os.remove(folder / "metadata.json")
    if files == "no tokenizer":
        os.remove(folder / "tokenizer.json")
        shutil.rmtree(folder / "assets")
    assert main(["convert", str(folder), "--out", str(tmp_path / "x.keras")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "None" not in err
    assert f"{folder / 'config.json'}: not valid JSON" in err
    assert not (tmp_path / "x.keras").exists()


def test_a_preset_keras_hub_cannot_read_is_named_in_one_line(albert, tmp_path, capsys):
    """Valid JSON that keras-hub's from_preset refuses: the user's folder,
    so a one-line error naming the file (no traceback, not an internal error)."""
    encoder, tokenizer = albert
    folder = tmp_path / "preset"
    save_keras_hub_preset(encoder, tokenizer, str(folder))
    (folder / "config.json").write_text(
        '{"module": "keras_hub.src.models.albert.albert_backbone", '
        '"class_name": "AlbertBackbone", "config": {"vocabulary_size": "x"}}', encoding="utf-8")
    assert main(["convert", str(folder), "--out", str(tmp_path / "x.keras")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error" not in err
    assert f"{folder / 'config.json'}: keras-hub cannot read this preset" in err
    assert not (tmp_path / "x.keras").exists()


@pytest.mark.parametrize("hf_class", ["MobileBertModel", "DebertaV2Model"])
def test_other_families_are_refused_by_family(hf_class, tmp_path, capsys):
    make_hf_model(hf_class, tmp_path / "hf")
    write_small_vocab(tmp_path / "hf")
    capsys.readouterr()
    code = main(["convert", str(tmp_path / "hf"), "--to", "keras-hub", "--out",
                 str(tmp_path / "preset")])
    err = capsys.readouterr().err.strip()
    family = "mobilebert" if hf_class.startswith("Mobile") else "deberta"
    assert code == 2 and len(err.splitlines()) == 1, err
    assert f"a {family} model has no keras-hub preset form" in err
    assert not (tmp_path / "preset").exists()
