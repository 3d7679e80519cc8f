"""Tagging each word (``--task tag``): the task unit (``tag_task``), word to
piece alignment (``tag_features``) and the Python class
(``token_classifier``).

This package was one module before; its names still import from here (each
loads its module on first use, so the package itself costs no Keras).
"""

from albert_keras.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "Tag": "albert_keras.tasks.tag.tag_task",
})
