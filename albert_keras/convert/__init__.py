"""Checkpoint interop: HF transformers folders, original TF1 checkpoints and
keras-hub preset folders."""

from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import is_hf_folder
from albert_keras.convert.hf import load_hf
from albert_keras.convert.hf import save_hf
from albert_keras.convert.keras_hub_preset import is_keras_hub_preset
from albert_keras.convert.keras_hub_preset import load_keras_hub_preset
from albert_keras.convert.tf1 import is_tf1_checkpoint
from albert_keras.convert.tf1 import load_tf1


def source_format_of(src):
    """``keras-hub``, ``hf`` or ``tf1``: the kind of checkpoint ``src`` is,
    or a one-line ``ConversionError``."""
    if is_keras_hub_preset(src):  # it has a config.json too: checked first
        return "keras-hub"
    if is_hf_folder(src):
        return "hf"
    if is_tf1_checkpoint(src):
        return "tf1"
    raise ConversionError(f"{src}: neither an HF folder (config.json) nor a TF1 checkpoint "
                          "(*.index)")


def load_checkpoint(src, source_format="auto", config_path=None, strict=True):
    """Loads an HF folder, a TF1 checkpoint or a keras-hub preset into our model.

    Args:
        src: an HF folder (``config.json`` + weights), a TF1 checkpoint
            prefix or folder, or a keras-hub preset folder (``save_to_preset``'s).
        source_format: ``auto``, ``hf``, ``tf1`` or ``keras-hub``.
        config_path: TF1 only: the ``albert_config.json`` to use.
        strict: unexpected tensors are errors.

    Returns:
        ``(model, report)``.

    Example:
    >>> model, report = load_checkpoint("albert-base-v2/")  # doctest: +SKIP
    """
    if source_format == "auto":
        source_format = source_format_of(src)
    if source_format == "hf":
        return load_hf(src, strict=strict)
    if source_format == "tf1":
        return load_tf1(src, config_path=config_path, strict=strict)
    if source_format == "keras-hub":
        encoder, _ = load_keras_hub_preset(src)
        return encoder, {"loaded": ["the keras-hub backbone"], "skipped": [], "unused": []}
    raise ConversionError(f"unknown source format {source_format!r}")


__all__ = [
    "ConversionError",
    "load_checkpoint",
    "load_hf",
    "load_keras_hub_preset",
    "load_tf1",
    "save_hf",
    "source_format_of",
]
