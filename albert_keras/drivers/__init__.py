"""The run drivers: what ``albert-keras finetune``, ``distill``, ``shrink``,
``predict`` and ``evaluate`` run, from task files to a model folder or a
table (pretraining's is ``albert_keras.training.pipeline``). They sit above
the task units and the Python task classes, which never import them."""
