"""Choosing how training is spread over devices, from one flag.

On the TensorFlow backend this is a ``tf.distribute`` strategy. On JAX it is
a ``keras.distribution`` (``DataParallel`` or ``ModelParallel``) wrapped in
``KerasDistribution``, which offers the few strategy methods the training
drivers use, so one driver serves both.
"""

import contextlib
import glob

import keras
import tensorflow as tf

from albert_keras.training.pretrain_config import STRATEGIES

TF_ONLY = ("tpu", "mirrored", "multiworker")
JAX_ONLY = ("data_parallel", "model_parallel")


class StrategyError(RuntimeError):
    """The requested hardware is not there; one line says what is missing."""


def _connect_tpu():
    """A TPUStrategy when a TPU is reachable (Colab, Cloud TPU VM), else None."""
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
    except (ValueError, RuntimeError, tf.errors.OpError):
        # No TPU: "Please provide a TPU Name", or no metadata server.
        return None
    try:
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (ValueError, RuntimeError, tf.errors.OpError):
        return None
    return tf.distribute.TPUStrategy(resolver)


def tpu_device_files():
    """The TPU chips' device files of this machine (``/dev/accel*`` on v4 and
    v5e VMs, ``/dev/vfio/<n>`` on v5p and v6e), whichever library holds them."""
    return sorted(glob.glob("/dev/accel[0-9]*") + glob.glob("/dev/vfio/[0-9]*"))


