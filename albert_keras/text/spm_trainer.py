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

    vocab_size: int = option(30000, "pieces in the vocabulary", valid="[8, inf)")
    lowercase: bool = option(True, "case-fold the text (ALBERT v2 is uncased)")
    character_coverage: float = option(0.99995, "share of characters covered (0.9995 "
                                                "suits Chinese/Japanese/Korean)", valid="(0, 1]")
    input_sentence_size: int = option(10_000_000, "sample at most this many sentences", valid="[1, inf)")
    threads: int = option(None, "training threads (default: all cores)", valid="[1, inf)")
    seed: int = option(12345, "SentencePiece's sampling seed")


class EmptyInputError(ValueError):
    """The sentences to train on were all empty."""


def train_sentencepiece(  # noqa: PLR0913 (to split into named steps: issue 59)
    sentences,
    out_path,
    vocab_size=30000,
    lowercase=True,
    character_coverage=0.99995,
    input_sentence_size=10_000_000,
    num_threads=None,
    seed=12345,
    overwrite=False,
):
    """Trains a unigram SentencePiece model as the original ALBERT did.

    Ids: ``<pad>`` 0, ``<unk>`` 1, ``[CLS]`` 2, ``[SEP]`` 3, ``[MASK]`` 4
    (the last three as control symbols), no BOS/EOS.

    Args:
        sentences: an iterable of strings (sentences or paragraphs).
        out_path: where to write the ``.model`` file (a ``.vocab`` is written
            beside it).
        vocab_size: the target size. A corpus too small for it gets a
            smaller vocabulary rather than an error; read the real size from
            the model.
        lowercase: case-fold (ALBERT v2 is uncased).
        character_coverage: 0.99995 for alphabetic scripts; 0.9995 suits
            Chinese/Japanese/Korean.
        input_sentence_size: at most this many sentences are sampled
            (shuffled) from a large input.
        num_threads: defaults to all cores.
        seed: SentencePiece's sampling seed.
        overwrite: replace an existing model.

    Returns:
        The path of the written model.

    Example:
    >>> train_sentencepiece(["a sentence", "another"], "/tmp/spm.model",
    ...                     vocab_size=40)  # doctest: +SKIP
    """
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

    spm.set_random_generator_seed(seed)
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
                vocab_size=vocab_size,
                hard_vocab_limit=False,
                pad_id=0,
                unk_id=1,
                bos_id=-1,
                eos_id=-1,
                control_symbols=["[CLS]", "[SEP]", "[MASK]"],
                normalization_rule_name="nmt_nfkc_cf" if lowercase else "nmt_nfkc",
                character_coverage=character_coverage,
                input_sentence_size=input_sentence_size,
                shuffle_input_sentence=True,
                num_threads=num_threads or os.cpu_count() or 1,
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
