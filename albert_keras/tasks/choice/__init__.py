"""Multiple choice (``--task choice``): the task unit (``choice_task``:
``Choice``) and the Python class (``multiple_choice``: ``MultipleChoice``)."""
