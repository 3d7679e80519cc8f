"""Classification of texts and text pairs (``--task classify``): the task
unit (``classify_task``) and the Python class (``text_classifier``)."""
