"""``import albert_keras`` behaves like a Keras library: every class a saved
model holds is registered (``keras.saving.load_model`` works in a fresh
process), and importing it changes no environment variable or Keras setting."""

import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

import albert_keras
from albert_keras.models.albert.albert_config import AlbertConfig
from tests.helpers import MOBILEBERT
from tests.helpers import SMALL

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Loads one .keras file after nothing but `import albert_keras` and dumps its weights.
_LOAD = """
import sys, numpy as np, keras, albert_keras
model = keras.saving.load_model(sys.argv[1])
np.savez(sys.argv[2], *[np.asarray(w) for w in model.weights])
print(type(model).__name__)
"""


def _encoder(**kwargs):
    return albert_keras.AlbertEncoder(AlbertConfig(vocab_size=60, **SMALL), **kwargs)


def _mobilebert(**kwargs):
    return albert_keras.MobileBertEncoder(albert_keras.MobileBertConfig(**MOBILEBERT), **kwargs)


def _string_in(spm_path):
    """A string-in model: the tokenizer and packer layers in front of an encoder."""
    tokenizer = albert_keras.SentencePieceTokenizer(spm_path)
    packer = albert_keras.SegmentPacker(16)
    text = keras.Input(shape=(), dtype="string")
    return keras.Model(text, packer(tokenizer(text)))


def _wordpiece_in():
    tokenizer = albert_keras.WordPieceTokenizer(["[UNK]", "[CLS]", "[SEP]", "hello", "world"])
    text = keras.Input(shape=(), dtype="string")
    return keras.Model(text, albert_keras.SegmentPacker(8)(tokenizer(text)))


_KINDS = {
    "encoder": lambda spm: _encoder(),
    "quantize_aware_encoder": lambda spm: _encoder(quantize_aware=True),
    "pretrainer": lambda spm: albert_keras.EncoderPretrainer(_encoder()),
    "electra_pretrainer": lambda spm: albert_keras.ElectraPretrainer(
        _encoder(), albert_keras.AlbertEncoder(AlbertConfig(vocab_size=60, **{
            **SMALL, "hidden_size": 16, "intermediate_size": 32}))),
    "discriminator": lambda spm: albert_keras.TokenDiscriminator(_encoder()),
    "classifier": lambda spm: albert_keras.SequenceClassifier(_encoder(), 3),
    "tagger": lambda spm: albert_keras.TokenTagger(_encoder(), 4),
    "question_answerer": lambda spm: albert_keras.SpanExtractor(_encoder()),
    "multiple_choice": lambda spm: albert_keras.ChoiceScorer(_encoder()),
    "embedder": lambda spm: albert_keras.SentenceEmbedder(_encoder()),
    "distiller": lambda spm: albert_keras.Distiller(
        albert_keras.SequenceClassifier(_encoder(), 3)),
    "mobilebert_encoder": lambda spm: _mobilebert(),
    "mobilebert_quantize_aware_encoder": lambda spm: _mobilebert(quantize_aware=True),
    "mobilebert_pretrainer": lambda spm: albert_keras.EncoderPretrainer(_mobilebert()),
    "mobilebert_classifier": lambda spm: albert_keras.SequenceClassifier(_mobilebert(), 3),
    "sentencepiece_packer": _string_in,
    "wordpiece_packer": lambda spm: _wordpiece_in(),
}


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_keras_load_model_after_import_in_a_fresh_process(kind, spm_path, tmp_path):
    keras.utils.set_random_seed(0)
    model = _KINDS[kind](spm_path)
    path = str(tmp_path / f"{kind}.keras")
    model.save(path)
    dump = str(tmp_path / "weights.npz")
    result = subprocess.run([sys.executable, "-c", _LOAD, path, dump], capture_output=True,
                            text=True, timeout=300, cwd=_ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-1] == type(model).__name__
    loaded = np.load(dump)
    assert len(loaded.files) == len(model.weights)
    for i, weight in enumerate(model.weights):
        np.testing.assert_array_equal(loaded[f"arr_{i}"], np.asarray(weight))


def test_every_module_that_registers_a_class_is_loaded_by_import():
    registering = set()
    for folder in ("albert_keras", "export"):
        for root, _, names in os.walk(os.path.join(_ROOT, folder)):
            for name in names:
                path = os.path.join(root, name)
                if name.endswith(".py") and "register_keras_serializable" in open(path).read():
                    module = os.path.relpath(path, _ROOT)[:-3].replace(os.sep, ".")
                    registering.add(re.sub(r"^export\.", "albert_keras.export.", module))
    script = "import sys, albert_keras; print(sorted(sys.modules))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, cwd=_ROOT, check=True).stdout
    assert registering and registering <= set(eval(out.splitlines()[-1]))


