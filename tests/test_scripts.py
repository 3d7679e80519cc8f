"""The benchmark and report scripts still import what they name.

They run outside the test suite (minutes to hours each), so a module moved or
a function renamed in the package would otherwise surface only when somebody
next runs them: ``benchmarks/finetune_parity.py`` imported ``finetune_recipe``
from its own folder for a round after that script had moved to
``docs/reports/code``. Every import statement is checked, including those
inside functions, without running the scripts.
"""

import ast
import importlib
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("benchmarks", os.path.join("docs", "reports", "code"))
SCRIPTS = sorted(
    os.path.join(folder, name) for folder in FOLDERS
    for name in os.listdir(os.path.join(ROOT, folder))
    if name.endswith(".py") and not name.startswith("test_") and name != "conftest.py")


def _top_level_names(path):
    """What a module defines or imports at its top level."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def _imports(path):
    """``(module, [names], line)`` for every import in the file."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            yield node.module, [a.name for a in node.names], node.lineno


def _script_folders(script):
    """The folders a script's sibling imports may come from: its own, and any
    folder it adds to ``sys.path`` by a literal path under the repository."""
    folders = [os.path.join(ROOT, os.path.dirname(script))]
    with open(os.path.join(ROOT, script), encoding="utf-8") as f:
        text = f.read()
    for other in FOLDERS:
        parts = other.split(os.sep)
        if all(f'"{part}"' in text for part in parts) and "sys.path.insert" in text:
            folders.append(os.path.join(ROOT, other))
    return folders


def _problem(script, module, names, folders):
    """None when ``from module import names`` resolves, else what is wrong."""
    top = module.split(".")[0]
    if top in ("albert_keras", "albert_keras_cli"):
        loaded = importlib.import_module(module)
        missing = [n for n in names if not hasattr(loaded, n)
                   and importlib.util.find_spec(f"{module}.{n}") is None]
        return f"{module} has no {missing}" if missing else None
    siblings = [os.path.join(f, f"{top}.py") for f in folders]
    sibling = next((s for s in siblings if os.path.exists(s)), None)
    if sibling is None:
        # Not a script of ours: a library, or a sibling that no longer exists.
        if importlib.util.find_spec(top) is None and _looks_local(top):
            return f"no module {top!r} beside the script"
        return None
    missing = [n for n in names if n not in _top_level_names(sibling)]
    return f"{os.path.relpath(sibling, ROOT)} defines no {missing}" if missing else None


def _looks_local(name):
    """A name that was once one of our scripts (any .py anywhere in the repo)."""
    for folder, _, files in os.walk(ROOT):
        if ".venv" in folder or "build" in folder.split(os.sep):
            continue
        if f"{name}.py" in files:
            return True
    return False


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_imports_resolve(script):
    folders = _script_folders(script)
    problems = [f"{script}:{line}: {problem}"
                for module, names, line in _imports(os.path.join(ROOT, script))
                if (problem := _problem(script, module, names, folders))]
    assert not problems, "\n".join(problems)


def test_the_check_finds_a_moved_sibling(tmp_path, monkeypatch):
    """The regression it was written for: a sibling script that moved away."""
    # a test that ran the report scripts in this process may have put their
    # folder (where finetune_recipe.py lives) on the path, or imported it
    monkeypatch.delitem(sys.modules, "finetune_recipe", raising=False)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if not os.path.isfile(
        os.path.join(p or os.getcwd(), "finetune_recipe.py"))])
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "mover.py").write_text("from finetune_recipe import tfidf_baseline\n")
    found = list(_imports(str(folder / "mover.py")))
    assert found == [("finetune_recipe", ["tfidf_baseline"], 1)]
    assert _problem("benchmarks/mover.py", "finetune_recipe", ["tfidf_baseline"],
                    [str(folder)]) == "no module 'finetune_recipe' beside the script"
