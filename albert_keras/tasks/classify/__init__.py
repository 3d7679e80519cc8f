"""Classification of texts and text pairs (``--task classify``): the task
unit (``classify_task``) and the Python class (``text_classifier``).

This package was one module before; its names still import from here (each
loads its module on first use, so the package itself costs no Keras).
"""

from albert_keras.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "Classify": "albert_keras.tasks.classify.classify_task",
    "resolve_pooling": "albert_keras.tasks.classify.classify_task",
})
