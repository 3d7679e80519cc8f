"""Distillation models: a teacher's outputs taught to a student
(``Distiller``), layer by layer (``LayerDistiller``, with its pairing of
student and teacher layers in ``layer_map``), or MobileBERT's progressive
transfer (``ProgressiveDistiller``)."""
