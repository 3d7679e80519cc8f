"""The base of the text layers that run TensorFlow ops on every backend."""

import keras


class PreprocessingLayer(keras.layers.Layer):
    """A Keras layer whose ``call`` is TensorFlow (tf.data, tf-text, TFLite).

    Tokenizing and packing run in the ``tf.data`` pipeline whatever Keras
    backend trains the model, as keras-hub's preprocessing layers do. On
    the JAX or torch backend, Keras' ``__call__`` would convert the
    ``tf.Tensor``/``tf.RaggedTensor`` inputs to that backend's arrays (and
    refuse ragged ones), so there the layer calls ``call`` directly; on
    TensorFlow it is an ordinary layer (and exports to TFLite as one).

    Example:
    >>> class Upper(PreprocessingLayer):
    ...     def call(self, text):
    ...         import tensorflow as tf
    ...         return tf.strings.upper(text)
    >>> Upper()(["a"])  # doctest: +SKIP
    """

    def __call__(self, *args, **kwargs):
        if keras.backend.backend() != "tensorflow":
            return self.call(*args, **kwargs)
        return super().__call__(*args, **kwargs)
