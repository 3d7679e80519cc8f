"""Fine-tuning tasks by name. Adding a task is one module and one line here.

Each entry is ``"module:Class"`` and is imported on first use, so the task
names (``--task`` choices, ``--help``) cost no Keras or TensorFlow import.
"""

import functools
import importlib

TASKS = {
    "classify": "albert_keras.tasks.classify:Classify",
    "tag": "albert_keras.tasks.tag:Tag",
    "qa": "albert_keras.tasks.qa:QuestionAnswering",
    "choice": "albert_keras.tasks.choice:MultipleChoice",
}


@functools.cache
def get_task(name):
    """The ``Task`` registered as ``name``."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    module, cls = TASKS[name].split(":")
    return getattr(importlib.import_module(module), cls)()
