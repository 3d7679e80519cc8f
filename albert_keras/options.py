"""Config fields that carry their own help, so flags are written down once.

A config dataclass declares each knob with ``option(default, help)``; the
command line builds its flags from those fields (name, type, default, help
and choices), so the library's defaults and ``--help`` cannot drift apart.
"""

import dataclasses
import math


def option(default, help, choices=None, flag=None, factory=None, nargs=None, auto=None):
    """A dataclass field with a help text (and optional choices or flag name).

    Args:
        default: the default value.
        help: one line for ``--help``; the default is appended there.
        choices: the allowed values, when they are few.
        flag: the flag's name when it is not the field's (``--seq-len``).
        factory: a default factory for mutable defaults (``dict``).
        nargs: ``"+"`` for a flag that takes a list.
        auto: for a ``None`` default chosen at run time, what decides it
            (shown in ``--help`` as the default).

    Example:
    >>> @dataclasses.dataclass
    ... class Config:
    ...     steps: int = option(100, "optimizer steps")
    """
    metadata = {"help": help, "choices": choices, "flag": flag, "nargs": nargs, "auto": auto}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def flag_of(config_class, name):
    """The command-line flag of a config field (``learning_rate`` -> ``--learning-rate``)."""
    for field in dataclasses.fields(config_class):
        if field.name == name:
            return field.metadata.get("flag") or "--" + name.replace("_", "-")
    return "--" + name.replace("_", "-")


def check_numbers(config, positive=(), non_negative=(), fractions=()):
    """Checks a config's float fields; raises ``ValueError`` naming the first bad one.

    ``None`` passes (a value chosen at run time). Written out because a range
    test such as ``value <= 0`` is False for NaN, so NaN passed such checks
    and only failed later, inside a training step.

    Args:
        config: a config dataclass instance.
        positive: fields that must be finite and above 0.
        non_negative: fields that must be finite and 0 or more.
        fractions: fields that must be in [0, 1).

    Example:
    >>> @dataclasses.dataclass
    ... class Config:
    ...     rate: float = 0.1
    >>> check_numbers(Config(float("nan")), positive=("rate",))
    Traceback (most recent call last):
    ...
    ValueError: rate must be a positive number, got nan
    """
    rules = ((positive, lambda v: v > 0, "a positive number"),
             (non_negative, lambda v: v >= 0, "0 or more"),
             (fractions, lambda v: 0 <= v < 1, "in [0, 1)"))
    for names, ok, what in rules:
        for name in names:
            value = getattr(config, name)
            if value is not None and not (math.isfinite(value) and ok(value)):
                raise ValueError(f"{name} must be {what}, got {value}")
