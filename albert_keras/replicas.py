"""The ``tf.distribute`` replica context, for code that must also run off TensorFlow."""

import keras
from keras import ops


def tf_replica_context():
    """The replica context when ``tf.distribute`` runs several replicas.

    None on JAX and torch (``keras.distribution`` and torch see the global
    batch as one) and on one replica; TensorFlow is imported only on its own
    backend, so model code calling this stays backend-neutral.

    Example:
    >>> tf_replica_context() is None  # one device
    True
    """
    if keras.backend.backend() != "tensorflow":
        return None
    import tensorflow as tf

    replica = tf.distribute.get_replica_context()
    if replica is not None and replica.num_replicas_in_sync > 1:
        return replica
    return None


def mean_over_replicas(value):
    """``value`` averaged over the replicas (itself on one replica)."""
    replica = tf_replica_context()
    if replica is None:
        return value
    return replica.all_reduce("sum", ops.stop_gradient(value)) / replica.num_replicas_in_sync


def weighted_mean(values, weights):
    """``sum(values * weights)`` over the weights' sum in the global batch.

    Normalized by the weight of the whole global batch (per replica), so a
    replica with more masked tokens weighs more, as one device would weigh
    them; ``1e-5`` keeps an all-zero batch finite (ALBERT's own loss).

    Example:
    >>> round(float(weighted_mean(ops.array([1.0, 3.0]), ops.array([1.0, 0.0]))), 4)
    1.0
    """
    return ops.sum(values * weights) / (mean_over_replicas(ops.sum(weights)) + 1e-5)


def scale_for_replicas(loss):
    """Divides a per-replica loss by the replica count under ``tf.distribute``.

    tf.distribute sums the replicas' gradients, so each replica's loss is
    divided by their number, as Keras' own compiled losses do. JAX's
    ``keras.distribution`` and torch average over the global batch
    themselves: there the loss is left as it is, and TensorFlow is imported
    only on its own backend.
    """
    replica = tf_replica_context()
    if replica is not None:
        loss = loss / replica.num_replicas_in_sync
    return loss
