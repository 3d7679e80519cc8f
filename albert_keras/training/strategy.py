"""Choosing a ``tf.distribute`` strategy from one flag."""

import tensorflow as tf

STRATEGIES = ("auto", "tpu", "mirrored", "multiworker", "cpu")


class StrategyError(RuntimeError):
    """The requested hardware is not there; one line says what is missing."""


def _connect_tpu():
    """A TPUStrategy when a TPU is reachable (Colab, Cloud TPU VM), else None."""
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    except (ValueError, RuntimeError, tf.errors.OpError):
        # No TPU: "Please provide a TPU Name" (DESIGN trap 10) or no metadata.
        return None
    try:
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError):
        return None
    return tf.distribute.TPUStrategy(resolver)


def make_strategy(name="auto"):
    """Returns the strategy for ``name``.

    * ``auto``: a TPU when one is reachable, MirroredStrategy over two or
      more GPUs, else the default strategy (one CPU or GPU).
    * ``tpu``: a TPU, or a ``StrategyError``.
    * ``mirrored``: MirroredStrategy over every local GPU (without GPUs,
      over every logical CPU device).
    * ``multiworker``: MultiWorkerMirroredStrategy (``TF_CONFIG`` names the
      workers).
    * ``cpu``: one CPU device.

    Example:
    >>> strategy = make_strategy("cpu")
    >>> strategy.num_replicas_in_sync
    1
    """
    if name not in STRATEGIES:
        raise StrategyError(f"strategy must be one of {STRATEGIES}, got {name!r}")
    if name in ("auto", "tpu"):
        strategy = _connect_tpu()
        if strategy is not None:
            return strategy
        if name == "tpu":
            raise StrategyError(
                "no TPU is reachable (on Colab choose Runtime > Change runtime type "
                "> TPU; on a Cloud TPU VM run on the VM itself); use --strategy auto"
            )
        if len(tf.config.list_logical_devices("GPU")) > 1:
            return tf.distribute.MirroredStrategy()
        return tf.distribute.get_strategy()
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = gpus or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([d.name for d in devices])
    if name == "multiworker":
        return tf.distribute.MultiWorkerMirroredStrategy()
    return tf.distribute.OneDeviceStrategy("/cpu:0")
