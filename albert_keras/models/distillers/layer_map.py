"""Which student layer learns from which teacher layer in distillation's
layer-transfer stage. Free of TensorFlow, so that the command line can check
``--layer-map`` before loading anything."""


def uniform_layer_map(student_layers, teacher_layers):
    """TinyBERT's uniform mapping: student layer ``m`` learns from teacher
    layer ``m * N / M`` (rounded), and the embedding output (layer 0) from
    the teacher's.

    Args:
        student_layers: M, the student's blocks.
        teacher_layers: N, the teacher's blocks (N >= M).

    Returns:
        ``[(0, 0), (1, g(1)), ..., (M, N)]``.

    Example:
    >>> uniform_layer_map(2, 4)
    [(0, 0), (1, 2), (2, 4)]
    """
    if student_layers > teacher_layers:
        raise ValueError(f"the student has more blocks ({student_layers}) than the teacher "
                         f"({teacher_layers}); give --layer-map")
    return [(0, 0)] + [(m, round(m * teacher_layers / student_layers))
                       for m in range(1, student_layers + 1)]


def parse_layer_map(text, student_layers, teacher_layers):
    """``"0:0,1:3,2:6"`` (student:teacher, 0 = the embedding output) -> pairs,
    checked against both depths; None or ``""`` gives ``uniform_layer_map``.

    Example:
    >>> parse_layer_map("1:3,2:6", 2, 6)
    [(1, 3), (2, 6)]
    """
    if not text:
        return uniform_layer_map(student_layers, teacher_layers)
    pairs = []
    for item in str(text).split(","):
        try:
            s, t = (int(v) for v in item.split(":"))
        except ValueError:
            raise ValueError(f"layer map: {item.strip()!r} is not STUDENT:TEACHER "
                             "(e.g. 1:3)") from None
        if not 0 <= s <= student_layers or not 0 <= t <= teacher_layers:
            raise ValueError(f"layer map: {s}:{t} is outside the student's 0..{student_layers} "
                             f"or the teacher's 0..{teacher_layers} layers")
        if (s == 0) != (t == 0):
            raise ValueError(f"layer map: {s}:{t} pairs an embedding output with a block's")
        pairs.append((s, t))
    if len({s for s, _ in pairs}) != len(pairs):
        raise ValueError(f"layer map {text!r} names a student layer twice")
    return pairs
