"""Extractive question answering (``--task qa``): the task unit
(``qa_task``), windows and span decoding (``qa_features``) and the Python
class (``question_answerer``).

This package was one module before; its names still import from here (each
loads its module on first use, so the package itself costs no Keras).
"""

from albert_keras.lazy import lazy_exports

__getattr__, __all__ = lazy_exports(__name__, {
    "QuestionAnswering": "albert_keras.tasks.qa.qa_task",
})
