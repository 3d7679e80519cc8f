"""The reader of preset names (``bert_tiny``, ``deberta_v3_xsmall``...): the
preset's architecture with new weights and no tokenizer.

Example:
>>> claims("bert_tiny"), claims("runs/pretrain")
(True, False)
"""

import os

from albert_keras.families import build_backbone
from albert_keras.families import preset_config
from albert_keras.families import preset_names

# a published checkpoint (fine-tuning another task from it takes its encoder)
PUBLISHED = False


def claims(path):
    """True for a preset name that is not also a path here."""
    return not os.path.exists(path) and path in preset_names()


def tokenizer(path):
    """None: a preset name carries no tokenizer."""
    return None


def model(path):
    """A new encoder of the preset."""
    return build_backbone(preset_config(path))


def encoder(path, settings, stored=None):
    """A new encoder of the preset with the run's ``settings`` (``stored``,
    a model of it read before, has new weights too: it is not needed)."""
    return build_backbone(settings.config_of(preset_config(path)), **settings.options())


def pretrainer(path):
    raise ValueError(f"{path}: a preset name has no masked-LM head; pretrain one first")


def task_model(path):
    raise FileNotFoundError(f"{path}: a preset name, not a fine-tuned model folder")


def task_spec(path):
    return {}