def _no_tpu_message():
    """Why ``--strategy tpu`` found none from TensorFlow, and what to do."""
    chips = tpu_device_files()
    if chips:
        # Colab's and Kaggle's TPU runtimes give the chips to JAX; their
        # TensorFlow (none that reaches a TPU ships there) sees no TPU.
        return (f"TensorFlow reaches no TPU, but this machine has TPU chips ({chips[0]}): "
                "on Colab's and Kaggle's TPU runtimes they belong to JAX; run with "
                "KERAS_BACKEND=jax (--backend jax) and --strategy auto")
    return ("no TPU is reachable (on Colab or Kaggle choose a TPU runtime; on a Cloud TPU "
            "VM run on the VM itself); use --strategy auto")


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
    * ``data_parallel`` (JAX): every local device holds the whole model and
      a slice of each batch. ``auto`` picks it on JAX when there are two or
      more devices.
    * ``model_parallel`` (JAX): a ``batch`` x ``model`` mesh over the local
      devices (two model shards per pair of devices) with the large kernels
      split by each family's layout (``Family.layout``): for models too
      large for one device.

    Example:
    >>> strategy = make_strategy("cpu")
    >>> strategy.num_replicas_in_sync
    1
    """
    if name not in STRATEGIES:
        raise StrategyError(f"strategy must be one of {STRATEGIES}, got {name!r}")
    backend = keras.backend.backend()
    # keras.distribution shards on JAX alone (torch has no implementation)
    usable = [s for s in STRATEGIES if (backend == "jax" or s not in JAX_ONLY)
              and (backend == "tensorflow" or s not in TF_ONLY)]
    usable = f"{', '.join(usable[:-1])} or {usable[-1]}"
    if name == "tpu" and backend == "jax":
        raise StrategyError("--strategy tpu is TensorFlow's TPUStrategy; on the jax backend "
                            "--strategy auto trains data-parallel over every TPU chip")
    if name in JAX_ONLY and backend != "jax":
        raise StrategyError(
            f"--strategy {name} needs the JAX backend (KERAS_BACKEND=jax or --backend jax); "
            f"on {backend} use {usable}")
    if backend != "tensorflow":
        if name in TF_ONLY:
            raise StrategyError(
                f"--strategy {name} is TensorFlow's; on the {backend} backend use {usable}")
        return KerasDistribution.for_name(name)
    if name in ("auto", "tpu"):
        strategy = _connect_tpu()
        if strategy is not None:
            return strategy
        if name == "tpu":
            raise StrategyError(_no_tpu_message())
        if len(tf.config.list_logical_devices("GPU")) > 1:
            return tf.distribute.MirroredStrategy()
        return tf.distribute.get_strategy()
    if name == "mirrored":
        gpus = tf.config.list_logical_devices("GPU")
        devices = gpus or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([d.name for d in devices])
    if name == "multiworker":
        return _MultiWorkerMirroredStrategy()
    return tf.distribute.OneDeviceStrategy("/cpu:0")


def describe_devices(strategy):
    """What a run trains on: ``{"backend", "hardware", "devices", "replicas"}``.

    ``hardware`` is ``TPU``, ``GPU`` or ``CPU``; ``devices`` how many of them
    hold a copy (or a shard) of the model; ``replicas`` how many ways each
    global batch is split. Under ``keras.distribution`` (JAX) the devices are
    JAX's, so a Colab or Kaggle TPU runtime, whose TensorFlow sees no TPU,
    reports its chips.

    Args:
        strategy: what ``make_strategy`` returned; None: Keras' default
            device.

    Example:
    >>> describe_devices(make_strategy("cpu"))["hardware"]
    'CPU'
    """
    backend = keras.backend.backend()
    if strategy is None:  # Keras' default device (JAX's or torch's first)
        strategy = (tf.distribute.get_strategy() if backend == "tensorflow"
                    else KerasDistribution(None))
    if isinstance(strategy, KerasDistribution):
        if strategy.distribution is None:
            devices = keras.distribution.list_devices()[:1] if backend == "jax" else ["cpu:0"]
            replicas = 1
        else:  # the batch axis of the mesh splits each batch
            mesh = strategy.distribution.device_mesh
            devices = list(mesh.devices.flat)
            replicas = dict(zip(mesh.axis_names, mesh.shape)).get("batch", len(devices))
        hardware = str(devices[0]).split(":")[0].upper()
        return {"backend": backend, "hardware": hardware, "devices": len(devices),
                "replicas": int(replicas)}
    replicas = strategy.num_replicas_in_sync
    if isinstance(strategy, tf.distribute.TPUStrategy):
        hardware = "TPU"
    elif (isinstance(strategy, tf.distribute.OneDeviceStrategy)
          or not tf.config.list_logical_devices("GPU")):
        hardware = "CPU"
    else:
        hardware = "GPU"
    return {"backend": backend, "hardware": hardware, "devices": replicas, "replicas": replicas}


def check_layout(strategy, model):
    """Under ``--strategy model_parallel``, a ``ValueError`` when the layout
    splits none of ``model``'s weights; nothing under other strategies.

    Returns:
        The paths of the weights split over the model axis (model
        parallel), else None.

    Example:
    >>> import keras
    >>> check_layout(make_strategy("cpu"), keras.Sequential())
    """
    distribution = getattr(strategy, "distribution", None)
    if distribution is None and keras.backend.backend() == "jax":
        distribution = keras.distribution.distribution()  # one set by the caller
    if isinstance(distribution, keras.distribution.ModelParallel):
        from albert_keras.models.layout_map import check_sharded

        return check_sharded(model)
    return None


def where_it_runs(strategy=None, precision=None, batch_size=None, model=None, split=None):
    """The one line a command prints about where it computes.

    Args:
        strategy: what ``make_strategy`` returned; None: Keras' default
            device (what ``predict`` and ``evaluate`` run on).
        precision: the dtype policy's name (default: ``model``'s, else the
            global policy's).
        batch_size: the global batch, when there is one to say.
        model: the model, whose weights ``split`` counts.
        split: the paths of the weights split over the model axis
            (``check_layout``'s answer), or None.

    Example:
    >>> where_it_runs(make_strategy("cpu"), "float32", 32)
    '1 CPU device(s) on tensorflow, 1 replica(s): global batch 32, precision float32'
    """
    found = describe_devices(strategy)
    if precision is None:
        policy = getattr(model, "dtype_policy", None) or keras.mixed_precision.global_policy()
        precision = policy.name
    line = (f"{found['devices']} {found['hardware']} device(s) on {found['backend']}, "
            f"{found['replicas']} replica(s): "
            + (f"global batch {batch_size}, " if batch_size else "")
            + f"precision {precision}")
    if split is not None:
        line += f"; {len(split)} of {len(model.weights)} weights split over the model axis"
    return line


def is_chief(strategy):
    """Whether this process writes the model folder.

    Under MultiWorkerMirroredStrategy every worker runs this same code; only
    the chief (``chief``, or worker 0 when there is none) writes
    checkpoints, logs and the final folder, and all of them read the
    checkpoints to resume, so ``--out`` must be on storage every worker sees.
    """
    extended = getattr(strategy, "extended", None)
    return bool(getattr(extended, "should_checkpoint", True))


def is_multi_worker(strategy):
    """Whether ``strategy`` spans several worker processes."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and (
        strategy.extended._num_workers > 1)  # no public count of workers


