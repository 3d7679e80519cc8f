"""HF folders at real checkpoints' shapes, and the labelled text the
real-text benchmarks run on (``real_text.py``, ``predict_rows.py``,
``web_speed.py``).

A folder has random weights (no hub is reachable here) and a vocabulary
trained on the corpus, padded to the size of the family's published
checkpoints, so the word table, its gradient, its optimizer slots and the
tokenizer's load are a real model's. The text is the State of the Union
corpus labelled by century: whole paragraphs (``long``) and their sentences
(``short``, lengths like review snippets').

    >>> folder = model_folder(work, corpus(work)["texts"], "minilm_l6")  # doctest: +SKIP
"""

import csv
import os
import statistics
import subprocess

# The shapes users fine-tune (HF config fields), and the vocabulary sizes of
# their checkpoints: 30,522 pieces for bert-base-uncased and MiniLM, 128,100
# rows for DeBERTa-v3 (128,000 SentencePiece pieces, [MASK], 99 spare rows).
BERT_VOCAB = 30522
DEBERTA_VOCAB = 128100
MODERNBERT_VOCAB = 50368  # ModernBERT's and Ettin's word table (50,280 pieces and specials, padded)
DEBERTA_V3 = dict(relative_attention=True, max_relative_positions=-1, position_buckets=256,
                  norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
                  position_biased_input=False, type_vocab_size=0, layer_norm_eps=1e-7,
                  hidden_act="gelu", max_position_embeddings=512)
SHAPES = {  # BERT's
    "minilm_l6": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                      intermediate_size=1536, max_position_embeddings=512),
    "bert_base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, max_position_embeddings=512),
}
DEBERTA_SHAPES = {
    "deberta_v3_xsmall": dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=6,
                              intermediate_size=1536, **DEBERTA_V3),
    "deberta_v3_base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                            intermediate_size=3072, **DEBERTA_V3),
}

# Ettin's encoders as their config.json files give them: ModernBERT's
# layout (a global layer every 3rd, windows of 128, GeGLU, no biases, mean
# pooling) with one rotary base for both layer kinds.
ETTIN = dict(local_attention=128, global_attn_every_n_layers=3, max_position_embeddings=7999,
             classifier_pooling="mean", rope_parameters={
                 kind: {"rope_type": "default", "rope_theta": 160000.0}
                 for kind in ("full_attention", "sliding_attention")})
MODERNBERT_SHAPES = {
    "ettin_encoder_17m": dict(hidden_size=256, num_hidden_layers=7, num_attention_heads=4,
                              intermediate_size=384, **ETTIN),
    "ettin_encoder_32m": dict(hidden_size=384, num_hidden_layers=10, num_attention_heads=6,
                              intermediate_size=576, **ETTIN),
}
ALL_SHAPES = {**SHAPES, **DEBERTA_SHAPES, **MODERNBERT_SHAPES}


# The uniform short case, review-like: sentences of 14 to 40 words, none over
# 68 pieces with [CLS] and [SEP]; with a 30,522-piece WordPiece trained on
# the corpus, mean 28 pieces, 95th percentile 43, longest 68 (movie-review
# snippets with MiniLM's: 27, 47, 67).
UNIFORM_WORDS = (14, 40)
UNIFORM_MAX_PIECES = 68


def family_of(shape):
    """``"bert"``, ``"deberta"`` or ``"modernbert"``: the family of a shape's name."""
    if shape in MODERNBERT_SHAPES:
        return "modernbert"
    return "bert" if shape in SHAPES else "deberta"


def default_vocab_size(shape):
    """The word table's rows in the family's published checkpoints."""
    return {"bert": BERT_VOCAB, "deberta": DEBERTA_VOCAB,
            "modernbert": MODERNBERT_VOCAB}[family_of(shape)]


def corpus(work):
    """The sotu paragraphs labelled by century, and their sentences."""
    out = os.path.join(work, "sotu")
    cli("data", "sotu-task", "--out", out, "--labeling", "century")
    from albert_keras.data.sentence_split import split_sentences

    with open(os.path.join(out, "train.csv"), encoding="utf-8", newline="") as f:
        paragraphs = [(r["text"], r["label"]) for r in csv.DictReader(f)]
    sentences = [(s, label) for text, label in paragraphs for s in split_sentences(text)
                 if len(s.split()) >= 3]
    uniform = [(s, label) for s, label in sentences
               if UNIFORM_WORDS[0] <= len(s.split()) <= UNIFORM_WORDS[1]]
    return {"long": paragraphs, "short": sentences, "uniform": uniform,
            "texts": [t for t, _ in paragraphs]}


