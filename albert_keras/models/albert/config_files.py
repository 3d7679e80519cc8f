"""Config files in any of the three dialects: ours, HF's and the TF1 code's."""

import json

from albert_keras.config_dicts import ConfigError
from albert_keras.families import config_from_fields
from albert_keras.files import write_json
from albert_keras.models.albert import hf_config
from albert_keras.models.albert import tf1_config
from albert_keras.models.albert.albert_config import AlbertConfig

DIALECTS = ("albert_keras", "original", "hf")


def read_config_file(path, dialect="auto"):
    """Reads a config file in any dialect.

    Args:
        path: a JSON file.
        dialect: ``auto`` (HF when it has ``model_type``, ours when it has
            ``sharing``, else the original), ``albert_keras``, ``original``
            or ``hf``.

    Example:
    >>> read_config_file("albert_base/albert_config.json")  # doctest: +SKIP
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}") from None
    if dialect == "auto":
        if isinstance(data, dict) and "model_type" in data:
            dialect = "hf"
        elif isinstance(data, dict) and "sharing" in data:
            dialect = "albert_keras"
        else:
            dialect = "original"
    reader = {
        # a DeBERTa model's file holds DeBERTa's fields too: its class reads it
        "albert_keras": lambda data, source: config_from_fields(AlbertConfig, data, source),
        "original": tf1_config.from_original_dict,
        "hf": hf_config.from_hf_dict,
    }.get(dialect)
    if reader is None:
        raise ConfigError(f"unknown config dialect {dialect!r}")
    return reader(data, str(path))


def write_config_file(config, path, dialect="albert_keras"):
    """Writes ``config`` atomically in one of ``DIALECTS``."""
    data = {
        "albert_keras": config.to_dict,
        "original": lambda: tf1_config.to_original_dict(config),
        "hf": lambda: hf_config.to_hf_dict(config),
    }[dialect]()
    write_json(path, data)
