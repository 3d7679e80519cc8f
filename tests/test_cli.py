import os
import subprocess
import sys

import numpy as np
import transformers

from albert_keras.cli import main
from albert_keras.saving import load_model
from tests.helpers import all_positions
from tests.helpers import hf_bert_tokenizer
from tests.helpers import make_hf_model
from tests.helpers import max_diff
from tests.helpers import run_hf
from tests.helpers import sample_inputs
from tests.helpers import write_small_vocab


def test_presets_table(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    for count in ("11,683,584", "17,683,968", "58,724,864", "222,595,584"):
        assert count in out
    for name in ("albert_tiny", "bert_tiny", "bert_base", "albert_xxlarge"):
        assert name in out
    assert "63,647,232" in out and "37,686,528" in out  # Table 4 variants
    line = next(x for x in out.splitlines() if x.startswith("mobilebert_shared "))
    assert line.split()[1:2] == ["mobilebert"] and "1 blocks" in line


def test_console_script_is_installed():
    result = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "albert-keras"), "--help"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0 and "convert" in result.stdout


def test_no_flag_states_its_default_twice():
    """A help text that says its default is not given a second "(default: ...)"."""
    from albert_keras.cli import build_parser

    subparsers = next(a for a in build_parser()._actions if a.choices and
                      isinstance(a.choices, dict))
    for name, parser in subparsers.choices.items():
        for action in parser._actions:
            shown = (action.help or "").replace("%(default)s", "x")
            assert shown.count("(default") <= 1, (name, action.option_strings)


def test_convert_hf_to_keras_and_back(tmp_path, capsys):
    hf_model = make_hf_model("AlbertForPreTraining", tmp_path / "hf")
    write_small_vocab(tmp_path / "hf")
    out = str(tmp_path / "model.keras")
    assert main(["convert", str(tmp_path / "hf"), "--out", out]) == 0
    assert "EncoderPretrainer" in capsys.readouterr().out
    model = load_model(out)
    # the file carries the folder's tokenizer: export and fine-tuning read it alone
    reference = hf_bert_tokenizer(str(tmp_path / "hf" / "vocab.txt"), lowercase=True)
    text = "the quick brown fox"
    assert list(model.encoder.tokenizer.encode([text])[0]) == reference(
        text, add_special_tokens=False)["input_ids"]
    inputs = sample_inputs()
    logits = model({**inputs, "masked_positions": all_positions(inputs)})["mlm_logits"]
    assert max_diff(logits, run_hf(hf_model, inputs).prediction_logits,
                    inputs["padding_mask"]) <= 1e-5

    # An existing output is kept unless --overwrite.
    assert main(["convert", str(tmp_path / "hf"), "--out", out]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "hf"), "--out", out, "--overwrite"]) == 0

    back = str(tmp_path / "back")
    assert main(["convert", out, "--to", "hf", "--out", back]) == 0
    reloaded = transformers.AlbertForPreTraining.from_pretrained(back).eval()
    np.testing.assert_allclose(
        run_hf(reloaded, inputs).prediction_logits.numpy(),
        run_hf(hf_model, inputs).prediction_logits.numpy(), atol=1e-6,
    )


def test_convert_to_keras_needs_a_tokenizer(tmp_path, capsys):
    """A folder without a tokenizer file is refused before any work, unless
    --tokenizer gives one; a tokenizer larger than the model's vocabulary is
    refused too."""
    make_hf_model("BertModel", tmp_path / "hf")
    capsys.readouterr()
    out = tmp_path / "m.keras"
    assert main(["convert", str(tmp_path / "hf"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--tokenizer" in err and "hf" in err
    assert not out.exists()
    vocab = write_small_vocab(tmp_path / "elsewhere")
    assert main(["convert", str(tmp_path / "hf"), "--out", str(out), "--tokenizer",
                 vocab]) == 0
    assert load_model(str(out)).tokenizer.vocabulary_size == 99
    big = write_small_vocab(tmp_path / "big", size=150)  # more pieces than the 99 rows
    assert main(["convert", str(tmp_path / "hf"), "--out", str(tmp_path / "n.keras"),
                 "--tokenizer", big]) != 0
    assert not (tmp_path / "n.keras").exists()


def test_convert_errors_are_one_line(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code = main(["convert", str(tmp_path / "empty"), "--out", str(tmp_path / "m.keras")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "neither an HF folder" in err and "empty" in err
    assert not os.path.exists(tmp_path / "m.keras")

    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text('{"model_type": "albert", "colour": 3}')
    write_small_vocab(tmp_path / "hf")
    code = main(["convert", str(tmp_path / "hf"), "--out", str(tmp_path / "m.keras")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "config.json" in err and "'colour'" in err
    assert sorted(os.listdir(tmp_path)) == ["empty", "hf"]  # nothing half-written


def test_tokenizer_and_data_commands(tmp_path, corpus_file, capsys):
    model = str(tmp_path / "tok" / "spm.model")
    assert main(["tokenizer", "train", "--input", corpus_file, "--vocab-size", "100",
                 "--out", model]) == 0
    assert "wrote" in capsys.readouterr().out
    out = str(tmp_path / "data")
    assert main(["data", "create", "--input", corpus_file, "--tokenizer", model,
                 "--out", out, "--max-seq-length", "32", "--max-predictions", "5",
                 "--dupe-factor", "1", "--eval-fraction", "0.1"]) == 0
    # one worker: tests/data/test_create.py's `made` fixture runs a pool
    printed = capsys.readouterr().out
    assert "train:" in printed and "eval:" in printed
    assert os.path.isfile(os.path.join(out, "manifest.json"))
    # The same command again refuses to overwrite.
    assert main(["data", "create", "--input", corpus_file, "--tokenizer", model,
                 "--out", out]) == 2
    assert "--overwrite" in capsys.readouterr().err


def test_bad_corpus_is_one_line_naming_file_and_line(tmp_path, spm_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"Fine. Good.\n\xff\xfe\n")
    code = main(["data", "create", "--input", str(bad), "--tokenizer", spm_path,
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "bad.txt:2" in err
    assert not (tmp_path / "out").exists()
