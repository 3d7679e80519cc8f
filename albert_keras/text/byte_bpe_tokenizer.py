"""ByteLevelBPE: the byte-level BPE of an HF ``tokenizer.json`` (ModernBERT's
and Ettin's, 50,368 pieces; RoBERTa's and GPT-2's kind).

The host side is HF's ``tokenizers`` library on the file itself, so its ids
are the file's by construction; what this kind adds is what the package
asks of every kind: the special ids by their texts (``[CLS] [SEP] [PAD]
[MASK] [UNK]``, or RoBERTa's ``<s> </s> <pad> <mask> <unk>``), which pieces
begin a word (byte-level ``Ġ``), character offsets, and the file carried in
a ``.keras`` model. The file's own post-processor, padding and truncation
are not applied: our packer adds ``[CLS]``/``[SEP]`` and cuts, as for every
kind.

There is no in-graph form: neither TensorFlow Text's ops (which TFLite
runs) nor MediaPipe's tokenizers have byte-level BPE, so a string-in export
is refused for this kind (``in_graph`` is False) and apps tokenize
themselves (tokenizers.js in the browser reads this same file).
"""

import json
import os

import numpy as np

from albert_keras.text.bpe_trainer import train_byte_bpe
from albert_keras.text.hf_host import HFHostSide
from albert_keras.text.tokenizer import Tokenizer

# the special tokens' texts, BERT's convention first (ModernBERT's), then RoBERTa's
SPECIAL_TEXTS = {"cls": ("[CLS]", "<s>"), "sep": ("[SEP]", "</s>"), "pad": ("[PAD]", "<pad>"),
                 "mask": ("[MASK]", "<mask>"), "unk": ("[UNK]", "<unk>")}
WORD_MARK = "\u0120"  # "Ġ": a byte-level piece that follows a space


def _spec(path):
    """``(text, JSON)`` of the file, refused unless it holds a byte-level BPE model."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        spec = json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{path}: cannot read tokenizer.json: {' '.join(str(e).split())}") \
            from None
    model = spec.get("model") if isinstance(spec, dict) else None
    if not isinstance(model, dict) or model.get("type") != "BPE":
        kind = model.get("type") if isinstance(model, dict) else None
        raise ValueError(f"{path}: a {kind or 'unknown'} tokenizer, not BPE")
    if "ByteLevel" not in json.dumps(spec.get("pre_tokenizer")):
        raise ValueError(f"{path}: a BPE tokenizer without byte-level pre-tokenization "
                         "(only byte-level BPE is supported)")
    return text, spec


class ByteLevelBPE(HFHostSide, Tokenizer):
    """A byte-level BPE tokenizer from an HF ``tokenizer.json``.

    Args:
        path: the ``tokenizer.json``.
        **options: none yet (the file says everything); kept for the
            registry's signature.

    Example:
    >>> tokenizer = ByteLevelBPE("ModernBERT-base/tokenizer.json")  # doctest: +SKIP
    >>> tokenizer.encode(["Hello world"])  # doctest: +SKIP
    [[12092, 1533]]
    """

    kind = "bpe"
    file_name = "tokenizer.json"
    in_graph = False

    def __init__(self, path, **options):
        from tokenizers import Tokenizer as HFTokenizer

        if options:
            raise ValueError(f"{path}: a byte-level BPE tokenizer takes no options, got "
                             f"{sorted(options)[0]!r}")
        self._source = path
        self._text, _ = _spec(path)
        try:
            self._hf = HFTokenizer.from_str(self._text)
        except Exception as e:  # noqa: BLE001  (the Rust library raises a bare Exception)
            raise ValueError(f"{path}: not a tokenizer HF's tokenizers library reads: "
                             f"{' '.join(str(e).split())}") from None
        self._hf.no_padding()
        self._hf.no_truncation()
        self.options = {}
        self._special_ids = self._find_specials()

    def _find_specials(self):
        found = {}
        for name, texts in SPECIAL_TEXTS.items():
            ids = [self._hf.token_to_id(text) for text in texts]
            ids = [i for i in ids if i is not None]
            if not ids:
                raise ValueError(f"{self._source}: no {' or '.join(texts)} token")
            found[name] = ids[0]
        return found

    @classmethod
    def train(cls, sentences, out_path, config, overwrite=False):
        return train_byte_bpe(sentences, out_path, config, overwrite=overwrite)

    @classmethod
    def can_read(cls, path):
        if not os.path.basename(path).endswith(".json"):
            return False
        try:
            _spec(path)
        except ValueError:
            return False
        return True

    @property
    def vocabulary_size(self):
        return self._hf.get_vocab_size(with_added_tokens=True)

    @property
    def special_ids(self):
        return dict(self._special_ids)

    def word_starts(self):
        specials = set(self._special_ids.values())
        return np.array([i in specials or (self._hf.id_to_token(i) or "").startswith(WORD_MARK)
                         for i in range(self.vocabulary_size)], dtype=bool)

    def keras_layer(self):
        raise ValueError(f"{self._source}: byte-level BPE has no in-graph form (neither "
                         "TensorFlow Text nor MediaPipe has it): tokenize in the app")

    @classmethod
    def hf_files(cls, files, record):
        """The ``tokenizer.json`` as it was read (transformers' own file,
        post-processor included) and a config naming its special tokens."""
        data = files[record["file"]]
        spec = json.loads(data)
        known = set(spec["model"]["vocab"]) | {t["content"] for t in spec.get("added_tokens") or ()}
        tokens = {f"{name}_token": next(t for t in texts if t in known)
                  for name, texts in SPECIAL_TEXTS.items() if any(t in known for t in texts)}
        return {cls.file_name: data}, {"tokenizer_class": "PreTrainedTokenizerFast", **tokens}

    def save(self, folder):
        """Writes the ``tokenizer.json`` as it was read."""
        from albert_keras.files import atomic_write

        with atomic_write(os.path.join(folder, self.file_name), "w") as f:
            f.write(self._text)
        return self.file_name