def _fresh(script, env):
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=_ROOT, env=env, check=True).stdout.splitlines()[-1]


def test_import_changes_no_environment_variable():
    # keras and TensorFlow set their own variables (TF2_BEHAVIOR, ...) when imported;
    # whatever importing albert_keras adds on top is ours
    env = {k: v for k, v in os.environ.items() if k not in ("KERAS_BACKEND",
                                                            "TF_CPP_MIN_LOG_LEVEL")}
    script = ("import os, json, keras, tensorflow, tensorflow_text, sentencepiece\n"
              "before = dict(os.environ)\n"
              "import albert_keras\n"
              "print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))")
    assert json.loads(_fresh(script, env)) == {}


def test_the_backend_follows_keras_json(tmp_path):
    (tmp_path / "keras.json").write_text(json.dumps({"backend": "jax"}))
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}
    env["KERAS_HOME"] = str(tmp_path)
    script = "import albert_keras, keras; print(keras.backend.backend())"
    assert _fresh(script, env) == "jax"


def _imported_modules(path):
    import ast

    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, node.lineno) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module, node.lineno


def test_model_floors_import_no_driver():
    """Layers, heads and models are the library a Keras user builds on: they
    import nothing from the drivers (tasks, training, data), anywhere in a
    file, so a model can be built and loaded without them."""
    drivers = ("albert_keras.tasks", "albert_keras.drivers", "albert_keras.training",
               "albert_keras.data")
    found = []
    for floor in ("layers", "heads", "models"):
        folder = os.path.join(_ROOT, "albert_keras", floor)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                found += [f"albert_keras/{floor}/{name}:{line} imports {module}"
                          for module, line in _imported_modules(path)
                          if module.startswith(drivers)]
    assert not found, "\n".join(found)
    # the check itself sees an upward import
    assert ("albert_keras.tasks.layer_map", 1) in list(_imported_modules_of_text(
        "from albert_keras.tasks.layer_map import layer_map\n"))


def _imported_modules_of_text(text):
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(text)
    try:
        return list(_imported_modules(f.name))
    finally:
        os.remove(f.name)


# An encoder's inner layers; only the encoder itself and its checkpoint name
# mapping (which names each weight) may reach them.
_BACKBONE_INSIDES = ("embeddings", "transformer", "attention_blocks", "ffn_blocks")
_BACKBONE_OWNERS = ("albert_keras/models/albert/albert_encoder.py",
                    "albert_keras/models/albert/encoder_variables.py")


def _backbone_reads(text):
    """``[(line, attribute)]`` where ``text`` reaches an encoder's inner
    layers: ``x.embeddings``, ``x.transformer``, ... on anything but ``self``
    (a layer's own weights) or an embedding table (``token_embedding.embeddings``
    is the table heads tie to)."""
    import ast

    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Attribute) or node.attr not in _BACKBONE_INSIDES:
            continue
        base = node.value
        if isinstance(base, ast.Name) and base.id == "self":
            continue
        # a table: ``token_embedding.embeddings``, or ``.embeddings`` of what a
        # call returns (a table layer, MediaPipe's embedding result)
        if node.attr == "embeddings" and (
                isinstance(base, ast.Call)
                or isinstance(base, ast.Attribute) and base.attr.endswith("_embedding")):
            continue
        found.append((node.lineno, node.attr))
    return found


def test_only_the_encoder_reaches_its_layers():
    """Pretrainers, task models, distillers, heads, layer decay and export go
    through the encoder's entry (``encode``, ``embed``, ``pool``,
    ``position_rows``, ``decode_rows``, ``variables_by_depth``), so a family
    with other blocks plugs in with its own encoder."""
    found = []
    for top in ("albert_keras", "export"):
        for folder, _, names in os.walk(os.path.join(_ROOT, top)):
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, _ROOT)
                if relative in _BACKBONE_OWNERS:
                    continue
                with open(path, encoding="utf-8") as f:
                    found += [f"{relative}:{line} reads .{attr}"
                              for line, attr in _backbone_reads(f.read())]
    assert not found, "\n".join(found)
    # the check itself sees a hand-run forward pass, and lets a table through
    assert _backbone_reads("x = encoder.transformer(encoder.embeddings(ids), mask)") == \
        [(1, "transformer"), (1, "embeddings")]
    assert _backbone_reads("t = encoder.token_embedding.embeddings") == []


