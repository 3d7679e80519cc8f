"""Writing files and folders so that no half-written output ever survives.

Every output of the package (models, JSON, shards, exports, predictions) is
written under a temporary name in the destination's own folder and renamed
when it is complete: a rename within one file system is atomic, so a crash
or ``kill -9`` leaves either the old file or the new one, never a torn one.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil

# Temporary names carry the writer's process id: ``.NAME.tmp<pid>-...``. A run
# that was killed leaves its temporary behind; the next writer of NAME in the
# same folder removes every one whose process is gone.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.tmp(?P<pid>\d+)-")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def clean_stale(folder, name):
    """Removes temporaries of ``name`` in ``folder`` left by dead processes."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return
    for entry in entries:
        match = _TEMPORARY.match(entry)
        if (match and match.group("name") == name and int(match.group("pid")) != os.getpid()
                and not _alive(int(match.group("pid")))):
            path = os.path.join(folder, entry)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(path)


def check_output(path, inputs=(), overwrite=False, folder=False, marks=None):
    """Refuses to write ``path`` over an existing file or over an input.

    Args:
        path: the file or folder about to be written.
        inputs: files and folders the command reads; ``path`` may never be
            one of them, nor inside an input folder, even with ``overwrite``.
        overwrite: whether an existing ``path`` may be replaced.
        folder: whether the output is a folder (else a file); an existing
            path of the other kind is refused even with ``overwrite``.
        marks: for a folder, the names whose presence makes an existing one
            an earlier output of the command: ``overwrite`` replaces a
            folder that holds one of them (or nothing), never one of the
            user's (a folder of their notes was deleted whole).

    Raises:
        FileExistsError: one line naming ``path``.

    Example:
    >>> check_output("preds.jsonl", inputs=["test.jsonl"])  # doctest: +SKIP
    """
    real = os.path.realpath(path)
    for source in inputs:
        if source in (None, "-"):
            continue
        src = os.path.realpath(source)
        inside = os.path.isdir(src) and real.startswith(src + os.sep) and os.path.exists(real)
        # replacing a folder that holds an input would delete the input
        holds = os.path.isdir(real) and src.startswith(real + os.sep)
        if real == src or inside or holds:
            raise FileExistsError(
                f"{path}: is an input of this command ({source}); write the output elsewhere")
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"{path} exists; pass --overwrite to replace it")
    if os.path.exists(path) and os.path.isdir(path) != folder:
        found, wanted = ("a folder", "a file") if os.path.isdir(path) else ("a file", "a folder")
        raise FileExistsError(f"{path} is {found}; the output is {wanted}, name another path")
    entries = os.listdir(path) if folder and marks is not None and os.path.isdir(path) else []
    if entries and not set(marks) & set(entries):
        raise FileExistsError(f"{path}: holds files this command did not write (e.g. "
                              f"{sorted(entries)[0]}); --overwrite replaces an earlier output "
                              "only, never deletes other files: name a new or empty folder")
    # where it will be written must be (or become) a writable folder: found
    # now, not after an hour of training
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise NotADirectoryError(f"{path}: cannot be written, {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PermissionError(f"{path}: cannot be written, {parent} is not writable")


@contextlib.contextmanager
def atomic_path(path, suffix=""):
    """Yields a temporary path beside ``path`` that replaces it on success.

    On any error (or interruption) the temporary file is removed and
    ``path`` is left as it was.

    Args:
        path: the destination file.
        suffix: kept at the end of the temporary name, for writers that
            insist on an extension (``.keras``, ``.npy``).

    Example:
    >>> with atomic_path("weights.npy", suffix=".npy") as tmp:  # doctest: +SKIP
    ...     np.save(tmp, array)
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    clean_stale(folder, os.path.basename(path))
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp{os.getpid()}-{suffix}")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


@contextlib.contextmanager
def atomic_write(path, mode="w"):
    """``open(path, mode)`` under a temporary name, renamed on success."""
    with atomic_path(path) as tmp:
        encoding = None if "b" in mode else "utf-8"
        with open(tmp, mode, encoding=encoding) as f:
            yield f


def write_json(path, data):
    """Writes JSON atomically, indented and with sorted keys."""
    with atomic_write(path) as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")


def read_json(path):
    """Reads a JSON file; a missing or broken one is a one-line error naming it."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}:{e.lineno}: not JSON ({e.msg})") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read JSON: {e}") from None


