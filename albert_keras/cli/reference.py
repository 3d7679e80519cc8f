"""The command-line reference page, made from the real parser.

``docs/cli.md`` is this module's output, and a test compares the two, so the
reference cannot drift from the flags:

    python -m albert_keras.cli.reference > docs/cli.md
"""

import argparse
import os

from albert_keras.cli import build_parser


def _commands(parser, prefix):
    """``(command words, parser)`` for ``parser`` and every subcommand below it."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, prefix + [name])


def cli_reference():
    """The Markdown of the reference: one section per command, with its ``--help``."""
    # argparse wraps help to the terminal's width: fixed, so the page is stable
    columns = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = build_parser()
        return _page(parser)
    finally:
        if columns is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = columns


def _page(parser):
    parts = ["# Command-line reference", "",
             "Generated from the parser by `python -m albert_keras.cli.reference`; every "
             "command also answers `--help`.", ""]
    for words, command in _commands(parser, ["albert-keras"]):
        parts += [f"## {' '.join(words)}", "", "```text", command.format_help().rstrip(),
                  "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(cli_reference(), end="")
