"""``MaskedLM``: fill in the ``[MASK]`` of raw texts with a pretrained head."""

import keras
import numpy as np

from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.python_inputs import python_examples
from albert_keras.tasks.task import softmax

MASK_TOKEN = "[MASK]"


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

    def predict(self, x, top_k=5, verbose="auto"):
        """Per text, per ``[MASK]``, the ``top_k`` pieces, best first: a list
        (one per mask) of ``[{"token", "text", "id", "probability"}]``,
        where ``token`` is the piece as the vocabulary spells it and
        ``text`` the piece decoded (what ``albert-keras fill-mask`` shows).
        Each text runs at its own length (one text per forward pass:
        nothing is padded)."""
        return self.fill(x, top_k)

    def fill(self, x, top_k=5, name="x"):
        """``predict``, with errors naming the texts ``name``."""
        return [self._fill_one(text, top_k) for text in python_examples(x, None, name).texts]

    def _fill_one(self, text, top_k):
        ids, positions = self._masked_ids(text)
        x = {
            "token_ids": np.asarray([ids], np.int32),
            "segment_ids": np.zeros((1, len(ids)), np.int32),
            "padding_mask": np.ones((1, len(ids)), np.int32),
            "masked_positions": np.asarray([positions], np.int32),
        }
        x = {k: keras.ops.convert_to_tensor(v) for k, v in x.items()}
        if hasattr(self.pretrainer, "generator_logits"):  # rtd: the generator is the MLM
            logits = self.pretrainer.generator_logits(x)
        else:
            logits = self.pretrainer(x, training=False)["mlm_logits"]
        per_mask = []
        for p in softmax(np.asarray(logits, np.float32)[0]):
            best = np.argsort(p)[::-1][:top_k]
            per_mask.append([{"token": self.tokenizer.id_to_piece(i),
                              "text": self.tokenizer.decode([i]), "id": int(i),
                              "probability": float(p[i])} for i in best])
        return per_mask

    def _masked_ids(self, text):
        """``([CLS] ids [SEP], mask positions)`` of ``text``, cut to the length."""
        special = self.tokenizer.special_ids
        length = min(self.sequence_length, self.pretrainer.encoder.config.max_position_embeddings)
        ids = [special["cls"]] + encode_with_masks(self.tokenizer, text)[:length - 2] + [
            special["sep"]]
        positions = [i for i, t in enumerate(ids) if t == special["mask"]]
        if not positions:
            raise ValueError(f"the {MASK_TOKEN} in {text!r} falls past sequence_length")
        return ids, positions

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "pretrainer": keras.saving.serialize_keras_object(self.pretrainer),
                "sequence_length": self.sequence_length}


def encode_with_masks(tokenizer, text):
    """Ids for ``text`` with every ``[MASK]`` as the mask id."""
    parts = text.split(MASK_TOKEN)
    if len(parts) < 2:
        raise ValueError(f"no {MASK_TOKEN} in {text!r}")
    ids = []
    for i, part in enumerate(parts):
        # As transformers' fill-mask reads a RoBERTa-style tokenizer.json
        # (the mask is ``lstrip``): the space before a mask is the mask's,
        # the space after it the next word's, which a byte-level BPE marks
        # (``Ġwal es``, not ``w al es``). WordPiece and SentencePiece drop a
        # leading space either way.
        piece = part.rstrip() if i < len(parts) - 1 else part
        if i == 0:
            piece = piece.lstrip()
        if piece.strip():
            ids.extend(tokenizer.encode([piece])[0])
        if i < len(parts) - 1:
            ids.append(tokenizer.special_ids["mask"])
    return ids