def model_folder(work, texts, shape, vocab_size=None):
    """An HF folder of ``shape`` with random weights and a vocabulary trained
    on ``texts``, padded to ``vocab_size`` (default: its family's)."""
    import transformers

    vocab_size = vocab_size or default_vocab_size(shape)
    folder = os.path.join(work, family_of(shape))
    os.makedirs(folder)
    if family_of(shape) == "bert":
        size = _wordpiece_vocabulary(folder, texts, vocab_size)
        config = transformers.BertConfig(vocab_size=size, **SHAPES[shape])
        transformers.BertForPreTraining(config).save_pretrained(folder)
    elif family_of(shape) == "modernbert":
        ids = _byte_bpe_tokenizer(folder, texts)
        config = transformers.ModernBertConfig(vocab_size=vocab_size, **ids,
                                               **MODERNBERT_SHAPES[shape])
        transformers.ModernBertForMaskedLM(config).save_pretrained(folder)
    else:
        _deberta_tokenizer(folder, texts, vocab_size)
        config = transformers.DebertaV2Config(vocab_size=vocab_size, pad_token_id=0,
                                              **DEBERTA_SHAPES[shape])
        transformers.DebertaV2ForMaskedLM(config).save_pretrained(folder)
    return folder


def _wordpiece_vocabulary(folder, texts, vocab_size):
    """BERT's tokenizer files: WordPiece trained on ``texts``, padded to
    ``vocab_size`` pieces. Returns the size."""
    import transformers
    from tokenizers import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(texts, vocab_size=30522,
                                special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    trainer.save_model(folder)
    size = _pad_vocabulary(os.path.join(folder, "vocab.txt"), vocab_size)
    transformers.BertTokenizerFast(os.path.join(folder, "vocab.txt"),
                                   do_lower_case=True).save_pretrained(folder)
    return size


def _byte_bpe_tokenizer(folder, texts):
    """ModernBERT's tokenizer files: our byte-level BPE trainer (what
    ``pretrain --preset modernbert_*`` trains) on ``texts``, up to
    ModernBERT's 50,280 pieces (a corpus this small gives fewer), cased;
    with transformers' ``tokenizer_config.json`` beside it. The word table
    keeps ModernBERT's rows whatever the tokenizer's size, as the published
    checkpoints pad theirs. Returns the special ids as ``ModernBertConfig``
    names them."""
    import transformers

    from albert_keras.text.bpe_trainer import train_byte_bpe
    from albert_keras.text.spm_trainer import TokenizerConfig

    path = train_byte_bpe(texts, os.path.join(folder, "tokenizer.json"),
                          TokenizerConfig(vocab_size=50280, lowercase=False))
    hf = transformers.PreTrainedTokenizerFast(
        tokenizer_file=path, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]",
        pad_token="[PAD]", mask_token="[MASK]")
    hf.save_pretrained(folder)
    return dict(pad_token_id=hf.pad_token_id, cls_token_id=hf.cls_token_id,
                sep_token_id=hf.sep_token_id, bos_token_id=hf.cls_token_id,
                eos_token_id=hf.sep_token_id)


def _deberta_tokenizer(folder, texts, rows):
    """DeBERTa-v3's tokenizer files: a unigram SentencePiece model trained on
    ``texts`` with its special pieces ([PAD] [CLS] [SEP] [UNK] at 0-3), padded
    to 128,000 pieces as DeBERTa-v3's ``spm.model`` has, [MASK] after them
    (``rows`` is the word table's size, spare rows included); ``spm.model``
    for us, ``tokenizer.json`` for transformers (built from the pieces and
    scores: its own reader of ``spm.model`` needs a newer protobuf than
    TensorFlow allows)."""
    import sentencepiece as spm
    import transformers

    text_file = os.path.join(folder, "corpus.txt")
    with open(text_file, "w", encoding="utf-8") as f:
        f.write("\n".join(texts))
    spm.SentencePieceTrainer.train(
        input=text_file, model_prefix=os.path.join(folder, "spm"), vocab_size=16000,
        hard_vocab_limit=False, model_type="unigram", pad_id=0, pad_piece="[PAD]", bos_id=1,
        bos_piece="[CLS]", eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]",
        minloglevel=2)
    os.remove(text_file)
    path = os.path.join(folder, "spm.model")
    _pad_sentencepiece(path, min(rows - 1, 128000))
    processor = spm.SentencePieceProcessor(model_file=path)
    vocab = [(processor.id_to_piece(i), processor.get_score(i))
             for i in range(processor.get_piece_size())] + [("[MASK]", 0.0)]
    transformers.DebertaV2Tokenizer(
        vocab=vocab, unk_id=3, do_lower_case=False, split_by_punct=False, bos_token="[CLS]",
        eos_token="[SEP]", cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
        unk_token="[UNK]", mask_token="[MASK]").save_pretrained(folder)


