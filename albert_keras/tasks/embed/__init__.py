"""Sentence embeddings trained on text pairs (``--task embed``): the task
unit (``embed_task``), its pairs files (``pairs``), its settings
(``embed_fields``) and its run (``embed_run``)."""
