"""Reading facts out of a SentencePiece model file."""

import collections
import functools
import os

from albert_keras.text.special_ids import CLS_ID
from albert_keras.text.special_ids import MASK_ID
from albert_keras.text.special_ids import PAD_ID
from albert_keras.text.special_ids import SEP_ID
from albert_keras.text.special_ids import UNK_ID

SPECIAL_PIECES = {PAD_ID: "<pad>", UNK_ID: "<unk>", CLS_ID: "[CLS]", SEP_ID: "[SEP]",
                  MASK_ID: "[MASK]"}
WORD_START = "\u2581"  # the SentencePiece word-boundary marker

# sentencepiece_model.proto's numbers: ModelProto.pieces = 1, .trainer_spec = 2;
# SentencePiece.piece = 1, .type = 3 (NORMAL = 1 when absent, UNKNOWN = 2,
# CONTROL = 3, UNUSED = 5);
# TrainerSpec.model_type = 3 (UNIGRAM = 1 when absent).
NORMAL, UNKNOWN, CONTROL, UNUSED = 1, 2, 3, 5
UNIGRAM = 1
MODEL_TYPES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}

Piece = collections.namedtuple("Piece", ["piece", "type"])
ModelFacts = collections.namedtuple("ModelFacts", ["pieces", "model_type"])


class TokenizerError(ValueError):
    """A SentencePiece model we cannot use, with the file named."""


def _varint(data, at):
    """``(value, next position)`` of the protobuf varint at ``data[at]``."""
    value = shift = 0
    while True:
        byte = data[at]  # an IndexError past the end: a truncated file
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def _wire_fields(data):
    """``(number, value)`` of each field of one serialized message: bytes for
    length-delimited fields, ints for varints, None for fixed-width ones.

    Written by hand, not with a library: sentencepiece's generated
    ``sentencepiece_model_pb2`` (0.2.3) refuses to import under a protobuf
    runtime older than 7, which Apache Beam (the ``beam`` extra) needs; and
    protobuf's own unknown-field decoding makes a Python object per field, so
    a DeBERTa-v3 model's 128,000 pieces took 0.8-1.0 s a read, three reads a
    run. The format is three wire types deep; a truncated or foreign file
    raises IndexError or ValueError."""
    at, end = 0, len(data)
    while at < end:
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 2:
            length, at = _varint(data, at)
            if at + length > end:
                raise ValueError(f"field {number} runs past the end")
            yield number, data[at:at + length]
            at += length
        elif wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
            yield number, None
        else:
            raise ValueError(f"field {number} has wire type {wire}")
    if at != end:
        raise ValueError("the last field runs past the end")


def _bytes(value, what):
    """A length-delimited field's bytes (a varint where they belong is an error)."""
    if not isinstance(value, (bytes, memoryview)):
        raise ValueError(f"{what} is not a length-delimited field")
    return bytes(value)


def _piece(data):
    piece, kind = None, NORMAL
    for number, value in _wire_fields(data):
        if number == 1:
            piece = _bytes(value, "a piece's text").decode("utf-8")
        elif number == 3:
            kind = value
    if piece is None:
        raise ValueError("a piece without text")
    return Piece(piece, kind)


@functools.lru_cache(maxsize=4)
def _model_facts(data):
    """The pieces and model type of serialized model bytes (kept: the host
    tokenizer, the in-graph one and a loaded ``.keras`` read the same bytes)."""
    view = memoryview(data)
    pieces, model_type = [], UNIGRAM
    for number, value in _wire_fields(view):
        if number == 1:
            pieces.append(_piece(_bytes(value, "a piece")))
        elif number == 2:
            model_type = dict(_wire_fields(_bytes(value, "the trainer spec"))).get(3, UNIGRAM)
    return ModelFacts(tuple(pieces), model_type)


def read_model_proto(proto_or_path):
    """Returns ``(bytes, facts, source)`` for a path or serialized model bytes.

    ``facts.pieces`` lists ``(piece, type)`` by id; ``facts.model_type`` is
    the trainer's model type number.
    """
    if isinstance(proto_or_path, (bytes, bytearray)):
        data, source = bytes(proto_or_path), "SentencePiece model"
    else:
        source = os.fspath(proto_or_path)
        try:
            with open(source, "rb") as f:
                data = f.read()
        except OSError as e:
            raise TokenizerError(f"{source}: cannot read tokenizer: {e}") from None
    try:
        proto = _model_facts(data)
    except IndexError:
        raise TokenizerError(f"{source}: not a SentencePiece model (it ends inside a "
                             "field: truncated?)") from None
    except ValueError as e:  # a wrong wire type, a field past the end, bad UTF-8
        raise TokenizerError(f"{source}: not a SentencePiece model: {e}") from None
    if not proto.pieces:
        raise TokenizerError(f"{source}: not a SentencePiece model (no pieces)")
    return data, proto, source


