"""Every ``albert-keras`` command line shown in the README parses as written.

The commands are read from the README's fenced code blocks (continuation
lines joined, comments dropped) and parsed by the real command line, so a
renamed flag or a value argparse would misread (``--layers -2,-1``) fails
here instead of in a user's terminal.
"""

import os
import shlex

import pytest

from albert_keras.cli import _join_negative_values
from albert_keras.cli import build_parser

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                      "README.md")


def readme_commands():
    commands, block, pending = [], False, ""
    with open(README, encoding="utf-8") as f:
        for line in f:
            if line.lstrip().startswith("```"):
                block, pending = not block, ""
                continue
            if not block:
                continue
            line = pending + line.rstrip("\n")
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            for part in line.split("&&"):
                words = shlex.split(part, comments=True)
                if words and words[0] == "albert-keras" and "..." not in words:
                    commands.append(words[1:])
    return commands


def test_the_readme_shows_commands():
    # the pretraining, fine-tuning and export sections at least
    shown = {words[0] for words in readme_commands() if words}
    assert {"pretrain", "finetune", "export", "embed", "convert", "data"} <= shown


@pytest.mark.parametrize("words", readme_commands(), ids=" ".join)
def test_readme_command_parses(words):
    args = build_parser().parse_args(_join_negative_values(words))
    assert callable(args.func)
