"""WordPiece (BERT, ELECTRA): the host-side tokenizer and the in-graph layer.

On the host, HF's ``tokenizers`` library (the tokenizer HF transformers
uses) gives ids and character offsets. In the graph, tf-text's
``FastBertTokenizer`` runs in ``tf.data``, in Keras models and in a
string-in ``.tflite`` (its two ops have TFLite kernels), with a normalizer
table built from HF's own normalizer (``normalizer_table``), so both sides
give HF's ids. They differ only for a few hundred rare characters whose
punctuation or CJK class changed between the Unicode versions of the two
libraries (historic-script marks, new CJK extensions; the tests list the
classes), and for words over 100 UTF-8 bytes but at most 100 characters,
which HF splits and tf-text maps to ``[UNK]`` (its limit is in bytes).

A checkpoint's options come from its ``tokenizer_config.json`` or HF
``tokenizer.json``; with a bare ``vocab.txt`` the vocabulary decides: it
is lower-cased when no piece holds an upper-case letter.
"""

import json
import os

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from albert_keras.files import read_json
from albert_keras.text.hf_host import HFHostSide
from albert_keras.text.normalizer_table import bert_normalizer_model
from albert_keras.text.preprocessing_layer import PreprocessingLayer
from albert_keras.text.tokenizer import Tokenizer

SUFFIX = "##"
# HF's WordPiece limit is 100 characters per word; tf-text's is in bytes.
MAX_WORD = 100
SPECIAL_TOKENS = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                  "mask": "[MASK]"}
CONFIG_FILE = "tokenizer_config.json"
HF_TOKENIZER_FILE = "tokenizer.json"


@keras.saving.register_keras_serializable(package="albert_keras")
class WordPieceTokenizer(PreprocessingLayer):
    """Strings to WordPiece ids with ``tensorflow_text.FastBertTokenizer``.

    Args:
        vocabulary: the pieces, in id order (a list, or a ``vocab.txt`` path).
        lowercase: lower-case the text and strip accents, as uncased BERT does.
        strip_accents: drop accents (None: as ``lowercase``).
        unknown_token: the piece for words the vocabulary cannot spell.
        max_word: longer words become ``unknown_token`` (HF counts
            characters, the tf-text op bytes: equal for ASCII).

    Call:
        A string tensor of rank 0 or 1. Returns int32 ids: a 1-D tensor for
        a scalar, a ``tf.RaggedTensor`` ``[B, None]`` for a batch.

    Example:
    >>> tokenizer = WordPieceTokenizer(["[UNK]", "hello", "world"], lowercase=True)
    >>> tokenizer(["Hello world"]).to_list()  # doctest: +SKIP
    [[1, 2]]
    """

    def __init__(self, vocabulary, lowercase=True, strip_accents=None, unknown_token="[UNK]",
                 max_word=MAX_WORD, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        if isinstance(vocabulary, str):
            vocabulary = read_vocabulary(vocabulary)
        self.vocabulary = list(vocabulary)
        self.lowercase = bool(lowercase)
        self.strip_accents = strip_accents
        self.unknown_token = unknown_token
        self.max_word = int(max_word)
        self.vocabulary_size = len(self.vocabulary)
        self._tokenizer = tf_text.FastBertTokenizer(
            vocab=self.vocabulary,
            suffix_indicator=SUFFIX,
            max_bytes_per_word=self.max_word,
            token_out_type=tf.int32,
            unknown_token=unknown_token,
            fast_bert_normalizer_model_buffer=bert_normalizer_model(
                self.lowercase, strip_accents),
        )
        self.built = True

    def call(self, inputs):
        inputs = tf.convert_to_tensor(inputs, dtype=tf.string)
        if inputs.shape.rank == 0:
            # tf-text 2.21's normalizer fails on a scalar (it reads .values of
            # a dense tensor), so a scalar goes through as a batch of one.
            return tf.cast(self._tokenizer.tokenize(inputs[None]), tf.int32)[0]
        return tf.cast(self._tokenizer.tokenize(inputs), tf.int32)

    def id_to_piece(self, index):
        return self.vocabulary[index]

    def compute_output_spec(self, inputs):
        return keras.KerasTensor(tuple(inputs.shape) + (None,), dtype="int32")

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary": self.vocabulary,
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
            "unknown_token": self.unknown_token,
            "max_word": self.max_word,
        })
        return config


# -- reading a checkpoint's tokenizer files ----------------------------------------------


def read_vocabulary(path):
    """The pieces of a ``vocab.txt`` (one per line), checked."""
    try:
        with open(path, encoding="utf-8") as f:
            pieces = [line.rstrip("\n").rstrip("\r") for line in f]
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    while pieces and pieces[-1] == "":
        pieces.pop()
    if not pieces:
        raise ValueError(f"{path}: empty vocabulary")
    seen = {}
    for number, piece in enumerate(pieces, 1):
        if piece in seen:
            raise ValueError(f"{path}:{number}: piece {piece!r} repeats line {seen[piece]}")
        seen[piece] = number
    return pieces


