"""Multiple choice (``--task choice``): the task unit (``choice_task``) and
the Python class (``multiple_choice``).

This package was one module before; its names still import from here (each
loads its module on first use, so the package itself costs no Keras).
"""

from albert_keras.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "MultipleChoice": "albert_keras.tasks.choice.choice_task",
})
