"""Every ``albert-keras`` command line in the README and the docs parses as
written, every Python example runs, and the CLI reference is the parser's.

The commands are read from fenced code blocks (continuation lines joined,
comments dropped) and parsed by the real command line, so a renamed flag or a
value argparse would misread (``--layers -2,-1``) fails here instead of in a
user's terminal.
"""

import glob
import os
import shlex
import textwrap

import pytest

from albert_keras.cli import _join_negative_values
from albert_keras.cli import build_parser
from albert_keras.cli.reference import cli_reference

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md"),
         *sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True))]


def _blocks(path, languages):
    """The fenced code blocks of ``path`` whose language is in ``languages``
    (a block inside a list item loses the item's indentation)."""
    blocks, current = [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            fence = line.strip()
            if fence.startswith("```"):
                if current is None:
                    current = [] if fence[3:].strip() in languages else False
                else:
                    if current is not False:
                        blocks.append(textwrap.dedent("".join(current)))
                    current = None
            elif current not in (None, False):
                current.append(line)
    return blocks


def page_commands():
    commands = []
    for path in PAGES:
        for block in _blocks(path, ("bash", "sh", "")):
            for line in block.replace("\\\n", " ").splitlines():
                for part in line.split("&&"):
                    words = shlex.split(part, comments=True)
                    if words and words[0] == "albert-keras" and "..." not in words:
                        commands.append((os.path.relpath(path, ROOT), words[1:]))
    return commands


def test_the_readme_shows_commands():
    # the tour's pretraining, fine-tuning and export at least
    shown = {words[0] for page, words in page_commands() if page == "README.md" and words}
    assert {"pretrain", "finetune", "export", "evaluate", "predict", "bench"} <= shown


@pytest.mark.parametrize("page, words", page_commands(),
                         ids=[f"{p}: {' '.join(w)}"[:120] for p, w in page_commands()])
def test_command_parses(page, words):
    args = build_parser().parse_args(_join_negative_values(words))
    assert callable(args.func)


def test_the_cli_reference_is_the_parsers():
    with open(os.path.join(ROOT, "docs", "cli.md"), encoding="utf-8") as f:
        assert f.read() == cli_reference(), (
            "docs/cli.md is out of date: python -m albert_keras.cli.reference > docs/cli.md")


def test_python_examples_run(classifier_folder, init_folder, task_files, tmp_path, monkeypatch):
    """The README's and the guides' Python blocks, in order, in a folder that
    holds what they name (the tour's pretraining and fine-tuned folders, its
    training and eval rows, its export and a keras-hub preset)."""
    from albert_keras.convert import save_hf
    from albert_keras.convert.keras_hub_preset import save_keras_hub_preset
    from albert_keras.export import ExportConfig
    from albert_keras.export import export_tflite
    from albert_keras.sources.model_source import ModelSource
    from albert_keras.sources.registry import read_tokenizer

    monkeypatch.chdir(tmp_path)
    os.makedirs("runs")
    os.symlink(classifier_folder, os.path.join("runs", "reviews"))
    os.symlink(init_folder, os.path.join("runs", "pretrain"))
    os.symlink(task_files["cls_train"], "train.csv")
    os.symlink(task_files["cls_eval"], "eval.csv")
    export_tflite("runs/reviews", "reviews_text.tflite",
                  ExportConfig(with_tokenizer=True, examples=8))
    save_keras_hub_preset(ModelSource(classifier_folder).encoder(dtype="float32"),
                          read_tokenizer(classifier_folder), "albert_preset")
    # a classifier as transformers' users publish one (AlbertForSequenceClassification)
    save_hf(ModelSource(classifier_folder).task_model()[0], "hf_sentiment")
    blocks = [(path, block) for path in PAGES for block in _blocks(path, ("python",))]
    assert len(blocks) >= 3
    for path, block in blocks:
        try:
            exec(compile(block, path, "exec"), {"__name__": "__docs__"})
        except Exception as e:  # name the page in the failure
            raise AssertionError(f"{os.path.relpath(path, ROOT)}: {type(e).__name__}: {e}")
