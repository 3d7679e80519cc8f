"""Task models: an encoder of any family with a task's head on it
(``SequenceClassifier``, ``TokenTagger``, ``SpanExtractor``, ``ChoiceScorer``,
``SentenceEmbedder``), their shared base (``task_model``), the divergence
SiFT and R3F read of them (``output_divergence``) and the reading of HF's
``...For<Task>`` heads into them (``hf_task_model``)."""