def _read_json_object(path):
    """A JSON object from ``path``, or a one-line ValueError naming it."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _read_hf_tokenizer_json(path):
    """``(pieces, options)`` of an HF ``tokenizer.json`` holding a WordPiece model."""
    spec = _read_json_object(path)
    model = spec.get("model")
    if not isinstance(model, dict):
        model = {}
    if model.get("type") != "WordPiece":
        raise ValueError(f"{path}: a {model.get('type') or 'unknown'} tokenizer, not WordPiece")
    if model.get("continuing_subword_prefix", SUFFIX) != SUFFIX:
        raise ValueError(f"{path}: sub-word prefix {model['continuing_subword_prefix']!r} "
                         f"(only {SUFFIX!r} is supported)")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise ValueError(f"{path}: model.vocab must be a non-empty object of piece -> id")
    pieces = [None] * len(vocab)
    for piece, index in vocab.items():
        if not isinstance(index, int) or not 0 <= index < len(pieces) or \
                pieces[index] is not None:
            raise ValueError(f"{path}: vocabulary ids are not 0..{len(vocab) - 1} once each")
        pieces[index] = piece
    unknown = model.get("unk_token", "[UNK]")
    max_word = model.get("max_input_chars_per_word", MAX_WORD)
    if not isinstance(unknown, str) or not isinstance(max_word, int) or max_word < 1:
        raise ValueError(f"{path}: model.unk_token must be text and "
                         "model.max_input_chars_per_word a positive integer")
    options = {"unknown_token": unknown, "max_word": max_word}
    normalizer = spec.get("normalizer")
    if isinstance(normalizer, dict) and normalizer.get("type") == "BertNormalizer":
        options["lowercase"] = normalizer.get("lowercase", True)
        options["strip_accents"] = normalizer.get("strip_accents")
        if not isinstance(options["lowercase"], bool) or \
                options["strip_accents"] not in (None, True, False):
            raise ValueError(f"{path}: normalizer.lowercase and strip_accents must be "
                             "true or false")
        _check_chinese_chars(normalizer.get("handle_chinese_chars", True), path)
    return pieces, options


def _check_chinese_chars(split, path):
    if split is False:
        raise ValueError(f"{path}: tokenize_chinese_chars=false is not supported (the "
                         "in-graph tokenizer always splits Chinese characters)")


def _read_config(folder):
    """Options from an HF ``tokenizer_config.json`` beside the vocabulary."""
    path = os.path.join(folder, CONFIG_FILE)
    if not os.path.isfile(path):
        return {}, {}
    config = _read_json_object(path)
    options = {}
    _check_chinese_chars(config.get("tokenize_chinese_chars", True), path)
    if "do_lower_case" in config:
        options["lowercase"] = config["do_lower_case"]
    if "strip_accents" in config:
        options["strip_accents"] = config["strip_accents"]
    if options.get("lowercase", True) not in (True, False) or \
            options.get("strip_accents") not in (None, True, False):
        raise ValueError(f"{path}: do_lower_case and strip_accents must be true or false")
    tokens = {}
    for name in SPECIAL_TOKENS:
        token = config.get(f"{name}_token")
        if isinstance(token, dict):  # older files store AddedToken dicts
            token = token.get("content")
        if token:
            tokens[name] = token
    if "unk" in tokens:
        options["unknown_token"] = tokens["unk"]
    return options, tokens


def _looks_cased(pieces):
    return any(ch.isupper() for piece in pieces
               if not (piece.startswith("[") and piece.endswith("]")) for ch in piece)


# -- the tokenizer kind ------------------------------------------------------------------


class WordPiece(HFHostSide, Tokenizer):
    """A WordPiece vocabulary on the host: ids, offsets and word starts.

    Args:
        path: a ``vocab.txt`` or an HF ``tokenizer.json``; a
            ``tokenizer_config.json`` beside it gives the options.
        **options: ``lowercase``, ``strip_accents``, ``unknown_token``,
            ``max_word`` (they override the files).

    Example:
    >>> tokenizer = WordPiece("bert-base-uncased/vocab.txt")  # doctest: +SKIP
    >>> tokenizer.encode(["Hello, world!"])  # doctest: +SKIP
    [[7592, 1010, 2088, 999]]
    """

    kind = "wordpiece"
    file_name = "vocab.txt"
    app_tokenizer = "BertTokenizerOptions"
    # measured with MediaPipe 1.2.2 against HF's tokenizers
    app_difference = ("MediaPipe's WordPiece tokenizer lower-cases ASCII only and strips no "
                      "accents, so texts with accents or non-ASCII capitals get other ids")
    keras_hub_tokenizer = "BertTokenizer"

    def __init__(self, path, **options):
        from tokenizers import Tokenizer as HFTokenizer
        from tokenizers import decoders
        from tokenizers import models
        from tokenizers import normalizers
        from tokenizers import pre_tokenizers

        self._source = path
        folder = os.path.dirname(os.path.abspath(path))
        file_options, tokens = _read_config(folder)
        if path.endswith(".json"):
            pieces, json_options = _read_hf_tokenizer_json(path)
            file_options = {**json_options, **file_options}
        else:
            pieces = read_vocabulary(path)
        merged = {"unknown_token": "[UNK]", "strip_accents": None, "max_word": MAX_WORD}
        merged.update(file_options)
        merged.update({k: v for k, v in options.items() if v is not None})
        if "lowercase" not in merged:
            merged["lowercase"] = not _looks_cased(pieces)
        self.options = merged
        self.pieces = pieces
        index = {piece: i for i, piece in enumerate(pieces)}
        tokens = {**SPECIAL_TOKENS, **tokens, "unk": merged["unknown_token"]}
        missing = [token for token in tokens.values() if token not in index]
        if missing:
            raise ValueError(f"{path}: the vocabulary has no {', '.join(missing)}")
        self._special_ids = {name: index[token] for name, token in tokens.items()}
        self._index = index
        hf = HFTokenizer(models.WordPiece(index, unk_token=merged["unknown_token"],
                                          max_input_chars_per_word=merged["max_word"]))
        hf.normalizer = normalizers.BertNormalizer(
            clean_text=True, handle_chinese_chars=True,
            strip_accents=merged["strip_accents"], lowercase=merged["lowercase"])
        hf.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        hf.decoder = decoders.WordPiece(prefix=SUFFIX)
        self._hf = hf

    @classmethod
    def can_read(cls, path):
        name = os.path.basename(path)
        if name.endswith(".json"):
            try:
                _read_hf_tokenizer_json(path)
            except (ValueError, OSError, AttributeError, TypeError):
                return False
            return True
        if not name.endswith(".txt"):
            return False
        try:
            with open(path, encoding="utf-8") as f:
                head = {f.readline().strip() for _ in range(2000)}
        except (OSError, UnicodeDecodeError):
            return False
        return "[UNK]" in head or "[CLS]" in head

    @property
    def vocabulary_size(self):
        return len(self.pieces)

    @property
    def special_ids(self):
        return dict(self._special_ids)

    def word_starts(self):
        import numpy as np

        return np.array([not p.startswith(SUFFIX) for p in self.pieces], dtype=bool)

    def id_to_piece(self, index):
        return self.pieces[int(index)]

    def keras_layer(self):
        return WordPieceTokenizer(self.pieces, lowercase=self.options["lowercase"],
                                  strip_accents=self.options["strip_accents"],
                                  unknown_token=self.options["unknown_token"],
                                  max_word=self.options["max_word"])

    def save(self, folder):
        """Writes ``vocab.txt`` and an HF ``tokenizer_config.json`` (options and
        special tokens), so the folder also loads in HF transformers."""
        from albert_keras.files import atomic_write
        from albert_keras.files import write_json

        with atomic_write(os.path.join(folder, self.file_name), "w") as f:
            f.write("".join(piece + "\n" for piece in self.pieces))
        tokens = {f"{name}_token": self.pieces[i] for name, i in self._special_ids.items()}
        write_json(os.path.join(folder, CONFIG_FILE), {
            "tokenizer_class": "BertTokenizer",
            "do_lower_case": self.options["lowercase"],
            "strip_accents": self.options["strip_accents"],
            "tokenize_chinese_chars": True,
            **tokens,
        })
        return self.file_name

    def app_files(self):
        return {"vocab.txt": "".join(p + "\n" for p in self.pieces).encode("utf-8")}

    def _strips_accents(self):
        # HF's rule: accents are stripped with lower-casing unless told otherwise
        strip = self.options.get("strip_accents")
        return bool(self.options["lowercase"] if strip is None else strip)

    def text_steps(self):
        return {"lowercase": bool(self.options["lowercase"]),
                "strip_accents": self._strips_accents()}

    @classmethod
    def hf_files(cls, files, record):
        # save() writes transformers' own form: the vocabulary and its config
        return {cls.file_name: files[cls.file_name]}, json.loads(files[CONFIG_FILE])

    def to_keras_hub(self, tokenizer_class):
        return tokenizer_class(vocabulary=list(self.pieces),
                               lowercase=bool(self.options["lowercase"]),
                               strip_accents=self._strips_accents())

    @classmethod
    def from_keras_hub(cls, hub_tokenizer, work):
        path = os.path.join(work, cls.file_name)
        with open(path, "w", encoding="utf-8") as f:
            f.write("".join(p + "\n" for p in hub_tokenizer.get_vocabulary()))
        return cls(path, lowercase=bool(hub_tokenizer.lowercase),
                   strip_accents=bool(hub_tokenizer.strip_accents))
