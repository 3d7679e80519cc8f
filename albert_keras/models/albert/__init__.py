"""The ALBERT family: ALBERT with its BERT and ELECTRA layouts.

``AlbertEncoder`` (factorized embedding, the shared block stack, pooler),
its layers, presets and registration (``family.py``). Its HF, TF1 and
keras-hub converters are ``albert_keras.convert``.
"""
