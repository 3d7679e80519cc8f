"""The ``tf.distribute`` replica context, for code that must also run off TensorFlow."""

import keras


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
