"""An encoder built again from a stored one with a run's settings.

Example:
>>> from albert_keras import AlbertEncoder
>>> from albert_keras.models.encoder_settings import EncoderSettings
>>> from albert_keras.presets import get_preset
>>> stored = AlbertEncoder(get_preset("albert_tiny"))
>>> rebuilt_encoder(stored, "albert_tiny", EncoderSettings(dropout=0.0)).config.hidden_dropout_prob
0.0
"""

from albert_keras.models.backbone import backbone_of
from albert_keras.models.backbone import rebuilt


def rebuilt_encoder(model, source, settings, from_scratch=False):
    """The encoder of ``model``, rebuilt with the run's ``settings`` (an
    ``EncoderSettings``: the stored policy is the training one, often
    ``mixed_bfloat16``); the weights are copied, unless ``from_scratch``
    (same architecture, new weights). ``source`` names the model in errors.
    """
    encoder = backbone_of(model)
    if encoder is None:
        raise ValueError(f"{source}: {type(model).__name__} has no encoder")
    copy = rebuilt(encoder, settings.config_of(encoder.config), **settings.options())
    if not from_scratch:
        copy.set_weights(encoder.get_weights())
    return copy
