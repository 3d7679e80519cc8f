"""Fine-tuning tasks by name. Adding a task is one module and one line here."""

from albert_keras.tasks.choice import MultipleChoice
from albert_keras.tasks.classify import Classify
from albert_keras.tasks.qa import QuestionAnswering
from albert_keras.tasks.tag import Tag

TASKS = {
    task.name: task
    for task in (Classify(), Tag(), QuestionAnswering(), MultipleChoice())
}


def get_task(name):
    """The ``Task`` registered as ``name``."""
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return TASKS[name]