class _MultiWorkerMirroredStrategy(tf.distribute.MultiWorkerMirroredStrategy):
    """MultiWorkerMirroredStrategy whose ``reduce`` accepts nested values.

    Keras' TensorFlow trainer builds the model from the first batch, which it
    averages over the replicas with ``strategy.reduce`` (a dict of per-replica
    tensors). MirroredStrategy maps its reduction over the structure; the
    multi-worker strategy takes one tensor at a time (TF 2.21), so ``fit``
    failed before its first step ("Attempt to convert a value ({'token_ids':
    PerReplica...")``. After each step Keras also averages the scalar
    logs with ``axis=0``, which fails on a scalar ("Invalid reduction
    dimension 0 for input with 0 dimensions"). Here each tensor is reduced
    on its own, and a scalar over the replicas only.
    """

    def reduce(self, reduce_op, value, axis):
        parent = super()

        def one(v):
            local = self.experimental_local_results(v)[0]
            return parent.reduce(reduce_op, v, None if local.shape.rank == 0 else axis)

        return tf.nest.map_structure(one, value)


class KerasDistribution:
    """A ``keras.distribution`` in the shape of a ``tf.distribute`` strategy.

    The drivers call ``scope()``, ``num_replicas_in_sync`` and
    ``distribute_datasets_from_function``. Under ``keras.distribution`` the
    input is one pipeline of global batches that Keras splits over the
    devices itself, so the dataset function gets a one-pipeline context and
    the replica count is 1.

    Args:
        distribution: a ``keras.distribution.Distribution``, or None for one
            device.
    """

    num_replicas_in_sync = 1

    def __init__(self, distribution=None):
        self.distribution = distribution

    @classmethod
    def for_name(cls, name):
        # keras.distribution has no torch implementation (Keras 3.15): its
        # list_devices fails there with an AttributeError on None. Only auto
        # and cpu get here on torch (make_strategy refuses the sharded ones),
        # and one device needs no distribution.
        if keras.backend.backend() != "jax":
            return cls(None)
        devices = keras.distribution.list_devices()
        if name == "cpu" or (name == "auto" and len(devices) < 2):
            return cls(None)
        if name in ("auto", "data_parallel"):
            return cls(keras.distribution.DataParallel(devices=devices))
        if len(devices) % 2:
            raise StrategyError(
                f"--strategy model_parallel needs an even number of devices, found "
                f"{len(devices)}")
        from albert_keras.models.layout_map import family_layout_map

        mesh = keras.distribution.DeviceMesh(
            (len(devices) // 2, 2), ["batch", "model"], devices)
        return cls(keras.distribution.ModelParallel(
            layout_map=family_layout_map(mesh), batch_dim_name="batch"))

    def scope(self):
        if self.distribution is None:
            return contextlib.nullcontext()
        return self.distribution.scope()

    def distribute_datasets_from_function(self, dataset_fn):
        return dataset_fn(tf.distribute.InputContext())
