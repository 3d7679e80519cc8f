"""SentencePiece: the host-side tokenizer and the in-graph layer, together.

``SentencePiece`` (host: the ``sentencepiece`` library, with character
offsets) makes training data and task features; ``SentencePieceTokenizer``
(in the graph: tf-text's op) runs in ``tf.data``, in Keras models and in a
string-in ``.tflite``. The text tests check that both give the same ids.
"""

import base64
import os
import shutil

import keras
import numpy as np
import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

from albert_keras.files import read_json
from albert_keras.text.normalizer_table import albert_normalizer_model
from albert_keras.text.normalizer_table import changed_codepoints
from albert_keras.text.preprocessing_layer import PreprocessingLayer
from albert_keras.text.spm_hf_form import sentencepiece_hf_form
from albert_keras.text.spm_model import check_albert_model
from albert_keras.text.spm_model import normalizer_spec
from albert_keras.text.spm_model import read_model_proto
from albert_keras.text.spm_model import special_ids_of
from albert_keras.text.spm_model import word_start_table
from albert_keras.text.spm_trainer import train_sentencepiece
from albert_keras.text.tokenizer import Tokenizer


@keras.saving.register_keras_serializable(package="albert_keras")
class SentencePieceTokenizer(PreprocessingLayer):
    """Strings to word-piece ids with ``tensorflow_text.FastSentencepieceTokenizer``.

    That op runs inside ``tf.data``, inside a Keras model and inside a
    TFLite graph (as a tf-text custom op), so the same tokenizer can ship in
    a string-in ``.tflite``. Its ids equal the ``sentencepiece`` library's
    for unigram models; BPE models are refused because the op gets them
    wrong silently (measured with tensorflow-text 2.21). The model travels inside the layer
    config, so a ``.keras`` file is self-contained.

    Args:
        proto: a ``.model`` path or the serialized model bytes.
        lowercase: lower-case the text before the model, as HF's
            ``AlbertTokenizer`` does for published ALBERT checkpoints; run by
            tf-text's ``FastBertNormalizer`` with a table built from HF's own
            normalizers. Default: no (our models normalize inside the
            SentencePiece model).
        keep_accents: keep accents (False strips them, as HF's
            ``AlbertTokenizer`` does for published checkpoints).

    Call:
        A string tensor of rank 0 or 1. Returns int32 ids: a 1-D tensor for
        a scalar, a ``tf.RaggedTensor`` ``[B, None]`` for a batch.

    Example:
    >>> tokenizer = SentencePieceTokenizer("spm.model")  # doctest: +SKIP
    >>> tokenizer(["hello world"])  # doctest: +SKIP
    """

    def __init__(self, proto, lowercase=False, keep_accents=True, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if isinstance(proto, str) and proto.startswith("base64:"):
            proto = base64.b64decode(proto[len("base64:"):])
        self.proto_bytes, model, source = read_model_proto(proto)
        check_albert_model(model, source)
        self.vocabulary_size = len(model.pieces)
        self.pieces = [p.piece for p in model.pieces]
        self.word_starts = word_start_table(model)
        self._tokenizer = tf_text.FastSentencepieceTokenizer(self.proto_bytes)
        self.lowercase, self.keep_accents = bool(lowercase), bool(keep_accents)
        self._normalizer = None
        if self.lowercase or not self.keep_accents:
            self._normalizer = tf_text.FastBertNormalizer(
                model_buffer=albert_normalizer_model(self.lowercase, self.keep_accents))
        self.built = True

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        if self._normalizer is not None:
            if inputs.shape.rank == 0:  # tf-text 2.21's normalizer fails on a scalar
                inputs = self._normalizer.normalize(inputs[None])[0]
            else:
                inputs = self._normalizer.normalize(inputs)
        return tf.cast(self._tokenizer.tokenize(inputs), tf.int32)

    def detokenize(self, ids):
        """Ids back to text (the inverse for unigram models)."""
        return self._tokenizer.detokenize(tf.cast(ids, tf.int32))

    def id_to_piece(self, index):
        return self.pieces[index]

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(tuple(inputs.shape) + (None,), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update(
            {"proto": "base64:" + base64.b64encode(self.proto_bytes).decode("ascii"),
             "lowercase": self.lowercase, "keep_accents": self.keep_accents}
        )
        return config


class SentencePiece(Tokenizer):
    """A SentencePiece ``.model`` on the host: ids, offsets and word starts.

    Args:
        proto: a ``.model`` path or the model bytes.
        lowercase, keep_accents: HF ``AlbertTokenizer``'s steps before the
            model, applied one character at a time (as in the graph). Read
            from a ``tokenizer_config.json`` beside the file (``do_lower_case``,
            ``keep_accents``); a checkpoint's ``spiece.model`` or
            ``30k-clean.model`` without one takes HF's defaults (lower-case,
            strip accents); other files (ours) take none.

    Example:
    >>> tokenizer = SentencePiece("spm.model")  # doctest: +SKIP
    >>> ids, starts, ends = tokenizer.encode_with_offsets("naïve café")  # doctest: +SKIP
    """

    kind = "sentencepiece"
    file_name = "spm.model"
    app_tokenizer = "SentencePieceTokenizerOptions"
    app_difference = ("MediaPipe runs the SentencePiece model alone, without HF's "
                      "lower-casing or accent stripping before it")
    keras_hub_tokenizer = "AlbertTokenizer"

    def __init__(self, proto, lowercase=None, keep_accents=None):
        self.proto_bytes, self._facts, self._source = read_model_proto(proto)
        self.processor = spm.SentencePieceProcessor(model_proto=self.proto_bytes)
        options = _checkpoint_options(self._source)
        if lowercase is not None:
            options["lowercase"] = bool(lowercase)
        if keep_accents is not None:
            options["keep_accents"] = bool(keep_accents)
        self.options = options
        self._map = None
        self._special_ids = None
        if options["lowercase"] or not options["keep_accents"]:
            self._map = changed_codepoints("albert", options["lowercase"],
                                           options["keep_accents"])

    @classmethod
    def train(cls, sentences, out_path, config, overwrite=False):
        return train_sentencepiece(sentences, out_path, config, overwrite=overwrite)

    @classmethod
    def can_read(cls, path):
        try:
            read_model_proto(path)
        except ValueError:
            return False
        return True

    @property
    def vocabulary_size(self):
        return self.processor.get_piece_size()

    @property
    def special_ids(self):
        # ALBERT's models put the special pieces first; DeBERTa's put [PAD]
        # [CLS] [SEP] [UNK] first and add [MASK] after the last piece. Found
        # once: DeBERTa's are looked up among 128,000 pieces (46 ms), and
        # every call that packs text asks (a copy: callers may change it).
        if self._special_ids is None:
            self._special_ids = special_ids_of(self._facts, self._source)
        return dict(self._special_ids)

    @property
    def model_type(self):
        """sentencepiece's model type number (1: unigram, 2: BPE)."""
        return self._facts.model_type

    @property
    def normalizer_spec(self):
        """The model's own normalization (``spm_model.normalizer_spec``)."""
        return normalizer_spec(self.proto_bytes)

    def check(self):
        """Refuses models the in-graph tokenizer would get wrong; returns self."""
        check_albert_model(self._facts, self._source)
        return self

    def word_starts(self):
        return word_start_table(self._facts)

    def id_to_piece(self, index):
        return self.processor.id_to_piece(int(index))

    def decode(self, ids):
        return self.processor.decode([int(i) for i in ids])

    def _prepare(self, text):
        """``(text, origin)``: the text as the model sees it, and for each of
        its characters the index of the character it came from."""
        if self._map is None:
            return text, None
        out, origin = [], []
        for index, ch in enumerate(text):
            mapped = self._map.get(ord(ch), ch)
            out.append(mapped)
            origin.extend([index] * len(mapped))
        return "".join(out), origin

    def encode(self, texts):
        if self._map is None:
            return self.processor.encode(list(texts))
        return self.processor.encode([self._prepare(t)[0] for t in texts])

    def encode_with_offsets(self, text):
        """``(ids, char_starts, char_ends)``: piece ``i`` covers
        ``text[char_starts[i]:char_ends[i]]`` with its leading whitespace
        left out (the ``▁`` of a piece stands for that whitespace)."""
        original = text
        text, origin = self._prepare(text)
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
        if origin is not None:  # back to the characters of the text as given
            origin = origin + [len(original)]
            starts = [origin[s] for s in starts]
            ends = [origin[e - 1] + 1 if e > 0 else 0 for e in ends]
        return ids, starts, ends

    def keras_layer(self):
        return SentencePieceTokenizer(self.proto_bytes, **self.options)

    def save(self, folder):
        path = os.path.join(folder, self.file_name)
        if os.path.isfile(self._source):
            shutil.copyfile(self._source, path)
        else:
            with open(path, "wb") as f:
                f.write(self.proto_bytes)
        return self.file_name

    def app_files(self):
        return {self.file_name: bytes(self.proto_bytes)}

    def text_steps(self):
        return {"lowercase": bool(self.options.get("lowercase")),
                "strip_accents": not self.options.get("keep_accents", True)}

    @classmethod
    def hf_files(cls, files, record):
        return sentencepiece_hf_form(files[record["file"]], record.get("options", {}))

    def to_keras_hub(self, tokenizer_class):
        if self.options.get("lowercase") or self.options.get("keep_accents") is False:
            raise ValueError("this tokenizer lower-cases or strips accents before its "
                             "SentencePiece model, which keras-hub's AlbertTokenizer "
                             "does not do: its ids would differ")
        return tokenizer_class(proto=bytes(self.proto_bytes))

    @classmethod
    def from_keras_hub(cls, hub_tokenizer, work):
        path = os.path.join(work, cls.file_name)
        with open(path, "wb") as f:
            f.write(bytes(hub_tokenizer.proto))
        return cls(path, lowercase=False, keep_accents=True)


# The names published ALBERT checkpoints give their SentencePiece model.
CHECKPOINT_NAMES = ("spiece.model", "30k-clean.model")


def _deberta_options(config, path):
    """HF ``DebertaV2Tokenizer``'s options: lower-casing (off by default), no
    accent stripping; its punctuation splitting has no in-graph equivalent."""
    if config.get("split_by_punct"):
        raise ValueError(f"{path}: split_by_punct=true (DebertaV2Tokenizer) is not "
                         "supported: the in-graph tokenizer cannot split punctuation "
                         "the same way")
    return {"lowercase": bool(config.get("do_lower_case", False)), "keep_accents": True}


def _checkpoint_options(source):
    """``{"lowercase", "keep_accents"}`` for the model file ``source``."""
    folder = os.path.dirname(os.path.abspath(source)) if isinstance(source, str) else ""
    config_path = os.path.join(folder, "tokenizer_config.json")
    if isinstance(source, str) and os.path.isfile(config_path):
        config = read_json(config_path)
        if isinstance(config, dict) and str(config.get("tokenizer_class", "")).startswith(
                "DebertaV2"):
            return _deberta_options(config, config_path)
        if isinstance(config, dict) and ("do_lower_case" in config or
                                         "keep_accents" in config):
            return {"lowercase": bool(config.get("do_lower_case", True)),
                    "keep_accents": bool(config.get("keep_accents", False))}
    if isinstance(source, str) and os.path.basename(source) in CHECKPOINT_NAMES:
        return {"lowercase": True, "keep_accents": False}  # HF AlbertTokenizer's defaults
    return {"lowercase": False, "keep_accents": True}