@contextlib.contextmanager
def writing_folder(folder):
    """Yields a temporary folder that replaces ``folder`` when the block ends.

    On any error (or interruption) the temporary folder is removed and
    ``folder`` is left as it was, so no half-written output survives.
    """
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    name = os.path.basename(os.path.abspath(folder))
    clean_stale(parent, name)
    tmp = os.path.join(parent, f".{name}.tmp{os.getpid()}-{os.urandom(4).hex()}")
    # os.mkdir honours the umask (tempfile.mkdtemp would make it 0700)
    os.mkdir(tmp, 0o777)
    try:
        yield tmp
        _follow_umask(tmp)
        if os.path.exists(folder):
            shutil.rmtree(folder)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _current_umask():
    mask = os.umask(0o022)  # read by setting it; put back at once
    os.umask(mask)
    return mask


def _follow_umask(folder):
    """Every file under ``folder`` readable as the umask allows: libraries
    that write through their own temporary files (safetensors' writer) leave
    them 0600, where a file the user makes would be 0644 under umask 0022."""
    mask = _current_umask()
    for root, _, files in os.walk(folder):
        for name in files:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                os.chmod(path, 0o666 & ~mask)


@contextlib.contextmanager
def writing_into(folder, marks=(), overwrite=False):
    """Yields a temporary folder whose files then go into ``folder``, where
    nothing of the user's is ever removed.

    A new or empty ``folder`` is replaced whole, as ``writing_folder`` does.
    An existing one keeps every entry the block did not write: each written
    file replaces its namesake alone. A non-empty folder that holds none of
    ``marks`` (the file names that make it one of the package's folders) is
    the user's, and refused unless ``overwrite``.

    Args:
        folder: the destination folder.
        marks: names whose presence makes ``folder`` one of ours.
        overwrite: write into a non-empty folder that is not one of ours.

    Raises:
        FileExistsError: one line naming ``folder``, before any work.

    Example:
    >>> with writing_into("runs/reviews", marks=("task.json",)) as tmp:  # doctest: +SKIP
    ...     write_json(os.path.join(tmp, "task.json"), spec)
    """
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise FileExistsError(f"{folder} is a file; the output is a folder, name another path")
    entries = os.listdir(folder) if os.path.isdir(folder) else []
    if not entries:
        with writing_folder(folder) as tmp:
            yield tmp
        return
    if not overwrite and not set(marks) & set(entries):
        raise FileExistsError(f"{folder}: a folder with other files in it (e.g. "
                              f"{sorted(entries)[0]}); name a new or empty folder, or pass "
                              "overwrite=True to write beside them (none is removed)")
    clean_stale(folder, "incoming")
    tmp = os.path.join(folder, f".incoming.tmp{os.getpid()}-{os.urandom(4).hex()}")
    os.mkdir(tmp, 0o777)
    try:
        yield tmp
        _follow_umask(tmp)
        for name in os.listdir(tmp):  # file by file: what the block did not write stays
            target = os.path.join(folder, name)
            if os.path.isdir(target) and not os.path.islink(target):
                raise FileExistsError(f"{target}: a folder where a file goes; remove it")
            os.replace(os.path.join(tmp, name), target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def removed_on_failure(folder, keep=lambda: False):
    """Removes ``folder`` if the block fails and the folder is new.

    For runs that fill a folder as they go: a run that fails before it has
    anything worth resuming (``keep()`` is False) leaves nothing behind. A
    folder that existed before the block is never removed.

    Example:
    >>> with removed_on_failure("runs/x", keep=lambda: has_checkpoint("runs/x")):
    ...     train("runs/x")  # doctest: +SKIP
    """
    existed = os.path.exists(folder)
    try:
        yield
    except BaseException:
        if not existed and os.path.isdir(folder) and not keep():
            shutil.rmtree(folder, ignore_errors=True)
        raise


def sha256_file(path):
    """The hex SHA-256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
