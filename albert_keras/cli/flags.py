"""Flags made from config dataclasses, so each default and help is written once."""

import argparse
import dataclasses
import json
import typing

from albert_keras.options import flag_of
from albert_keras.options import range_error


class CliError(Exception):
    """An error reported as one line, with exit status 2."""


def number_in(kind, valid):
    """An argparse ``type`` that parses ``kind`` (int or float) and checks the
    interval ``valid``, so a bad value is named by its flag before any work.

    Example:
    >>> number_in(int, "[1, inf)")("3")
    3
    """
    def parse(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"not {'an integer' if kind is int else 'a number'}: {text!r}") from None
        error = range_error(value, valid)
        if error:
            raise argparse.ArgumentTypeError(error)
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def _type(field, cls):
    hint = typing.get_type_hints(cls).get(field.name, str)
    if hint is dict:
        return json.loads
    if typing.get_origin(hint) is list:  # list[int]: each item, with nargs="+"
        (hint,) = typing.get_args(hint)
    if hint in (int, float) and field.metadata.get("valid"):
        return number_in(hint, field.metadata["valid"])
    return hint if hint in (int, float, str) else str


def add_flags(parser, cls, only=None, exclude=(), defaults=None):
    """Adds one flag per field of the dataclass ``cls`` declared with ``option``.

    Args:
        parser: an ``argparse`` parser.
        cls: a config dataclass.
        only, exclude: field names to keep or leave out.
        defaults: per-command defaults that differ from the dataclass's.
    """
    defaults = defaults or {}
    for field in dataclasses.fields(cls):
        meta = field.metadata
        if "help" not in meta or field.name in exclude or (only and field.name not in only):
            continue
        if field.name in defaults:
            default = defaults[field.name]
        elif field.default_factory is not dataclasses.MISSING:
            default = None
        else:
            default = field.default
        shown = meta["auto"] if default is None and meta.get("auto") else "%(default)s"
        # a help text that says its default itself is not told it twice
        said = "(default" in meta["help"]
        kwargs = {"default": default, "dest": field.name,
                  "help": meta["help"] if said else f"{meta['help']} (default: {shown})"}
        hint = typing.get_type_hints(cls).get(field.name)
        if hint is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = _type(field, cls)
            if meta.get("choices"):
                kwargs["choices"] = meta["choices"]
            if meta.get("nargs"):
                kwargs["nargs"] = meta["nargs"]
        parser.add_argument(flag_of(cls, field.name), **kwargs)
        for alias in meta.get("aliases", ()):  # a former spelling: taken, not shown
            parser.add_argument(alias, **{**kwargs, "default": argparse.SUPPRESS,
                                          "help": argparse.SUPPRESS})


def refuse_changed(args, parser, dests, reason):
    """Raises ``CliError`` when a flag among ``dests`` was given a value other
    than its default: it would not apply (``reason`` says why), and a flag
    that does not apply is an error, never silently dropped.
    """
    flags = {a.dest: a.option_strings[0] for a in parser._actions if a.option_strings}
    given = [flags[d] for d in dests if d in flags and getattr(args, d) != parser.get_default(d)]
    if given:
        raise CliError(f"{', '.join(given)}: {reason}")


def config_from_args(cls, args, **changes):
    """An instance of ``cls`` from the parsed flags (fields without a flag keep
    their defaults), with ``changes`` on top."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name in changes:
            values[field.name] = changes[field.name]
        elif hasattr(args, field.name) and "help" in field.metadata:
            value = getattr(args, field.name)
            if value is None and field.default_factory is not dataclasses.MISSING:
                continue
            values[field.name] = value
    return cls(**values)
