"""Reading facts out of a SentencePiece model file."""

import os

from sentencepiece import sentencepiece_model_pb2

from albert_keras.config import CLS_ID, MASK_ID, PAD_ID, SEP_ID, UNK_ID

SPECIAL_PIECES = {PAD_ID: "<pad>", UNK_ID: "<unk>", CLS_ID: "[CLS]", SEP_ID: "[SEP]",
                  MASK_ID: "[MASK]"}
WORD_START = "\u2581"  # the SentencePiece word-boundary marker


class TokenizerError(ValueError):
    """A SentencePiece model we cannot use, with the file named."""


def read_model_proto(proto_or_path):
    """Returns ``(bytes, ModelProto)`` for a path or serialized model bytes."""
    if isinstance(proto_or_path, (bytes, bytearray)):
        data, source = bytes(proto_or_path), "SentencePiece model"
    else:
        source = os.fspath(proto_or_path)
        try:
            with open(source, "rb") as f:
                data = f.read()
        except OSError as e:
            raise TokenizerError(f"{source}: cannot read tokenizer: {e}") from None
    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(data)
    except Exception as e:  # protobuf's DecodeError and friends
        raise TokenizerError(f"{source}: not a SentencePiece model: {e}") from None
    if not proto.pieces:
        raise TokenizerError(f"{source}: not a SentencePiece model (no pieces)")
    return data, proto, source


def check_albert_model(proto, source):
    """Refuses models the in-graph tokenizer would get wrong.

    ``tensorflow_text.FastSentencepieceTokenizer`` returns wrong ids for BPE
    models without raising (measured with tensorflow-text 2.21), so only unigram models
    are accepted. The special pieces must sit at ALBERT's ids.
    """
    model_type = proto.trainer_spec.model_type
    if model_type != sentencepiece_model_pb2.TrainerSpec.UNIGRAM:
        name = sentencepiece_model_pb2.TrainerSpec.ModelType.Name(model_type)
        raise TokenizerError(
            f"{source}: a {name} SentencePiece model is not supported: the "
            "in-graph tokenizer (tf-text FastSentencepieceTokenizer) gives wrong "
            "ids for it without an error; train a unigram model "
            "(albert-keras tokenizer train)"
        )
    for index, piece in SPECIAL_PIECES.items():
        if index >= len(proto.pieces) or proto.pieces[index].piece != piece:
            found = proto.pieces[index].piece if index < len(proto.pieces) else None
            raise TokenizerError(
                f"{source}: id {index} must be {piece!r} (ALBERT convention), "
                f"found {found!r}"
            )


def word_start_table(proto):
    """A list of booleans: does piece ``i`` begin a new word?

    Pieces beginning with U+2581 start a word. Special and byte pieces count as
    word starts, so that a word never spans them.
    """
    table = []
    for p in proto.pieces:
        normal = p.type == sentencepiece_model_pb2.ModelProto.SentencePiece.NORMAL
        table.append(p.piece.startswith(WORD_START) or not normal)
    return table


def albert_vocabulary(proto_or_path):
    """Checks an ALBERT SentencePiece model; returns ``(vocab_size, word_starts)``."""
    _, proto, source = read_model_proto(proto_or_path)
    check_albert_model(proto, source)
    return len(proto.pieces), word_start_table(proto)
