"""files.py: atomic outputs, no debris from killed runs, the user's umask."""

import os
import stat

import pytest

from albert_keras.files import check_output
from albert_keras.files import write_json
from albert_keras.files import writing_folder

# a process id no live process has (beyond Linux's default pid_max of 2**22)
_DEAD = 2**22 + 12345


def test_stale_temporaries_of_dead_runs_are_removed_live_ones_kept(tmp_path):
    stale_dir = tmp_path / f".out.tmp{_DEAD}-abcd"
    stale_dir.mkdir()
    (stale_dir / "half.tfrecord").write_bytes(b"x")
    stale_file = tmp_path / f".m.json.tmp{_DEAD}-"
    stale_file.write_text("{")
    live = tmp_path / f".out.tmp{os.getppid()}-beef"  # the parent is alive
    live.mkdir()
    other = tmp_path / f".other.tmp{_DEAD}-0000"  # another output's: not ours to touch
    other.mkdir()
    with writing_folder(str(tmp_path / "out")) as tmp:
        (open(os.path.join(tmp, "a"), "w")).close()
    write_json(str(tmp_path / "m.json"), {"a": 1})
    assert sorted(os.listdir(tmp_path)) == sorted(
        [live.name, other.name, "out", "m.json"])


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_outputs_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        with writing_folder(str(tmp_path / "out")) as tmp:
            write_json(os.path.join(tmp, "m.json"), {})
            # as safetensors' writer leaves its file (convert --to hf wrote 0600)
            os.close(os.open(os.path.join(tmp, "model.safetensors"), os.O_CREAT | os.O_WRONLY,
                             0o600))
        write_json(str(tmp_path / "x.json"), {})
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
    assert mode(tmp_path / "out") == 0o777 & ~umask
    assert mode(tmp_path / "out" / "m.json") == 0o666 & ~umask
    assert mode(tmp_path / "out" / "model.safetensors") == 0o666 & ~umask
    assert mode(tmp_path / "x.json") == 0o666 & ~umask


def test_check_output_refuses_existing_files_and_inputs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.txt").write_text("x")
    check_output(str(tmp_path / "new.txt"), [str(data)])
    with pytest.raises(FileExistsError, match="in.txt exists; pass --overwrite"):
        check_output(str(data / "in.txt"))
    for out, inputs in ((data / "in.txt", [str(data / "in.txt")]),  # the input itself
                        (data / "in.txt", [str(data)]),  # a file of an input folder
                        (tmp_path, [str(data / "in.txt")])):  # a folder holding an input
        with pytest.raises(FileExistsError, match="is an input of this command"):
            check_output(str(out), inputs, overwrite=True)


def test_check_output_finds_an_unwritable_place_before_any_work(tmp_path):
    blocker = tmp_path / "file.txt"
    blocker.write_text("x")
    with pytest.raises(NotADirectoryError, match="file.txt is a file, not a folder"):
        check_output(str(blocker / "run" / "model.keras"))