def _kind_branches(text, kinds):
    """``[line]`` where ``text`` compares something with a tokenizer kind's
    name (``x == "wordpiece"``, ``kind in ("sentencepiece", ...)``) or
    compares a tokenizer's ``.kind`` with anything."""
    import ast

    def names_a_kind(node):
        if isinstance(node, ast.Constant):
            return node.value in kinds
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(map(names_a_kind, node.elts))
        return isinstance(node, ast.Attribute) and node.attr == "kind" and \
            "tokenizer" in ast.unparse(node.value)

    return [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Compare)
            and any(map(names_a_kind, [node.left, *node.comparators]))]


def _branches_outside(own, branches):
    """``["file:line"]`` of ``branches(text)`` in every module of the
    package and ``export`` but those under ``albert_keras/<own>``."""
    found = []
    for top in ("albert_keras", "export"):
        for folder, _, files in os.walk(os.path.join(_ROOT, top)):
            relative = os.path.relpath(folder, _ROOT)
            if relative.startswith(os.path.join("albert_keras", own)):
                continue
            for name in sorted(n for n in files if n.endswith(".py")):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    found += [f"{relative}/{name}:{line}" for line in branches(f.read())]
    return found


def test_only_the_tokenizer_kinds_branch_on_a_kind():
    """Export, the web folder, app metadata, HF and keras-hub folders ask a
    tokenizer kind what they need (``Tokenizer.app_files``, ``hf_files``...),
    so a new kind is its module and one registry line."""
    from albert_keras.text.registry import TOKENIZERS

    found = _branches_outside("text", lambda text: _kind_branches(text, set(TOKENIZERS)))
    assert not found, "\n".join(found)
    # the check itself sees both forms
    assert _kind_branches('if tokenizer.kind != "bpe": pass\nok = k in ("wordpiece",)',
                          {"bpe", "wordpiece"}) == [1, 2]


def _task_branches(text, names):
    """``[line]`` where ``text`` compares something with a task's, export
    kind's or transformers task class' name, or compares a model's
    ``export_kind`` or ``hf_task`` with anything."""
    import ast

    def names_one(node):
        if isinstance(node, ast.Constant):
            return node.value in names
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(map(names_one, node.elts))
        return isinstance(node, ast.Attribute) and node.attr in ("export_kind", "hf_task")

    return [node.lineno for node in ast.walk(ast.parse(text)) if isinstance(node, ast.Compare)
            and any(map(names_one, [node.left, *node.comparators]))]


def test_only_the_task_units_branch_on_a_task():
    """Export, conversion, training and the command line ask a task unit, a
    model's ``ExportKind`` or transformers' task table what they need, so a
    new task is its folder and one registry line (tests/test_toy_task.py).
    The names of a folder's parts (``export --part``: ``embedder``,
    ``discriminator``...) are left out: reading a part is not a branch on
    the model's kind."""
    import dataclasses

    import albert_keras
    from albert_keras.convert.hf_heads import HF_TASKS
    from albert_keras.export.export_config import ExportConfig
    from albert_keras.tasks.registry import TASKS

    kinds = {getattr(albert_keras, name).export_kind.name for name in (
        "SequenceClassifier", "TokenTagger", "SpanExtractor", "ChoiceScorer",
        "SentenceEmbedder", "TokenDiscriminator")}
    parts = next(f for f in dataclasses.fields(ExportConfig) if f.name == "part")
    names = (set(TASKS) | set(HF_TASKS) | kinds) - set(parts.metadata["choices"])
    found = _branches_outside("tasks", lambda text: _task_branches(text, names))
    assert not found, "\n".join(found)
    # the check itself sees every form
    assert _task_branches('a = k == "classify"\nb = t in ("QuestionAnswering",)\n'
                          'c = model.export_kind == x', names) == [1, 2, 3]


