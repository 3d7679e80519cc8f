"""Config dataclasses from JSON dicts, checked: what every family's
``from_dict`` goes through (an unknown key, a wrong type or a value the class
refuses is one ``ConfigError`` naming the file)."""

import dataclasses


class ConfigError(ValueError):
    """A configuration file or value that we refuse, with the reason."""


def config_from_dict(cls, data, source="config", optional=()):
    """A config dataclass ``cls`` from a dict whose keys and types are
    checked first (every family's ``from_dict``): an unknown key, a wrong
    type or a value ``cls`` refuses is one ``ConfigError`` naming ``source``.
    The fields in ``optional`` may also be None."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a JSON object")
    fields = {f.name: f.type for f in dataclasses.fields(cls)}
    for key, value in data.items():
        if key not in fields:
            raise ConfigError(f"{source}: unknown config key {key!r}")
        if value is None and key in optional:
            continue
        kind = {int: int, float: (int, float), str: str, bool: bool}.get(fields[key])
        if fields[key] is bool:
            if not isinstance(value, bool):
                raise ConfigError(f"{source}: {key} must be true or false, not {value!r}")
        elif kind and (not isinstance(value, kind) or isinstance(value, bool)):
            raise ConfigError(f"{source}: {key} must be a {fields[key].__name__}, "
                              f"not {type(value).__name__}")
    try:
        return cls(**data)
    except (ConfigError, TypeError) as e:
        raise ConfigError(f"{source}: {e}") from None
