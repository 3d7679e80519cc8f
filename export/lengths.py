"""Length buckets at the edge: one ``.tflite``, several input lengths.

An exported model computes every position of its fixed input, so a
24-piece text in a 128-position file pays for 128 (in Chromium, LiteRT.js:
81 ms a text at 128 positions, 42 ms at 64, for the same BERT classifier).
Training cuts each batch to its bucket's length; an app can do the same
when the file carries a signature per length: ``serving_default`` at the
full sequence length and ``length_N`` for each shorter ``N``. TFLite keeps
each constant once, so the extra signatures share the weights (four
lengths of a 7.7 MB model made a 7.70 MB file). Each length is validated
against Keras like the main one, and the sidecar lists them; the app runs
the shortest that holds its packed text.
"""

from albert_keras.export.converter import ExportError
from albert_keras.export.export_config import arg

DEFAULT_SIGNATURE = "serving_default"
# With --web and no --lengths: every 16 positions up to 128, then doubling, below the
# sequence length. Short texts are the common case on a page; on 200 State of the Union
# sentences (33 pieces on average) steps of 16 ran 41 positions a text where powers of
# two ran 48, and each signature adds only its op records to the file.
DEFAULT_STEP, DEFAULT_STEP_UNTIL = 16, 128


def signature_name(length):
    """The signature of the input length ``length`` (``length_32``)."""
    return f"length_{int(length)}"


def check_lengths_request(c):
    """Refuses, before any work, ``lengths`` asked with a mode or option
    that cannot carry them."""
    if not c.lengths:
        return
    if c.with_tokenizer:
        raise ExportError(f"{arg('lengths')} is for ids-in files; a string-in file packs "
                          f"its text inside the graph at one length: drop one of them")
    if c.quantize in ("int8", "qat"):
        raise ExportError(f"{arg('lengths')} with {arg('quantize')} {c.quantize}: int8 "
                          f"calibration covers one signature; export one file per length "
                          f"or use dynamic, float16 or none")
    if c.metadata:
        raise ExportError(f"{arg('lengths')} with {arg('metadata')}: MediaPipe and the Task "
                          f"Library run a file's first signature only")


def extra_lengths(c, sequence_length, kind):
    """The lengths the file carries below ``sequence_length``, ascending.

    Args:
        c: the ``ExportConfig`` (its ``lengths``, or with ``web`` the
            default powers of two where the mode allows them).
        sequence_length: the main signature's length.
        kind: the model's ``ExportKind``.
    """
    asked = c.lengths
    if asked is None:
        defaults = c.web and not (c.with_tokenizer or c.metadata or
                                  c.quantize in ("int8", "qat")) and kind.one_text
        asked = default_lengths(sequence_length) if defaults else []
    lengths = sorted({int(n) for n in asked})
    if not lengths:
        return []
    if not kind.one_text:
        raise ExportError(f"{arg('lengths')}: {kind.article()} {kind} model takes one input "
                          "length")
    if lengths[-1] >= sequence_length:
        raise ExportError(f"{arg('lengths')} {lengths[-1]} is not below "
                          f"{arg('sequence_length')} {sequence_length}, the length of the "
                          f"file's main signature")
    return lengths


def default_lengths(sequence_length):
    """The lengths ``web`` carries unless told: 16, 32, ... 112, then 256,
    512, ..., each below ``sequence_length``.

    Example:
    >>> default_lengths(128)
    [16, 32, 48, 64, 80, 96, 112]
    >>> default_lengths(512)
    [16, 32, 48, 64, 80, 96, 112, 128, 256]
    """
    lengths = list(range(DEFAULT_STEP, min(sequence_length, DEFAULT_STEP_UNTIL + 1),
                         DEFAULT_STEP))
    n = DEFAULT_STEP_UNTIL * 2
    while n < sequence_length:
        lengths.append(n)
        n *= 2
    return [n for n in lengths if n < sequence_length]


def endpoints(make_serve, sequence_length, lengths):
    """``{signature name: serving function}``. The converter orders the
    file's subgraphs itself (by name: ``length_112`` came first), so a file
    with several lengths is for runtimes that call a signature by name; the
    app-runtime metadata, which describes the first subgraph, is refused
    with lengths (``check_lengths_request``).

    Args:
        make_serve: ``length -> tf.function`` (``converter.serving_function``).
        sequence_length: the main signature's length.
        lengths: the shorter lengths.
    """
    functions = {DEFAULT_SIGNATURE: make_serve(sequence_length)}
    functions.update({signature_name(n): make_serve(n) for n in lengths})
    return functions


def signatures(sequence_length, lengths):
    """``{signature name: input length}`` for the sidecar, shortest first."""
    table = {signature_name(n): n for n in lengths}
    table[DEFAULT_SIGNATURE] = int(sequence_length)
    return table