def _pad_sentencepiece(path, size):
    """Appends ``[unused0]``... pieces (NORMAL, scored far below any trained
    piece, so no text is cut into them) to the SentencePiece model at
    ``path`` until it has ``size`` pieces. Not of type UNUSED: TFLite's
    SentencePiece tokenizer refuses that type. A repeated protobuf field may
    be continued at the end of the message, so the new pieces are appended
    as bytes (no protobuf version needed)."""
    import struct

    import sentencepiece as spm

    have = spm.SentencePieceProcessor(model_file=path).get_piece_size()

    def varint(n):
        out = b""
        while n > 0x7F:
            out, n = out + bytes([(n & 0x7F) | 0x80]), n >> 7
        return out + bytes([n])

    def piece(text):  # SentencePiece{piece = 1, score = 2}; type NORMAL when absent
        body = text.encode("utf-8")
        body = b"\x0a" + varint(len(body)) + body + b"\x15" + struct.pack("<f", -1e4)
        return b"\x0a" + varint(len(body)) + body

    with open(path, "ab") as f:
        f.write(b"".join(piece(f"[unused{i}]") for i in range(size - have)))


def _pad_vocabulary(path, size):
    """Pads a vocab.txt to ``size`` lines with pieces no text produces
    (``[unused0]``..., as BERT's own vocabulary has), so the word table, its
    gradient and its optimizer slots have a real checkpoint's size; a corpus
    this small yields only a few thousand pieces. Returns the new size."""
    with open(path, encoding="utf-8") as f:
        pieces = f.read().splitlines()
    pieces += [f"[unused{i}]" for i in range(size - len(pieces))]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    return len(pieces)


def task_files(work, text, case, rows, predict_rows, folder):
    """train, eval and predict CSVs: disjoint seeded samples of the case's
    rows (``text``: what ``corpus`` returns); the ``uniform`` case keeps
    the sentences of at most ``UNIFORM_MAX_PIECES`` pieces by the folder's
    tokenizer."""
    import random

    pool = list(text[case])
    if case == "uniform":
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        counts = tokenizer([t for t, _ in pool])["input_ids"]
        pool = [row for row, ids in zip(pool, counts) if len(ids) <= UNIFORM_MAX_PIECES]
    random.Random(0).shuffle(pool)
    parts = {"train": pool[:rows], "eval": pool[rows:rows + 500],
             "predict": pool[rows + 500:rows + 500 + predict_rows]}
    files = {}
    for name, part in parts.items():
        files[name] = os.path.join(work, f"{case}_{name}.csv")
        write_rows(files[name], part)
    files["pieces"] = _lengths(folder, files["train"])
    return files


def write_rows(path, rows):
    """A ``text,label`` CSV of ``(text, label)`` rows."""
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        writer.writerows(rows)


def _lengths(folder, path):
    """Mean, p95 and longest length in pieces (specials included) of a file's texts."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    with open(path, encoding="utf-8", newline="") as f:
        lengths = sorted(len(tokenizer(r["text"])["input_ids"]) for r in csv.DictReader(f))
    return {"mean": round(statistics.mean(lengths), 1),
            "p95": lengths[int(0.95 * (len(lengths) - 1))], "max": lengths[-1]}


def cli(*argv):
    done = subprocess.run(["albert-keras", *argv], capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"albert-keras {' '.join(argv[:2])} failed: "
                           f"{(done.stderr.strip().splitlines() or ['?'])[-1]}")
