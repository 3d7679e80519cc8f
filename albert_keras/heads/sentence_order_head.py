"""The sentence-order (SOP) head on the pooled output."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_keras")
class SentenceOrderHead(keras.layers.Layer):
    """Dropout, then dense H -> 2 on the pooled output.

    Label 0 means the two segments are in their original order, 1 swapped.
    The same head shape serves BERT's next-sentence prediction. Logits are
    float32 under mixed precision.

    Args:
        dropout: dropout before the classifier (HF's
            ``classifier_dropout_prob``; 0.1 there).
        initializer_range: stddev of the truncated-normal initializer.

    Example:
    >>> head = SentenceOrderHead()
    >>> tuple(head(keras.ops.ones((2, 32))).shape)
    (2, 2)
    """

    def __init__(self, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="sop_dropout"
        )
        self.classifier = keras.layers.Dense(
            2,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range
            ),
            dtype=self.dtype_policy,
            name="sop_classifier",
        )

    def build(self, pooled_shape):
        self.classifier.build(pooled_shape)
        self.built = True

    def call(self, pooled_output, training=False):
        x = self.dropout_layer(pooled_output, training=training)
        return ops.cast(self.classifier(x), "float32")

    def compute_output_shape(self, pooled_shape):
        return (pooled_shape[0], 2)

    def get_config(self):
        config = super().get_config()
        config.update(
            {"dropout": self.dropout, "initializer_range": self.initializer_range}
        )
        return config
