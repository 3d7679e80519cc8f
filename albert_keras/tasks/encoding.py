"""Host-side tokenization for task features.

Tagging and QA need to know which characters and words each piece came
from; tf-text's in-graph tokenizer gives ids only, so features are built
with the ``sentencepiece`` library on the same model (the text tests check
that both give the same ids). Classification and multiple choice pack with
``AlbertPacker``, the layer a string-in export puts in its graph.
"""

import numpy as np
import sentencepiece as spm
import tensorflow as tf

from albert_keras.text.packer import AlbertPacker
from albert_keras.text.spm_model import read_model_proto


class PieceEncoder:
    """Ids and character offsets from a SentencePiece model.

    Args:
        proto: a ``.model`` path or the model bytes.

    Example:
    >>> encoder = PieceEncoder("spm.model")  # doctest: +SKIP
    >>> ids, starts, ends = encoder.encode_with_offsets("naïve café")  # doctest: +SKIP
    """

    def __init__(self, proto):
        self.proto_bytes, _, self.source = read_model_proto(proto)
        self.processor = spm.SentencePieceProcessor(model_proto=self.proto_bytes)

    @property
    def vocabulary_size(self):
        return self.processor.get_piece_size()

    def id_to_piece(self, index):
        return self.processor.id_to_piece(int(index))

    def encode(self, texts):
        """A list of id lists, one per text."""
        return self.processor.encode(list(texts))

    def encode_with_offsets(self, text):
        """``(ids, char_starts, char_ends)``: piece ``i`` covers
        ``text[char_starts[i]:char_ends[i]]`` with its leading whitespace
        left out (the ``▁`` of a piece stands for that whitespace)."""
        proto = self.processor.encode(text, return_type="proto")
        # Piece offsets are UTF-8 byte offsets into the original text; map
        # them to character offsets (so non-ASCII text slices correctly).
        data = text.encode("utf-8")
        char_of_byte = np.zeros(len(data) + 1, dtype=np.int64)
        position = 0
        for index, ch in enumerate(text):
            width = len(ch.encode("utf-8"))
            char_of_byte[position:position + width] = index
            position += width
        char_of_byte[len(data)] = len(text)
        ids, starts, ends = [], [], []
        for piece in proto.pieces:
            start, end = int(char_of_byte[piece.begin]), int(char_of_byte[piece.end])
            while start < end and text[start].isspace():
                start += 1
            ids.append(piece.id)
            starts.append(start)
            ends.append(end)
        return ids, starts, ends


def _ragged(id_lists):
    lengths = [len(ids) for ids in id_lists]
    flat = np.fromiter((i for ids in id_lists for i in ids), dtype=np.int32, count=sum(lengths))
    return tf.RaggedTensor.from_row_lengths(flat, np.asarray(lengths, dtype=np.int64))


def pack_texts(encoder, texts, pairs, sequence_length, truncate="longest_first", batch=4096):
    """Tokenizes and packs texts (and pairs) into numpy encoder inputs."""
    packer = AlbertPacker(sequence_length, truncate=truncate)
    parts = {k: [] for k in ("token_ids", "segment_ids", "padding_mask")}
    for start in range(0, len(texts), batch):
        first = _ragged(encoder.encode(texts[start:start + batch]))
        second = _ragged(encoder.encode(pairs[start:start + batch])) if pairs else None
        packed = packer(first, second)
        for k in parts:
            parts[k].append(packed[k].numpy())
    if not texts:
        return {k: np.zeros((0, sequence_length), np.int32) for k in parts}
    return {k: np.concatenate(v) for k, v in parts.items()}
