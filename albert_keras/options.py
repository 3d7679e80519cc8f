"""Config fields that carry their own help, so flags are written down once.

A config dataclass declares each knob with ``option(default, help)``; the
command line builds its flags from those fields (name, type, default, help
and choices), so the library's defaults and ``--help`` cannot drift apart.
"""

import contextlib
import contextvars
import dataclasses
import math
import re


def option(default, help, choices=None, flag=None, factory=None, nargs=None, auto=None,  # noqa: PLR0913 (a field's every declaration, once)
           valid=None, aliases=()):
    """A dataclass field with a help text (and optional choices or flag name).

    Args:
        default: the default value.
        help: one line for ``--help``; the default is appended there.
        choices: the allowed values, when they are few.
        flag: the flag's name when it is not the field's (``--seq-length``).
        factory: a default factory for mutable defaults (``dict``).
        nargs: ``"+"`` for a flag that takes a list.
        auto: for a ``None`` default chosen at run time, what decides it
            (shown in ``--help`` as the default).
        valid: for a number, the interval it must lie in, e.g. ``"[0, 1)"``
            or ``"[1, inf)"``; checked where the flag is parsed and by
            ``check_options`` (NaN and infinities never pass).
        aliases: former spellings of the flag the command line still takes
            (``--seq-len``); help and errors name the flag.

    Example:
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = option(100, "optimizer steps")
    """
    if valid is not None:
        _interval(valid)  # a typo in the interval fails at import, not at use
    metadata = {"help": help, "choices": choices, "flag": flag, "nargs": nargs, "auto": auto,
                "valid": valid, "aliases": tuple(aliases)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_of(config_class, name):
    """The command-line flag of a config field (``learning_rate`` -> ``--learning-rate``)."""
    for field in dataclasses.fields(config_class):
        if field.name == name:
            return field.metadata.get("flag") or "--" + name.replace("_", "-")
    return "--" + name.replace("_", "-")


# Who is calling: errors name a setting as the caller wrote it, a flag on the
# command line and an argument in Python. The command line switches it on for
# its run (``command_line_names``); Python callers get argument names.
_NAMES = contextvars.ContextVar("albert_keras_names", default="python")


@contextlib.contextmanager
def command_line_names():
    """Within it, ``name_of`` gives flags (the command line's errors)."""
    token = _NAMES.set("flags")
    try:
        yield
    finally:
        _NAMES.reset(token)


def name_of(config_class, name):
    """How an error names a config field: ``--learning-rate`` under the
    command line, ``learning_rate`` in Python.

    Example:
    >>> @dataclasses.dataclass
    ... class Config:
    ...     learning_rate: float = option(1e-3, "the peak rate")
    >>> name_of(Config, "learning_rate")
    'learning_rate'
    >>> with command_line_names():
    ...     name_of(Config, "learning_rate")
    '--learning-rate'
    """
    return flag_of(config_class, name) if _NAMES.get() == "flags" else name


_INTERVAL = re.compile(r"^([\[(])\s*([-+\w.]+)\s*,\s*([-+\w.]+)\s*([\])])$")


def _interval(valid):
    match = _INTERVAL.match(valid)
    if not match:
        raise ValueError(f"not an interval: {valid!r} (write e.g. '[0, 1)' or '(0, inf)')")
    low_bracket, low, high, high_bracket = match.groups()
    return low_bracket == "[", float(low), float(high), high_bracket == "]"


def in_interval(value, valid):
    """Whether the number ``value`` is finite and lies in the interval ``valid``.

    Example:
    >>> in_interval(0, "[0, 1)"), in_interval(1, "[0, 1)"), in_interval(float("nan"), "[0, 1]")
    (True, False, False)
    """
    closed_low, low, high, closed_high = _interval(valid)
    if isinstance(value, bool) or not math.isfinite(value):
        return False
    above = value >= low if closed_low else value > low
    below = value <= high if closed_high else value < high
    return above and below


def range_error(value, valid):
    """The message for a value outside ``valid`` (``None`` when it is inside)."""
    if in_interval(value, valid):
        return None
    closed_low, low, high, closed_high = _interval(valid)
    if math.isinf(low) and math.isinf(high):
        return f"must be a finite number, got {value!r}"
    if math.isinf(high):
        bound = f"at least {low:g}" if closed_low else f"above {low:g}"
        return f"must be {bound}, got {value!r}"
    return f"must be in {valid}, got {value!r}"


def check_options(config):
    """Checks every field declared with ``valid`` or ``choices``; raises
    ``ValueError`` naming the first value outside its interval or choices (by
    its flag on the command line; ``None`` passes: a value chosen at run time).

    Example:
    >>> @dataclasses.dataclass
    ... class Config:
    ...     eval_steps: int = option(5, "validation batches", valid="[0, inf)")
    >>> check_options(Config(-1))
    Traceback (most recent call last):
    ...
    ValueError: eval_steps must be at least 0, got -1
    """
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        if value is None:
            continue
        error = _choice_error(value, field.metadata.get("choices"))
        valid = field.metadata.get("valid")
        if error is None and valid is not None:
            items = value if isinstance(value, (list, tuple)) else [value]
            error = next((range_error(v, valid) for v in items
                          if range_error(v, valid)), None)
        if error:
            raise ValueError(f"{name_of(type(config), field.name)} {error}")


def _choice_error(value, choices):
    """The message for a value (or a list's item) not among ``choices``."""
    if not choices:
        return None
    values = value if isinstance(value, (list, tuple)) else [value]
    bad = [v for v in values if v not in choices]
    if not bad:
        return None
    bad = bad[0]
    return f"must be one of {', '.join(map(str, choices))}, got {bad!r}"


def config_from_keywords(config_class, options, where):
    """A checked ``config_class`` from Python keyword ``options``; a keyword
    that is not one of its fields, or a value out of its range, is a
    ``ValueError`` naming it and ``where``.

    Example:
    >>> @dataclasses.dataclass
    ... class Config:
    ...     epochs: int = option(3, "passes")
    ...     def validate(self):
    ...         check_options(self)
    >>> config_from_keywords(Config, {"epochs": 2}, "fit").epochs
    2
    """
    fields = {f.name for f in dataclasses.fields(config_class)}
    unknown = sorted(set(options) - fields)
    if unknown:
        raise ValueError(f"{where}: unknown setting {unknown[0]!r}; the settings are "
                         f"{config_class.__name__}'s fields")
    config = config_class(**options)
    try:
        config.validate()
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    return config
