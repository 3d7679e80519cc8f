"""The ALBERT family: ALBERT with its BERT and ELECTRA layouts.

``AlbertEncoder`` (factorized embedding, the shared block stack, pooler),
its layers, presets and registration (``family.py``), and its checkpoints:
HF folders (``checkpoints.py``, also DeBERTa's), original TF1 checkpoints
(``tf1.py``), keras-hub presets (``keras_hub_preset.py``) and the config
dialects they use (``hf_config.py``, ``tf1_config.py``, ``config_files.py``).
``albert_keras.convert`` holds the generic reading and writing they share.
"""