def _package_modules():
    """Module name -> file of every module of the package (``export`` is
    installed as ``albert_keras.export``)."""
    modules = {}
    for top, package in (("albert_keras", "albert_keras"), ("export", "albert_keras.export")):
        for folder, _, names in os.walk(os.path.join(_ROOT, top)):
            for name in (n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                parts = os.path.relpath(path, os.path.join(_ROOT, top))[:-3].split(os.sep)
                parts = parts[:-1] if parts[-1] == "__init__" else parts
                modules[".".join([package, *parts])] = path
    return modules


def _named_modules(tree):
    """The package's modules a file names in strings to import later
    (``"albert_keras.x.y"`` or ``"albert_keras.x.y:attr"``), unless the file
    is a registry: its top level holds a table naming two or more modules
    (naming them is its job)."""
    import ast

    def named(node):
        value = node.value.strip() if isinstance(node, ast.Constant) and \
            isinstance(node.value, str) else ""
        return value.split(":")[0] if value.startswith("albert_keras.") and \
            not any(c.isspace() for c in value) else None

    for node in tree.body:
        table = getattr(node, "value", None)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and \
                isinstance(table, (ast.Dict, ast.Tuple, ast.List)):
            items = table.values if isinstance(table, ast.Dict) else table.elts
            if sum(named(item) is not None for item in items) >= 2:
                return set()
    return {name for name in map(named, ast.walk(tree)) if name}


def _import_graph(modules):
    """Module -> the package's modules it imports, anywhere in the file
    (inside functions too) or names in a string to import later (outside
    registries); ``from a import b`` counts ``a.b`` when it is a module,
    else ``a``; a module's import of its own package is left out."""
    import ast

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        targets = _named_modules(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[module] = {r for r in map(resolve, targets)
                         if r and r != module and not module.startswith(r + ".")}
    return graph


def _cycle(graph):
    """One import cycle of ``graph`` (a list of modules), or None."""
    import graphlib

    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as e:
        return e.args[1]
    return None


def test_no_import_cycles_counting_imports_inside_functions(tmp_path):
    """The package's modules form no cycle, counting every import anywhere
    in a file and every module named in a string outside registries, and the converters' generic layer imports no model (each
    family owns its checkpoints)."""
    modules = _package_modules()
    graph = _import_graph(modules)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph))
    upward = [f"{m} imports {t}" for m, targets in graph.items()
              if m.startswith("albert_keras.convert") for t in targets
              if t.startswith(("albert_keras.models", "albert_keras.sources"))]
    assert not upward, "\n".join(upward)
    # the check sees a cycle closed by an import inside a function
    (tmp_path / "a.py").write_text("from p.b import f\n")
    (tmp_path / "b.py").write_text("def f():\n    from p import a\n    return a\n")
    small = _import_graph({"p.a": str(tmp_path / "a.py"), "p.b": str(tmp_path / "b.py")})
    assert small == {"p.a": {"p.b"}, "p.b": {"p.a"}} and _cycle(small) is not None
    # ... and one closed by a module named in a string, but not by a registry's table
    (tmp_path / "b.py").write_text('def f():\n    return attribute("albert_keras.a:g")\n')
    (tmp_path / "a.py").write_text("from albert_keras.b import f\n")
    (tmp_path / "r.py").write_text('READERS = ("albert_keras.a", "albert_keras.b")\n')
    named = _import_graph({f"albert_keras.{m}": str(tmp_path / f"{m}.py") for m in "abr"})
    assert named == {"albert_keras.a": {"albert_keras.b"}, "albert_keras.b": {"albert_keras.a"},
                     "albert_keras.r": set()}


def test_the_distribution_lists_every_package_folder_and_its_files():
    """A wheel holds the packages ``setup.cfg`` names and their data files:
    a folder with an ``__init__.py`` left out of that list (the model
    families were) imports in an editable install and is missing from the
    wheel, where ``import albert_keras`` then fails."""
    import configparser

    config = configparser.ConfigParser()
    config.read(os.path.join(_ROOT, "setup.cfg"))
    listed = set(config["options"]["packages"].split())
    mapped = dict(line.split(" = ") for line in
                  config["options"]["package_dir"].strip().splitlines())
    found = set()
    for package, folder in (("albert_keras", "albert_keras"), *mapped.items()):
        for here, _, files in os.walk(os.path.join(_ROOT, folder)):
            if "__init__.py" in files and "__pycache__" not in here:
                relative = os.path.relpath(here, os.path.join(_ROOT, folder))
                found.add(package if relative == "." else
                          package + "." + relative.replace(os.sep, "."))
    assert found == listed, (sorted(found - listed), sorted(listed - found))


def test_the_export_package_is_imported_by_its_installed_name():
    """``export/`` installs as ``albert_keras.export``; ``from export...``
    only worked from the repository root (the notebooks, run elsewhere,
    failed on it)."""
    bad = []
    for folder in ("albert_keras", "export"):
        for here, _, files in os.walk(os.path.join(_ROOT, folder)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(here, name)
                    with open(path, encoding="utf-8") as f:
                        if re.search(r"^\s*(from|import) export\b", f.read(), re.M):
                            bad.append(os.path.relpath(path, _ROOT))
    assert not bad, bad
