"""Package names that load their module on first use (PEP 562).

Keras and TensorFlow take seconds to import; a package that lists its public
names here pays for them only when one is used, so ``albert-keras --help``
and the light modules (configs, corpus reading) start at once.
"""

import importlib


def lazy_exports(package, exports):
    """``(__getattr__, __all__)`` for a package whose ``exports`` map each
    public name to the module defining it.

    Example:
    >>> __getattr__, __all__ = lazy_exports(__name__, {"AlbertEncoder":
    ...     "albert_keras.models.albert.albert_encoder"})  # doctest: +SKIP
    """
    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        setattr(importlib.import_module(package), name, value)  # once only
        return value

    return __getattr__, sorted(exports)
