"""Sharding of ALBERT's weights over a device mesh (``keras.distribution``)."""

import keras


def albert_layout_map(device_mesh, model_axis="model"):
    """A ``LayoutMap`` that splits the large kernels over ``model_axis``.

    Megatron-style: query/key/value and the FFN's first kernel split their
    output columns, the attention output and the FFN's second kernel their
    input rows, so each pair needs one reduction. The embedding tables,
    biases, LayerNorms and the small heads stay replicated (ALBERT's
    factorized tables are small: V x 128).
    Used with ``keras.distribution.ModelParallel`` on JAX for the presets
    too large for one device (xlarge, xxlarge).

    Args:
        device_mesh: a ``keras.distribution.DeviceMesh`` with a
            ``model_axis`` axis (and usually a ``batch`` axis).
        model_axis: the mesh axis the weights are split over.

    Example:
    >>> import keras
    >>> mesh = keras.distribution.DeviceMesh(
    ...     (1, 1), ["batch", "model"], keras.distribution.list_devices()[:1])
    >>> layout_map = albert_layout_map(mesh)
    """
    layout_map = keras.distribution.LayoutMap(device_mesh)
    for name in ("query", "key", "value"):
        layout_map[f"transformer/attention_\\d+/{name}/kernel"] = (None, model_axis)
    layout_map["transformer/attention_\\d+/output_dense/kernel"] = (model_axis, None)
    layout_map["transformer/ffn_\\d+/ffn/kernel"] = (None, model_axis)
    layout_map["transformer/ffn_\\d+/ffn_output/kernel"] = (model_axis, None)
    return layout_map
