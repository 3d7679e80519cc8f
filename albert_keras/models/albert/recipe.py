"""``--recipe albert``: ALBERT's own pretraining settings.

Example:
>>> from albert_keras.training.pipeline_config import PipelineConfig
>>> from albert_keras.training.pretrain_config import PretrainConfig
>>> albert_recipe(PipelineConfig(), PretrainConfig()).learning_rate is None
True
"""


def albert_recipe(pipeline, train_config):
    """ALBERT's own settings: nothing is filled in beyond the configs' defaults
    (the paper's, which ``PretrainConfig`` holds)."""
    return train_config
