"""Bad input, round 3: every value is checked where its flag is parsed and
named by that flag; flags that do not apply are errors; SIGTERM stops like
Ctrl-C; Beam errors and misleading messages are one true line each."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from albert_keras.cli import main

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_CLI = [sys.executable, "-m", "albert_keras_cli"]


def _error_line(capsys, argv):
    """Runs the command in-process; returns its exit status and its one stderr line."""
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return status, lines[0]


@pytest.mark.parametrize("argv, flag", [
    (["pretrain", "--eval-steps", "-1"], "--eval-steps"),  # hung after the first epoch
    (["pretrain", "--threads", "0"], "--threads"),
    (["pretrain", "--short-seq-fraction", "1.5"], "--short-seq-fraction"),
    (["pretrain", "--short-seq-fraction", "-0.5"], "--short-seq-fraction"),
    (["pretrain", "--generator-size", "0.001"], "--generator-size"),
    (["export", "m", "--out", "m.tflite", "--tolerance", "nan"], "--tolerance"),
    (["export", "m", "--out", "m.tflite", "--tolerance", "0"], "--tolerance"),
    (["export", "m", "--out", "m.tflite", "--min-cosine", "2"], "--min-cosine"),
    (["export", "m", "--out", "m.tflite", "--examples", "0"], "--examples"),
    (["export", "m", "--out", "m.tflite", "--calibration-examples", "0"],
     "--calibration-examples"),
    (["export", "m", "--out", "m.tflite", "--seq-len", "0"], "--seq-len"),  # the former spelling
    (["export", "m", "--out", "m.tflite", "--seq-length", "0"], "--seq-length"),
    (["bench", "m.tflite", "--runs", "0"], "--runs"),
    (["bench", "m.tflite", "--top", "-2"], "--top"),
    (["data", "create", "--tokenizer", "t", "--out", "o", "--examples-per-shard", "0"],
     "--examples-per-shard"),
    (["data", "create", "--tokenizer", "t", "--out", "o", "--examples-per-shard", "-5"],
     "--examples-per-shard"),
    (["data", "create", "--tokenizer", "t", "--out", "o", "--workers", "0"], "--workers"),
    (["data", "create", "--tokenizer", "t", "--out", "o", "--workers", "-2"], "--workers"),
    (["finetune", "--init", "x", "--train", "t.csv", "--out", "o", "--ema", "1"], "--ema"),
])
def test_a_bad_value_is_named_by_its_flag_where_it_is_parsed(capsys, tmp_path, monkeypatch,
                                                            argv, flag):
    monkeypatch.chdir(tmp_path)
    status, line = _error_line(capsys, argv)
    assert status == 2
    assert line.startswith("albert-keras ") and f"argument {flag}: must be" in line
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("argv, words", [
    (["--data", "d", "--dupe-factor", "9"], "--dupe-factor: --data brings examples"),
    (["--data", "d", "--masking", "span"], "--masking: --data brings examples"),
    (["--data", "d", "--max-seq-length", "64"], "--max-seq-length: --data brings"),
    (["--data", "d", "--ngram", "1"], "--ngram: --data brings"),
    (["--init", "m", "--preset", "albert_base"], "--preset: --init brings its own"),
    (["--init", "m", "--model-overrides", '{"num_hidden_layers": 1}'],
     "--model-overrides: --init brings its own"),
    (["--objective", "mlm_sop", "--generator-size", "0.5"],
     "--generator-size: only --objective rtd reads it"),
    (["--rtd-sop", "--embedding-sharing", "gdes"], "only --objective rtd reads them"),
])
def test_a_flag_that_does_not_apply_is_an_error(capsys, tmp_path, argv, words):
    status, line = _error_line(capsys, ["pretrain", "--out", str(tmp_path / "run"), *argv])
    assert status == 2 and words in line
    assert not (tmp_path / "run").exists()


def test_resume_compares_only_what_the_objective_reads():
    from albert_keras.training.pretrain_config import PretrainConfig
    from albert_keras.training.pretrain_config import resume_conflicts

    recorded = {"generator_size": 0.5, "rtd_weight": 10.0, "objective": "mlm_sop",
                "batch_size": 64}
    assert resume_conflicts(recorded, PretrainConfig(batch_size=64), "mlm_sop") == []
    assert resume_conflicts({**recorded, "objective": "rtd"},
                            PretrainConfig(objective="rtd"), "rtd") != []


@pytest.mark.parametrize("name, random_next", [("mlm_nsp", False), ("mlm_sop", True)])
def test_a_sentence_objective_must_match_the_pairs_of_its_data(name, random_next):
    from albert_keras.training.objectives import get_objective

    manifest = {"config": {"random_next": random_next, "packing": "pairs"}}
    with pytest.raises(ValueError, match=f"--objective {name} needs"):
        get_objective(name, manifest)


def test_the_usage_block_is_for_help_only(capsys):
    status, line = _error_line(capsys, ["data"])
    assert status == 2 and "required: COMMAND" in line and "data_command" not in line


def test_an_output_of_the_wrong_kind_is_refused_before_work(tmp_path):
    from albert_keras.files import check_output

    folder = tmp_path / "model.tflite"
    folder.mkdir()
    with pytest.raises(FileExistsError, match="is a folder; the output is a file"):
        check_output(str(folder), overwrite=True)
    a_file = tmp_path / "run"
    a_file.write_text("x")
    with pytest.raises(FileExistsError, match="is a file; the output is a folder"):
        check_output(str(a_file), overwrite=True, folder=True)


def test_export_over_a_folder_writes_neither_model_nor_sidecar(capsys, tmp_path, init_folder):
    out = tmp_path / "model.tflite"
    out.mkdir()
    status, line = _error_line(capsys, ["export", init_folder, "--out", str(out),
                                        "--overwrite"])
    assert status == 2 and "is a folder" in line
    assert sorted(os.listdir(tmp_path)) == ["model.tflite"]


def test_qat_on_a_pretraining_folder_says_why_first(capsys, tmp_path, init_folder):
    status, line = _error_line(capsys, ["export", init_folder, "--out",
                                        str(tmp_path / "m.tflite"), "--quantize", "qat"])
    assert status == 2 and "needs a fine-tuned task folder" in line


def test_a_folder_without_a_model_or_a_tokenizer_is_named_as_such(tmp_path):
    from albert_keras.sources.model_source import tokenizer_path

    with pytest.raises(FileNotFoundError, match="no model here"):
        tokenizer_path(str(tmp_path))
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "bert", "vocab_size": 40, "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16}))
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(FileNotFoundError, match="no tokenizer file .*vocab.txt"):
        tokenizer_path(str(tmp_path))


def test_a_tokenizer_that_does_not_fit_is_reported(caplog):
    import numpy as np

    from albert_keras.tasks.tokenizer_fit import check_tokenizer_fit

    class Pieces:
        vocabulary_size, source = 5, "tokenizer.json"
        special_ids = {"pad": 0, "unk": 1, "cls": 2, "sep": 3, "mask": 4}

    ids = np.array([[2, 1, 1, 1, 4, 3, 0]])
    mask = (ids != 0).astype("int32")
    with caplog.at_level("WARNING"):
        unknown = check_tokenizer_fit(Pieces(), 400, ids, mask, "train.csv")
    assert unknown == 0.75
    assert "5 pieces for a model of 400 ids" in caplog.text
    assert "train.csv: 75% of the pieces are [UNK]" in caplog.text
    with pytest.raises(ValueError, match="5 pieces, but the model's vocabulary has 4"):
        check_tokenizer_fit(Pieces(), 4, ids, mask, "train.csv")


def _sigterm_once(argv, folder, timeout=300):
    # its own process group: what the command started is killed with it if it hangs
    proc = subprocess.Popen(_CLI + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=_ROOT, start_new_session=True)
    deadline = time.time() + timeout
    while not os.path.exists(folder) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        ended = proc.poll() is not None  # and something it started holds stderr
        left = _kill_group(proc)  # never leave a run behind to slow the rest of the suite
        raise AssertionError(f"the stopped run left {left} process(es) behind" if ended
                             else "the run went on after SIGTERM") from None
    # a process the command started and left behind holds stderr open: the
    # run above ended, its leftovers must not
    leftovers = _kill_group(proc)
    assert not leftovers, f"the stopped run left {leftovers} process(es) behind"
    return proc.returncode, err


def _kill_group(proc):
    """SIGKILLs what is left of ``proc``'s process group; returns how many
    processes were left."""
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return 0
    # a zombie has ended (a child that exited as the run was stopped, waiting
    # for init to reap it: one run in six here): only a live process is left behind
    left = sum(1 for pid in os.listdir("/proc")
               if pid.isdigit() and _group_and_state(pid) == (proc.pid, True))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    return left


def _group_and_state(pid):
    """``(process group, alive)`` of ``pid`` (alive: not a zombie), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[2]), fields[0] != "Z"
    except (OSError, IndexError, ValueError):
        return None


