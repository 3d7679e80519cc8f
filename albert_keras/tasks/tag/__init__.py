"""Tagging each word (``--task tag``): the task unit (``tag_task``), word to
piece alignment (``tag_features``) and the Python class
(``token_classifier``)."""
