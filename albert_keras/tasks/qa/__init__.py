"""Extractive question answering (``--task qa``): the task unit
(``qa_task``), windows and span decoding (``qa_features``) and the Python
class (``question_answerer``)."""