def test_sigterm_before_the_first_checkpoint_leaves_no_folder(tmp_path, corpus_file, spm_path):
    out = str(tmp_path / "run")
    status, err = _sigterm_once(["pretrain", "--input", corpus_file, "--tokenizer", spm_path,
                                 "--out", out, "--steps", "100000"], out)
    assert status == 143, err
    assert err.strip().splitlines()[-1] == "albert-keras pretrain: terminated"
    assert not os.path.exists(out)


@pytest.fixture(scope="module")
def beam_corpora(tmp_path_factory):
    folder = tmp_path_factory.mktemp("beam")
    (folder / "empty.txt").write_text("")
    (folder / "one.txt").write_text("Only one sentence here.\n")
    (folder / "bad.txt").write_bytes(b"Bad \xff\xfe bytes here. And more of them.\n")
    return folder


@pytest.mark.parametrize("name, extra, words", [
    ("empty.txt", [], "no usable document"),
    ("one.txt", [], "no usable document"),
    ("bad.txt", [], "not valid UTF-8"),
    ("one.txt", ["--beam-options=--direct_num_workers=abc"],
     "--beam-options: argument --direct_num_workers: invalid int value"),
])
@pytest.mark.sampled(keep=2)  # CI: 2 of these sets per commit
def test_beam_errors_are_one_line(beam_corpora, spm_path, name, extra, words):
    out = beam_corpora / f"out_{name}"
    done = subprocess.run(_CLI + ["data", "create", "--input", str(beam_corpora / name),
                                  "--tokenizer", spm_path, "--out", str(out),
                                  "--runner", "beam", *extra],
                          capture_output=True, text=True, timeout=600, cwd=_ROOT)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert words in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("command", [
    ["convert", "{model}", "--to", "hf"],
    ["convert", "{model}", "--to", "keras-hub"],
    ["finetune", "--task", "classify", "--init", "{model}", "--train", "{train}",
     "--epochs", "1"],
])
def test_overwrite_never_deletes_a_users_folder(capsys, tmp_path, classifier_folder,
                                                init_folder, task_files, command):
    """``--overwrite`` replaces an earlier output; a folder that holds only
    the user's notes was deleted whole by ``convert --to hf``."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    model = init_folder if "keras-hub" in command else classifier_folder
    argv = [a.format(model=model, train=task_files["cls_train"]) for a in command]
    status, line = _error_line(capsys, [*argv, "--out", str(out), "--overwrite"])
    assert status == 2 and "holds files this command did not write (e.g. notes.txt)" in line
    assert os.listdir(out) == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    # an earlier output of the command is replaced
    os.remove(out / "notes.txt")
    os.rmdir(out)
    assert main([*argv, "--out", str(out)]) == 0
    assert main([*argv, "--out", str(out), "--overwrite"]) == 0


def test_more_float_layers_than_the_model_has_is_refused_before_converting(
        capsys, tmp_path, classifier_folder, monkeypatch):
    from albert_keras.export import export_model

    def no_conversion(*args, **kwargs):
        raise AssertionError("converted before refusing")

    monkeypatch.setattr(export_model, "convert", no_conversion)
    out = tmp_path / "m.tflite"
    status, line = _error_line(capsys, ["export", classifier_folder, "--out", str(out),
                                        "--quantize", "int8", "--int8-float-layers", "999"])
    assert status == 2 and "--int8-float-layers 999: the model has at most" in line, line
    assert not out.exists()
