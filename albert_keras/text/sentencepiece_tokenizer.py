"""An in-graph SentencePiece tokenizer layer (TFLite-convertible)."""

import base64

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_keras.text.preprocessing_layer import PreprocessingLayer
from albert_keras.text.spm_model import (
    check_albert_model,
    read_model_proto,
    word_start_table,
)


@keras.saving.register_keras_serializable(package="albert_keras")
class SentencePieceTokenizer(PreprocessingLayer):
    """Strings to word-piece ids with ``tensorflow_text.FastSentencepieceTokenizer``.

    That op runs inside ``tf.data``, inside a Keras model and inside a
    TFLite graph (as a tf-text custom op), so the same tokenizer can ship in
    a string-in ``.tflite``. Its ids equal the ``sentencepiece`` library's
    for unigram models; BPE models are refused because the op gets them
    wrong silently (measured with tensorflow-text 2.21). The model travels inside the layer
    config, so a ``.keras`` file is self-contained.

    Args:
        proto: a ``.model`` path or the serialized model bytes.

    Call:
        A string tensor of rank 0 or 1. Returns int32 ids: a 1-D tensor for
        a scalar, a ``tf.RaggedTensor`` ``[B, None]`` for a batch.

    Example:
    >>> tokenizer = SentencePieceTokenizer("spm.model")  # doctest: +SKIP
    >>> tokenizer(["hello world"])  # doctest: +SKIP
    """

    def __init__(self, proto, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if isinstance(proto, str) and proto.startswith("base64:"):
            proto = base64.b64decode(proto[len("base64:"):])
        self.proto_bytes, model, source = read_model_proto(proto)
        check_albert_model(model, source)
        self.vocabulary_size = len(model.pieces)
        self.pieces = [p.piece for p in model.pieces]
        self.word_starts = word_start_table(model)
        self._tokenizer = tf_text.FastSentencepieceTokenizer(self.proto_bytes)
        self.built = True

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        return tf.cast(self._tokenizer.tokenize(inputs), tf.int32)

    def detokenize(self, ids):
        """Ids back to text (the inverse for unigram models)."""
        return self._tokenizer.detokenize(tf.cast(ids, tf.int32))

    def id_to_piece(self, index):
        return self.pieces[index]

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(tuple(inputs.shape) + (None,), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {"proto": "base64:" + base64.b64encode(self.proto_bytes).decode("ascii")}
        )
        return config
