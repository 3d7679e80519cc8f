"""Fine-tuning tasks by name. Adding a task is one module and one line here
(or, from your own code, one ``register_task`` call).

Each entry is ``"module:Class"`` and is imported on first use, so the task
names (``--task`` choices, ``--help``) cost no Keras or TensorFlow import.

Example:
>>> sorted(TASKS)[:2]
['choice', 'classify']
"""

import functools
import importlib

TASKS = {
    "classify": "albert_keras.tasks.classify.classify_task:Classify",
    "tag": "albert_keras.tasks.tag.tag_task:Tag",
    "qa": "albert_keras.tasks.qa.qa_task:QuestionAnswering",
    "choice": "albert_keras.tasks.choice.choice_task:Choice",
    "embed": "albert_keras.tasks.embed.embed_task:Embed",
}


def register_task(name, target):
    """Adds the task unit ``target`` (``"module:Class"``, a ``Task``
    subclass) as ``name``: ``--task name``, ``task.json`` and the Python
    class find it from then on.

    Args:
        name: the task's name.
        target: where its ``Task`` class is, imported on first use.

    Example:
    >>> register_task("similarity", "my_tasks.similarity:Similarity")  # doctest: +SKIP
    """
    if name in TASKS and TASKS[name] != target:
        raise ValueError(f"task {name!r} is already registered as {TASKS[name]}")
    if ":" not in target:
        raise ValueError(f"{target!r}: a task unit is given as 'module:Class'")
    TASKS[name] = target


@functools.cache
def get_task(name):
    """The ``Task`` registered as ``name``."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    module, cls = TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)()
