"""Training a byte-level BPE tokenizer (ModernBERT's kind) from raw text.

HF's ``tokenizers`` trains it (BPE merges over bytes, as ModernBERT's and
RoBERTa's tokenizers were made); we set its pieces up as ModernBERT's file
has them: byte-level pre-tokenization without a prefix space, the special
tokens ``[UNK] [CLS] [SEP] [PAD] [MASK]`` and ``[CLS] a [SEP]`` packing, so
the file loads in transformers, tokenizers.js and our ``bpe`` kind alike.

Example:
>>> train_byte_bpe(["a sentence", "another"], "/tmp/tokenizer.json",
...                TokenizerConfig(vocab_size=300))  # doctest: +SKIP
'/tmp/tokenizer.json'
"""

import itertools
import os

from albert_keras.files import atomic_path
from albert_keras.files import check_output
from albert_keras.text.spm_trainer import EmptyInputError

SPECIAL_TOKENS = ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")  # ModernBERT's


def train_byte_bpe(sentences, out_path, config, overwrite=False):
    """Trains a byte-level BPE ``tokenizer.json`` of ``config.vocab_size``
    pieces (the 256 bytes and the special tokens included) on ``sentences``.

    Args:
        sentences: an iterable of strings.
        out_path: the ``.json`` file to write.
        config: a ``TokenizerConfig`` (``vocab_size``, ``lowercase``,
            ``input_sentence_size``; the others are SentencePiece's).
        overwrite: replace an existing file.

    Returns:
        The path of the written file.
    """
    from tokenizers import AddedToken
    from tokenizers import Tokenizer
    from tokenizers import decoders
    from tokenizers import models
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers
    from tokenizers import processors
    from tokenizers import trainers

    out_path = os.fspath(out_path)
    if not out_path.endswith(".json"):
        raise ValueError(f"{out_path}: a byte-level BPE tokenizer file must end in .json")
    check_output(out_path, overwrite=overwrite)
    texts = [s for s in itertools.islice((s for s in sentences if s and s.strip()),
                                         config.input_sentence_size)]
    if not texts:
        raise EmptyInputError("no text to train the tokenizer on: every sentence is empty")
    hf = Tokenizer(models.BPE())
    if config.lowercase:
        hf.normalizer = normalizers.Lowercase()
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    # the mask takes the space before it (``lstrip``), as in ModernBERT's
    # and RoBERTa's files: "New [MASK] Wales" is "Ġnew [MASK] Ġwal es" in
    # transformers' fill-mask, the word after it encoded as in plain text
    specials = [AddedToken(t, lstrip=t == "[MASK]", normalized=False, special=True)
                for t in SPECIAL_TOKENS]
    hf.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=config.vocab_size, special_tokens=specials, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[(t, hf.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    with atomic_path(out_path, suffix=".json") as tmp:
        hf.save(tmp)
    return out_path
