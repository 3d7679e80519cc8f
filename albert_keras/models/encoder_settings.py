"""What a run changes in an encoder it starts from.

Fine-tuning, distillation and embedding start from a stored encoder (ours, or
a published checkpoint) and build it again with the run's precision and
dropout, and with its hidden states as outputs when a pooling reads them.
Building a Keras encoder is most of what starting from a checkpoint costs
(converting an HF folder of MiniLM-L6's shape, then rebuilding its encoder:
1.5 s; building it once with these settings: 0.8 s), so a checkpoint's
encoder is built once, with these settings.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class EncoderSettings:
    """The run's settings for an encoder built from a stored one.

    Args:
        dtype: the dtype policy (``float32``, ``mixed_bfloat16``; None:
            Keras' default).
        dropout: replaces the config's hidden and attention dropout when
            given (ALBERT v2 and our presets pretrain without any); it
            changes no weight.
        output_hidden_states: the encoder also outputs every layer's states.

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> settings = EncoderSettings(dropout=0.0)
    >>> settings.build(AlbertEncoder, get_preset("albert_tiny")).config.hidden_dropout_prob
    0.0
    """

    dtype: object = None
    dropout: float = None
    output_hidden_states: bool = False

    def config_of(self, config):
        """``config`` with the run's dropout (itself when none is given)."""
        # each family names its dropouts (ALBERT's two, ModernBERT's three)
        return config if self.dropout is None else config.with_dropout(self.dropout)

    def options(self):
        """The encoder constructor's keywords these settings give (a run
        trains and predicts in float ops: no fake quantization, every
        position's output)."""
        return {"output_hidden_states": self.output_hidden_states, "dtype": self.dtype,
                "quantize_aware": False, "cls_only": False}

    def build(self, encoder_class, config):
        """A new ``encoder_class`` on ``config``, with these settings."""
        return encoder_class(self.config_of(config), **self.options())
