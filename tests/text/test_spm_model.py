"""Reading a SentencePiece model's pieces by hand, against sentencepiece's reader."""

import pytest
import sentencepiece as spm
from google.protobuf import empty_pb2
from google.protobuf.unknown_fields import UnknownFieldSet

from albert_keras.text.spm_model import CONTROL
from albert_keras.text.spm_model import NORMAL
from albert_keras.text.spm_model import UNKNOWN
from albert_keras.text.spm_model import TokenizerError
from albert_keras.text.spm_model import normalizer_spec
from albert_keras.text.spm_model import read_model_proto


def _protobuf_fields(data):
    message = empty_pb2.Empty()
    message.ParseFromString(data)
    return {f.field_number: f.data for f in UnknownFieldSet(message)}


def test_pieces_and_types_are_sentencepieces(spm_path):
    _, facts, _ = read_model_proto(spm_path)
    processor = spm.SentencePieceProcessor(model_file=spm_path)
    assert len(facts.pieces) == processor.get_piece_size()
    for i, (piece, kind) in enumerate(facts.pieces):
        assert piece == processor.id_to_piece(i)
        expected = (CONTROL if processor.is_control(i) else
                    UNKNOWN if processor.is_unknown(i) else NORMAL)
        assert kind == expected, (i, piece)
    assert {k for _, k in facts.pieces} == {NORMAL, CONTROL, UNKNOWN}
    assert facts.model_type == 1  # unigram


def test_the_normalizer_spec_is_protobufs(spm_path):
    data = open(spm_path, "rb").read()
    theirs = _protobuf_fields(_protobuf_fields(data)[3])
    ours = normalizer_spec(data)
    assert ours["name"] == theirs[1].decode("utf-8")
    assert ours["charsmap"] == theirs[2] and len(ours["charsmap"]) > 1000


@pytest.mark.parametrize("keep", [0.5, 0.999])
def test_a_truncated_model_is_named(spm_path, tmp_path, keep):
    data = open(spm_path, "rb").read()
    cut = tmp_path / "cut.model"
    cut.write_bytes(data[:int(len(data) * keep)])
    with pytest.raises(TokenizerError, match=r"cut.model: not a SentencePiece model"):
        read_model_proto(str(cut))


@pytest.mark.parametrize("data", [
    b"\x08\xff\xff\xff\xff\x0f",  # field 1 (a piece) as a huge varint, not bytes
    b"\x0a\x02\x08\x7f",  # a piece whose text is a varint
    b"\x12\x01\x18",  # a trainer spec that ends inside its field
    b"\x0b\x00",  # wire type 3 (a group)
])
def test_fields_of_the_wrong_kind_are_named_not_allocated(tmp_path, data):
    path = tmp_path / "odd.model"
    path.write_bytes(data)
    with pytest.raises(TokenizerError, match=r"odd.model: not a SentencePiece model"):
        read_model_proto(str(path))