def normalizer_spec(data):
    """A model's normalization, as its ``NormalizerSpec`` (field 3) holds it:
    ``{"name", "charsmap", "add_dummy_prefix", "remove_extra_whitespaces"}``
    (protobuf's defaults where a field is absent)."""
    spec = {"name": "", "charsmap": b"", "add_dummy_prefix": True,
            "remove_extra_whitespaces": True}
    for number, value in _wire_fields(data):
        if number != 3:
            continue
        fields = dict(_wire_fields(_bytes(value, "the normalizer spec")))
        spec["name"] = _bytes(fields.get(1, b""), "the normalizer's name").decode("utf-8")
        spec["charsmap"] = _bytes(fields.get(2, b""), "the normalizer's charsmap")
        spec["add_dummy_prefix"] = bool(fields.get(3, 1))
        spec["remove_extra_whitespaces"] = bool(fields.get(4, 1))
    return spec


# DeBERTa-v2/v3's SentencePiece models put [PAD], [CLS], [SEP], [UNK] first
# and have no [MASK] piece: HF adds it right after the last piece
# (deberta-v3-base: 128,000 pieces, [MASK] = 128000).
DEBERTA_PIECES = {"pad": "[PAD]", "cls": "[CLS]", "sep": "[SEP]", "unk": "[UNK]"}


def special_ids_of(proto, source):
    """The special ids of a model: ALBERT's convention or DeBERTa's.

    Returns:
        ``{"pad", "unk", "cls", "sep", "mask"}`` -> id. Under DeBERTa's
        convention ``mask`` may be one past the last piece (an added token).

    Raises:
        TokenizerError: neither convention fits; the message names the
            first piece that is wrong.
    """
    pieces = [p.piece for p in proto.pieces]
    albert = dict(zip(("pad", "unk", "cls", "sep", "mask"), SPECIAL_PIECES))
    if all(i < len(pieces) and pieces[i] == SPECIAL_PIECES[i] for i in SPECIAL_PIECES):
        return albert
    index = {piece: i for i, piece in enumerate(pieces)}
    if all(piece in index for piece in DEBERTA_PIECES.values()):
        out = {name: index[piece] for name, piece in DEBERTA_PIECES.items()}
        out["mask"] = index.get("[MASK]", len(pieces))
        return out
    for i, piece in SPECIAL_PIECES.items():
        if i >= len(pieces) or pieces[i] != piece:
            found = pieces[i] if i < len(pieces) else None
            raise TokenizerError(
                f"{source}: id {i} must be {piece!r} (ALBERT convention; DeBERTa's "
                f"[PAD] [CLS] [SEP] [UNK] pieces are not all there either), found {found!r}"
            )
    return albert


def check_albert_model(proto, source):
    """Refuses models the in-graph tokenizer would get wrong.

    ``tensorflow_text.FastSentencepieceTokenizer`` returns wrong ids for BPE
    models without raising (measured with tensorflow-text 2.21), so only unigram models
    are accepted, and none with a piece of type UNUSED, which its model
    converter refuses (an internal error at export otherwise). The special
    pieces must follow ALBERT's or DeBERTa's convention (``special_ids_of``).
    """
    if proto.model_type != UNIGRAM:
        name = MODEL_TYPES.get(proto.model_type, str(proto.model_type))
        raise TokenizerError(
            f"{source}: a {name} SentencePiece model is not supported: the "
            "in-graph tokenizer (tf-text FastSentencepieceTokenizer) gives wrong "
            "ids for it without an error; train a unigram model "
            "(albert-keras tokenizer train)"
        )
    unused = next((i for i, p in enumerate(proto.pieces) if p.type == UNUSED), None)
    if unused is not None:
        raise TokenizerError(
            f"{source}: piece {unused} ({proto.pieces[unused].piece!r}) has type UNUSED, "
            "which the in-graph tokenizer (tf-text FastSentencepieceTokenizer) cannot read; "
            "give such pieces type NORMAL with a low score"
        )
    special_ids_of(proto, source)


def word_start_table(proto):
    """A list of booleans: does piece ``i`` begin a new word?

    Pieces beginning with U+2581 start a word. Special and byte pieces count as
    word starts, so that a word never spans them.
    """
    table = []
    for p in proto.pieces:
        table.append(p.piece.startswith(WORD_START) or p.type != NORMAL)
    return table

