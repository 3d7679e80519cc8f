"""Reading facts out of a SentencePiece model file."""

import collections
import os

from albert_keras.config import CLS_ID
from albert_keras.config import MASK_ID
from albert_keras.config import PAD_ID
from albert_keras.config import SEP_ID
from albert_keras.config import UNK_ID

SPECIAL_PIECES = {PAD_ID: "<pad>", UNK_ID: "<unk>", CLS_ID: "[CLS]", SEP_ID: "[SEP]",
                  MASK_ID: "[MASK]"}
WORD_START = "\u2581"  # the SentencePiece word-boundary marker

# sentencepiece_model.proto's numbers: ModelProto.pieces = 1, .trainer_spec = 2;
# SentencePiece.piece = 1, .type = 3 (NORMAL = 1 when absent, UNUSED = 5);
# TrainerSpec.model_type = 3 (UNIGRAM = 1 when absent).
NORMAL, UNUSED = 1, 5
UNIGRAM = 1
MODEL_TYPES = {1: "UNIGRAM", 2: "BPE", 3: "WORD", 4: "CHAR"}

Piece = collections.namedtuple("Piece", ["piece", "type"])
ModelFacts = collections.namedtuple("ModelFacts", ["pieces", "model_type"])


class TokenizerError(ValueError):
    """A SentencePiece model we cannot use, with the file named."""


def _fields(data):
    """``[(number, value)]`` of one serialized message, decoded by protobuf.

    sentencepiece's generated ``sentencepiece_model_pb2`` (0.2.3) refuses to
    import under a protobuf runtime older than 7, while Apache Beam (the
    ``beam`` extra) needs one older than 7. Parsing into protobuf's own
    ``Empty`` keeps every field as an unknown field, which protobuf decodes
    for us whatever its version; we only name the three fields we read.
    """
    from google.protobuf import empty_pb2
    from google.protobuf.unknown_fields import UnknownFieldSet

    message = empty_pb2.Empty()
    message.ParseFromString(data)
    return [(f.field_number, f.data) for f in UnknownFieldSet(message)]


def _model_facts(data):
    pieces, model_type = [], UNIGRAM
    for number, value in _fields(data):
        if number == 1:
            piece, kind = None, NORMAL
            for n, v in _fields(value):
                if n == 1:
                    piece = v.decode("utf-8")
                elif n == 3:
                    kind = v
            if piece is None:
                raise ValueError("a piece without text")
            pieces.append(Piece(piece, kind))
        elif number == 2:
            model_type = dict(_fields(value)).get(3, UNIGRAM)
    return ModelFacts(pieces, model_type)


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
    except Exception as e:  # protobuf's DecodeError, bad UTF-8, a wrong wire type
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
    for number, value in _fields(data):
        if number != 3:
            continue
        fields = dict(_fields(value))
        spec["name"] = fields.get(1, b"").decode("utf-8")
        spec["charsmap"] = fields.get(2, b"")
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

