"""The error of every checkpoint conversion (its own module: the name tables
and the loader both raise it)."""


class ConversionError(ValueError):
    """A checkpoint that does not fit the model, with the tensor named."""
