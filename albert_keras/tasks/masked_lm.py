"""``MaskedLM``: fill in the ``[MASK]`` of raw texts with a pretrained head."""

import keras

from albert_keras.model_folder import ModelSource
from albert_keras.tasks.inference import fill_mask_with
from albert_keras.tasks.python_inputs import python_examples


@keras.saving.register_keras_serializable(package="albert_keras")
class MaskedLM(keras.Model):
    """The model with the masked-LM head (a pretraining folder's
    ``pretrainer.keras``, an ELECTRA run's generator, or a published
    checkpoint with its MLM head), reading raw texts.

    Args:
        pretrainer: the model with ``mlm_head`` (its encoder carries the tokenizer).
        sequence_length: texts are cut to this many pieces.

    Example:
    >>> model = MaskedLM.from_preset("runs/pretrain")  # doctest: +SKIP
    >>> (first_mask,), = model.predict(["the state of the [MASK] is strong"], top_k=2)  # doctest: +SKIP
    >>> [candidate["token"] for candidate in first_mask]  # doctest: +SKIP
    ['▁union', '▁nation']
    """

    def __init__(self, pretrainer, sequence_length=128, **kwargs):
        super().__init__(**kwargs)
        if isinstance(pretrainer, dict):
            pretrainer = keras.saving.deserialize_keras_object(pretrainer)
        self.pretrainer = pretrainer
        self.sequence_length = int(sequence_length)
        self.built = True

    @classmethod
    def from_preset(cls, source, sequence_length=128, tokenizer=None):
        """The masked-LM model of ``source`` (anything ``fill-mask`` takes)."""
        origin = ModelSource(str(source), tokenizer)
        model, path = origin.pretrainer()
        if not hasattr(model, "mlm_head"):
            raise ValueError(f"{path}: {type(model).__name__} has no masked-LM head")
        if model.encoder.tokenizer is None or tokenizer:
            model.encoder.tokenizer = origin.tokenizer
        return cls(model, sequence_length=sequence_length)

    @property
    def tokenizer(self):
        return self.pretrainer.encoder.tokenizer

    def call(self, inputs, training=False):
        return self.pretrainer(inputs, training=training)

    def predict(self, x, top_k=5, **kwargs):
        """Per text, per ``[MASK]``, the ``top_k`` pieces, best first (as
        ``albert-keras fill-mask`` gives them)."""
        texts = python_examples(x, None, "x").texts
        return fill_mask_with(self.pretrainer, self.tokenizer, texts, top_k, self.sequence_length)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "pretrainer": keras.saving.serialize_keras_object(self.pretrainer),
                "sequence_length": self.sequence_length}
