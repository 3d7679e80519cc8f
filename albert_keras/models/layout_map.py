"""Sharding of every family's weights over a device mesh (``keras.distribution``).

Each family declares its rules (``Family.layout``: path patterns and which
axis of the kernel goes to the model axis); the map holds all of them, so a
``ModelParallel`` distribution made before the model is known splits
whichever family is built under it. Families' paths do not overlap
(``transformer/...`` for ALBERT and DeBERTa, ``block_<i>/...`` for
MobileBERT). ``check_sharded`` makes a layout that splits nothing an error.
"""

import keras

from albert_keras.families import attribute
from albert_keras.families import families


def layout_rules():
    """``{path pattern: "in" | "out"}`` of every registered family."""
    rules = {}
    for family in families():
        if family.layout is not None:
            rules.update(attribute(family.layout))
    return rules


def family_layout_map(device_mesh, model_axis="model"):
    """A ``LayoutMap`` that splits every family's large kernels over ``model_axis``.

    Args:
        device_mesh: a ``keras.distribution.DeviceMesh`` with a
            ``model_axis`` axis (and usually a ``batch`` axis).
        model_axis: the mesh axis the weights are split over.

    Example:
    >>> import keras
    >>> mesh = keras.distribution.DeviceMesh(
    ...     (1, 1), ["batch", "model"], keras.distribution.list_devices()[:1])
    >>> layout_map = family_layout_map(mesh)
    """
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for pattern, side in layout_rules().items():
        layout_map[pattern] = (None, model_axis) if side == "out" else (model_axis, None)
    return layout_map



def check_sharded(model, where="--strategy model_parallel"):
    """The paths of ``model``'s weights split over devices; a ``ValueError``
    when there are none.

    Under ``ModelParallel`` a weight that matches no rule of the layout is
    silently replicated; a model whose family declares no rules (or whose
    paths changed) would train with every weight on every device, which is
    what the strategy was chosen to avoid. Read from the weights' own
    placement (JAX's shardings), so it holds for any layout map.

    Args:
        model: a model built under a ``ModelParallel`` distribution's scope.
        where: what the message names.
    """
    sharded = [w.path for w in model.weights
               if not getattr(getattr(w.value, "sharding", None), "is_fully_replicated", True)]
    if not sharded:
        raise ValueError(f"{where}: the layout splits no weight of {type(model).__name__}, so "
                         "every weight would be replicated on every device; declare its "
                         "family's layout (Family.layout), or use data_parallel")
    return sharded
