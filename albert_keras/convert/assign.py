"""Checked assignment of checkpoint tensors to model variables.

Nothing is assigned until every tensor has been found and shape-checked, so
a failed conversion never leaves a half-loaded model.
"""

import numpy as np

from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.weight_layout import REQUIRED_GROUP
from albert_keras.convert.weight_layout import group_of
from albert_keras.convert.weight_layout import model_variables


def assign_tensors(model, tensors, names, source, ignored=(), strict=True):
    """Copies ``tensors`` into ``model``'s variables.

    Args:
        model: an ``AlbertEncoder`` or ``EncoderPretrainer``.
        tensors: source tensor name -> numpy array.
        names: canonical name -> ``(source name, transform)`` (see
            ``weight_layout``).
        source: the file or folder, for error messages.
        ignored: source names that may be present and are not loaded
            (buffers, tied copies, optimizer slots).
        strict: source tensors that nothing consumes are an error.

    Returns:
        A dict with ``loaded`` (groups), ``skipped`` (optional groups absent
        from the source, left at their initial values) and ``unused``.

    Raises:
        ConversionError: a missing tensor, a shape mismatch or, with
            ``strict``, an unexpected tensor; nothing is assigned then.
    """
    targets = model_variables(model)
    planned, missing = [], {}
    for canonical, variable in targets.items():
        if canonical not in names:  # a part the format has no place for (ELECTRA's pooler)
            missing.setdefault(group_of(canonical), []).append(canonical)
            continue
        src, transform = names[canonical]
        if src not in tensors:
            missing.setdefault(group_of(canonical), []).append(src)
            continue
        array = np.asarray(tensors[src])
        if transform == "T":
            array = array.T
        if tuple(array.shape) != tuple(variable.shape):
            raise ConversionError(
                f"{source}: tensor {src} has shape {tuple(np.shape(tensors[src]))}, "
                f"the model expects {tuple(variable.shape)}"
                + (" (after transposing)" if transform == "T" else "")
            )
        planned.append((canonical, variable, array))

    if REQUIRED_GROUP in missing:
        first = missing[REQUIRED_GROUP]
        raise ConversionError(
            f"{source}: missing tensor {first[0]}"
            + (f" (and {len(first) - 1} more)" if len(first) > 1 else "")
        )
    present_groups = {group_of(c) for c, _, _ in planned}
    for group, names_missing in missing.items():
        if group in present_groups:
            raise ConversionError(
                f"{source}: missing tensor {names_missing[0]} while other "
                f"'{group}' tensors are present"
            )

    used = {names[c][0] for c, _, _ in planned}
    unused = sorted(k for k in tensors if k not in used and k not in set(ignored))
    if unused and strict:
        raise ConversionError(
            f"{source}: unexpected tensor {unused[0]}"
            + (f" (and {len(unused) - 1} more)" if len(unused) > 1 else "")
            + "; the config may not match the checkpoint"
        )

    for _, variable, array in planned:
        variable.assign(array.astype(variable.dtype))
    return {
        "loaded": sorted(present_groups),
        "skipped": sorted(g for g in missing if g not in present_groups),
        "unused": unused,
    }
