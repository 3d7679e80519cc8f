"""The per-layer hidden states of an encoder as one tensor (every family's)."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="albert_keras")
class StackHiddenStates(keras.layers.Layer):
    """Stacks the hidden states into ``[B, num_states, S, H]``."""

    def call(self, states):
        return ops.stack(states, axis=1)

    def compute_output_shape(self, shapes):
        first = shapes[0]
        return (first[0], len(shapes)) + tuple(first[1:])
