"""Training a unigram SentencePiece model with ALBERT's special tokens."""

import dataclasses
import os

import sentencepiece as spm

from albert_keras.files import atomic_path
from albert_keras.files import check_output
from albert_keras.options import option
from albert_keras.text.spm_model import check_albert_model
from albert_keras.text.spm_model import read_model_proto


@dataclasses.dataclass
class TokenizerConfig:
    """How ``albert-keras tokenizer train`` (and the pretraining pipeline) trains."""

    kind: str = option(None, "the tokenizer kind to train: sentencepiece (ALBERT's unigram) "
                             "or bpe (ModernBERT's byte-level BPE)",
                       choices=("sentencepiece", "bpe"), flag="--tokenizer-kind",
                       auto="the preset family's; sentencepiece for tokenizer train")
    vocab_size: int = option(30000, "pieces in the vocabulary", valid="[8, inf)")
    lowercase: bool = option(True, "case-fold the text (ALBERT v2 is uncased)")
    character_coverage: float = option(0.99995, "share of characters covered, SentencePiece "
                                                "only (0.9995 suits Chinese/Japanese/Korean)",
                                       valid="(0, 1]")
    input_sentence_size: int = option(10_000_000, "sample at most this many sentences", valid="[1, inf)")
    threads: int = option(None, "training threads (default: all cores)", valid="[1, inf)")
    seed: int = option(12345, "SentencePiece's sampling seed")


class EmptyInputError(ValueError):
    """The sentences to train on were all empty."""


def train_sentencepiece(sentences, out_path, config=None, overwrite=False, **fields):
    """Trains a unigram SentencePiece model as the original ALBERT did.

    Ids: ``<pad>`` 0, ``<unk>`` 1, ``[CLS]`` 2, ``[SEP]`` 3, ``[MASK]`` 4
    (the last three as control symbols), no BOS/EOS. Case folding
    (``lowercase``) picks SentencePiece's ``nmt_nfkc_cf`` rule. A corpus too
    small for ``vocab_size`` gets a smaller vocabulary rather than an error;
    read the real size from the model.

    Args:
        sentences: an iterable of strings (sentences or paragraphs).
        out_path: where to write the ``.model`` file (a ``.vocab`` is written
            beside it).
        config: a ``TokenizerConfig`` (size, case folding, character
            coverage, sampled sentences, threads, seed).
        overwrite: replace an existing model.
        **fields: ``TokenizerConfig`` fields, as a shorthand for ``config``.

    Returns:
        The path of the written model.

    Example:
    >>> train_sentencepiece(["a sentence", "another"], "/tmp/spm.model",
    ...                     vocab_size=40)  # doctest: +SKIP
    """
    c = dataclasses.replace(config or TokenizerConfig(), **fields)
    out_path = os.fspath(out_path)
    if not out_path.endswith(".model"):
        raise ValueError(f"{out_path}: the tokenizer file must end in .model")
    check_output(out_path, overwrite=overwrite)
    count = [0]
    sentences = iter(sentences)
    # SentencePiece meets an empty input with an internal assertion message:
    # look at the first sentence before starting it
    first = next((s for s in sentences if s and s.strip()), None)
    if first is None:
        raise EmptyInputError("no text to train the tokenizer on: every sentence is empty")

    def counted():
        count[0] += 1
        yield first
        for s in sentences:
            if s and s.strip():
                count[0] += 1
                yield s

    spm.set_random_generator_seed(c.seed)
    vocab_path = out_path[: -len(".model")] + ".vocab"
    with atomic_path(out_path, suffix=".model") as tmp_model, \
            atomic_path(vocab_path, suffix=".vocab") as tmp_vocab:
        # SentencePiece writes PREFIX.model and PREFIX.vocab itself.
        prefix = tmp_model[: -len(".model")]
        try:
            spm.SentencePieceTrainer.train(
                sentence_iterator=counted(),
                model_prefix=prefix,
                model_type="unigram",
                vocab_size=c.vocab_size,
                hard_vocab_limit=False,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                normalization_rule_name="nmt_nfkc_cf" if c.lowercase else "nmt_nfkc",
                character_coverage=c.character_coverage,
                input_sentence_size=c.input_sentence_size,
                shuffle_input_sentence=True,
                num_threads=c.threads or os.cpu_count() or 1,
                minloglevel=2,
            )
        except RuntimeError as e:
            raise ValueError(
                f"SentencePiece training failed: {str(e).splitlines()[0]}") from None
        finally:
            if os.path.exists(prefix + ".vocab"):
                os.replace(prefix + ".vocab", tmp_vocab)
        if count[0] == 0:
            raise ValueError("no text to train the tokenizer on")
        _, proto, _ = read_model_proto(tmp_model)
        check_albert_model(proto, out_path)
    return out_path
