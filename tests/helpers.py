"""Shared test helpers: one checker for every layer and model (config,
serialization, shapes, variable sequence length, mixed precision), small
corpora and configs, and random HF transformers models to compare against."""

import os
import random
import tempfile

import keras
import numpy as np
from keras import tree

from albert_keras.families import config_from_fields
from albert_keras.models.albert.albert_config import AlbertConfig

_WORDS = (
    "the quick brown fox jumps over a lazy dog while people watch from their "
    "windows and talk about weather markets congress nation freedom union "
    "café naïve résumé 안녕하세요 세계 東京 emoji 😀 data model training"
).split()


def make_sentences(n, seed=0, low=6, high=14):
    rng = random.Random(seed)
    return [
        " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high))).capitalize() + "."
        for _ in range(n)
    ]


# A small model for training tests: seconds per run on a CPU.
SMALL = {"embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 2,
         "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64}


def folder_bytes(folder):
    """``{name: bytes}`` of every file in ``folder``, to compare two outputs."""
    return {n: open(os.path.join(folder, n), "rb").read()
            for n in sorted(os.listdir(folder))}


def stored_values(keras_path):
    """How many numbers a ``.keras`` file stores (weights, and optimizer
    state when it holds any), read from its archive with h5py."""
    import io
    import zipfile

    import h5py

    counts = []
    with zipfile.ZipFile(keras_path) as archive:
        with h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r") as f:
            f.visititems(lambda _, v: counts.append(v.size) if isinstance(v, h5py.Dataset)
                         else None)
    return sum(counts)


def _np(x):
    return tree.map_structure(lambda t: np.asarray(keras.ops.convert_to_numpy(t)), x)


def _shapes(x):
    return tree.map_structure(lambda t: tuple(t.shape), x)


def _assert_same(a, b, atol=0.0):
    for x, y in zip(tree.flatten(_np(a)), tree.flatten(_np(b))):
        np.testing.assert_allclose(x.astype(np.float32), y.astype(np.float32), atol=atol, rtol=0)


def run_layer_test(
    layer_cls,
    init_kwargs,
    make_inputs,
    expected_shape,
    call_kwargs=None,
    seq_lengths=(7, 12),
    batch=2,
    mixed_precision=True,
):
    """Checks a layer.

    Args:
        layer_cls: the layer class.
        init_kwargs: constructor arguments.
        make_inputs: ``(batch, seq) -> tuple`` of positional call arguments.
        expected_shape: ``(batch, seq) -> shape`` (or a structure of shapes).
        call_kwargs: extra keyword arguments for the call.
        seq_lengths: the layer is called at each of these lengths.
        mixed_precision: also run under ``mixed_bfloat16`` (not for
            preprocessing layers, whose outputs are integers).
    """
    call_kwargs = call_kwargs or {}
    layer = layer_cls(**init_kwargs)

    # -- shapes at several sequence lengths (one layer, so variable length) --
    outputs = {}
    for seq in seq_lengths:
        args = make_inputs(batch, seq)
        out = layer(*args, **call_kwargs)
        assert _shapes(out) == _shapes_of(expected_shape(batch, seq)), (
            f"{layer_cls.__name__} at seq {seq}: {_shapes(out)} != "
            f"{expected_shape(batch, seq)}"
        )
        outputs[seq] = (args, out)

    # -- get_config round trip ------------------------------------------------
    config = layer.get_config()
    clone = layer_cls.from_config(config)
    assert clone.get_config() == config

    # -- serialization: same weights, exactly the same outputs -------------------
    restored = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(layer)
    )
    args, expected = outputs[seq_lengths[0]]
    restored(*args, **call_kwargs)
    assert len(restored.weights) == len(layer.weights)
    restored.set_weights(layer.get_weights())
    _assert_same(restored(*args, **call_kwargs), expected)

    # -- mixed precision ---------------------------------------------------------
    if not mixed_precision:
        return layer
    mixed = layer_cls(**{**init_kwargs, "dtype": "mixed_bfloat16"})
    out = mixed(*make_inputs(batch, seq_lengths[-1]), **call_kwargs)
    assert _shapes(out) == _shapes_of(expected_shape(batch, seq_lengths[-1]))
    for v in mixed.weights:
        if "int" in str(v.dtype):  # a random-seed state, not a parameter
            continue
        assert v.dtype == "float32", f"{v.path} is {v.dtype} under mixed precision"
    for t in tree.flatten(_np(out)):
        assert np.all(np.isfinite(t.astype(np.float32)))
    return layer


def _shapes_of(expected):
    """A shape tuple, or a list of them."""
    if isinstance(expected, list):
        return [tuple(e) for e in expected]
    if isinstance(expected, dict):
        return {k: tuple(v) for k, v in expected.items()}
    return tuple(expected)


def run_model_test(model_fn, make_inputs, expected_shapes, seq_lengths=(7, 12), batch=2):
    """Checks a model: shapes at several lengths, config round trip, exact
    ``.keras`` save/load, mixed precision.

    Args:
        model_fn: ``(dtype) -> model``.
        make_inputs: ``(batch, seq) -> dict`` of inputs.
        expected_shapes: ``(batch, seq) -> dict`` of output shapes.
    """
    model = model_fn(None)
    for seq in seq_lengths:
        out = model(make_inputs(batch, seq))
        got = {k: tuple(v.shape) for k, v in out.items()}
        assert got == {k: tuple(v) for k, v in expected_shapes(batch, seq).items()}

    config = model.get_config()
    clone = type(model).from_config(config)
    assert clone.get_config() == config
    assert len(clone.weights) == len(model.weights)

    inputs = make_inputs(batch, seq_lengths[0])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.keras")
        model.save(path)
        loaded = keras.saving.load_model(path, safe_mode=True)
    assert type(loaded) is type(model)
    assert len(loaded.weights) == len(model.weights)
    _assert_same(loaded(inputs), model(inputs))

    mixed = model_fn("mixed_bfloat16")
    out = mixed(make_inputs(batch, seq_lengths[-1]))
    for v in mixed.weights:
        if "int" in str(v.dtype):  # a random-seed state, not a parameter
            continue
        assert v.dtype == "float32", f"{v.path} is {v.dtype} under mixed precision"
    for k, t in out.items():
        t = np.asarray(keras.ops.convert_to_numpy(t)).astype(np.float32)
        assert np.all(np.isfinite(t)), k
    return model


# -- random HF transformers models saved to disk, and inputs to compare on
# (torch and transformers are imported only by the tests that use them)

ALBERT = dict(
    vocab_size=99,
    embedding_size=16,
    hidden_size=32,
    num_hidden_layers=4,
    num_hidden_groups=2,
    inner_group_num=2,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
    hidden_act="gelu_new",
)
BERT = dict(
    vocab_size=99,
    hidden_size=32,
    num_hidden_layers=3,
    num_attention_heads=4,
    intermediate_size=37,
    max_position_embeddings=64,
)


# ELECTRA-small's shape in miniature: E != H (embeddings_project).
ELECTRA = dict(BERT, embedding_size=16)


# google/mobilebert-uncased's layout in miniature: trigram input, a
# bottleneck (32 between blocks, 16 inside), queries and keys from a shared
# bottleneck, 3 FFNs, NoNorm, relu, the raw [CLS] row as the pooled output.
MOBILEBERT = dict(vocab_size=99, hidden_size=32, embedding_size=8, intra_bottleneck_size=16,
                  num_hidden_layers=3, num_attention_heads=4, intermediate_size=24,
                  num_feedforward_networks=3, max_position_embeddings=64,
                  classifier_activation=False)


def albert_config(**fields):
    """An ALBERT config of ``fields``, or DeBERTa's where they name its
    relative attention (what ``--model-overrides`` builds on an ALBERT
    preset)."""
    return config_from_fields(AlbertConfig, fields)


# DeBERTa-v3's layout in miniature: relative attention with log buckets (a
# sequence of 12 reaches past position_buckets // 2), shared position keys,
# a normalised relative table, no absolute positions, no segments.
DEBERTA_V3 = dict(vocab_size=99, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                  intermediate_size=37, max_position_embeddings=64, relative_attention=True,
                  position_buckets=8, max_relative_positions=-1, norm_rel_ebd="layer_norm",
                  share_att_key=True, pos_att_type=["p2c", "c2p"],
                  position_biased_input=False, type_vocab_size=0, layer_norm_eps=1e-7,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def make_hf_model(cls_name, folder, seed=0, **config):
    """Builds ``transformers.<cls_name>``, perturbs every weight, saves it."""
    import torch
    import transformers

    torch.manual_seed(seed)
    family = next(f for f in ("Albert", "Bert", "Electra", "DebertaV2", "MobileBert")
                  if cls_name.startswith(f))
    base = getattr(transformers, f"{family}Config")
    defaults = {"Albert": ALBERT, "Bert": BERT, "Electra": ELECTRA,
                "DebertaV2": DEBERTA_V3, "MobileBert": MOBILEBERT}[family]
    model = getattr(transformers, cls_name)(base(**{**defaults, **config})).eval()
    with torch.no_grad():
        # Random LayerNorms and biases too, so a swapped tensor cannot hide.
        for _, p in model.named_parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(folder)
    return model


def sample_inputs(batch=3, seq=12, vocab=99):
    """Two segments and two padded rows, for parity checks."""
    rng = np.random.default_rng(1)
    ids = rng.integers(5, vocab, (batch, seq)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 5:] = 0
    segments = np.zeros_like(ids)
    segments[:, 6:] = 1
    return {"token_ids": ids * mask, "segment_ids": segments * mask, "padding_mask": mask}


def run_hf(model, inputs):
    """Runs an HF model on our input dict; keeps every hidden state."""
    import torch

    with torch.no_grad():
        return model(
            input_ids=torch.tensor(inputs["token_ids"], dtype=torch.long),
            attention_mask=torch.tensor(inputs["padding_mask"], dtype=torch.long),
            token_type_ids=torch.tensor(inputs["segment_ids"], dtype=torch.long),
            output_hidden_states=True,
        )


def all_positions(inputs):
    batch, seq = inputs["token_ids"].shape
    return np.tile(np.arange(seq, dtype="int32"), (batch, 1))


def max_diff(ours, theirs, mask=None):
    ours = np.asarray(ours)
    theirs = np.asarray(theirs.detach().numpy() if hasattr(theirs, "detach") else theirs)
    diff = np.abs(ours - theirs)
    if mask is not None:
        diff = diff[mask.astype(bool)]
    return float(diff.max())


# -- WordPiece vocabularies for tests -------------------------------------------------------

# Text that exercises BERT's normalizer and pre-tokenizer: accents, CJK,
# punctuation of several scripts, control and format characters, numbers,
# very long words and characters no small vocabulary holds.
WORDPIECE_TEXTS = [
    "Hello, World! It's 3.14 o'clock; 1,000,000 and -42.5e3.",
    "naïve café Ångström résumé Über ÀÉÎÕÜ crème brûlée",
    "中文字符 and 日本語のテキスト, 한국어 텍스트",
    "tab\there\x00ctrl\x07bell \u200bzero\u200bwidth \ufeffbom soft\u00adhyphen",
    "a" * 150 + " " + "x" * 99 + "y " + "z" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "😀 emoji ½ ﬁ ™ ² …ellipsis — dash – en ‘quotes’ “double”",
    "İstanbul ß straße Ǆemal ΣΊΣΥΦΟΣ Привет, МИР!",
    "  spaces   between \u00a0nbsp\u2028line\r\nwindows\u3000ideographic ",
    "a\u0301 combining e\u0308 marks, Ελληνικά ١٢٣ ٤٥ arabic digits",
    "ﾊﾝｶｸ fullwidth ＡＢＣ１２３ \U000F0001private\ue000use",
    "",
    "url http://example.com/a_b-c?d=e&f=g#h email a.b@c.de",
]


def make_wordpiece_vocab(folder, lowercase, vocab_size=1500, texts=None):
    """Trains a small WordPiece ``vocab.txt`` in ``folder`` with HF's trainer."""
    import os

    from tokenizers import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=lowercase, strip_accents=None if lowercase
                                     else False)
    trainer.train_from_iterator(
        # Half of the hard texts are in the training data: the rest meets
        # unknown characters.
        (texts or make_sentences(2000)) + WORDPIECE_TEXTS[:7] * 5,
        vocab_size=vocab_size, min_frequency=2,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    )
    os.makedirs(folder, exist_ok=True)
    trainer.save_model(str(folder))
    return os.path.join(str(folder), "vocab.txt")


def write_small_vocab(folder, size=99):
    """A WordPiece ``vocab.txt`` of ``size`` entries (BERT's special tokens
    first) in ``folder``, for a test checkpoint whose word table has
    ``size`` rows; returns its path."""
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(set(_WORDS))
    words += [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    words += [f"w{i}" for i in range(size)]
    os.makedirs(str(folder), exist_ok=True)
    path = os.path.join(str(folder), "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(words[:size]) + "\n")
    return path


def hf_bert_tokenizer(vocab_path, lowercase):
    """transformers' BertTokenizerFast on ``vocab_path`` (the reference)."""
    from transformers import BertTokenizerFast
    from transformers.models.bert.tokenization_bert import load_vocab

    return BertTokenizerFast(vocab=load_vocab(vocab_path), do_lower_case=lowercase)


def hf_albert_tokenizer(path, **options):
    """transformers' AlbertTokenizer on the pieces, scores and charsmap of the
    SentencePiece file ``path`` (built from the file's fields: HF's own
    loader needs protobuf >= 7, and TensorFlow pins an older one), with the
    keyword ``options`` a ``tokenizer_config.json`` would give it."""
    import sentencepiece as spm
    import transformers
    from google.protobuf import empty_pb2
    from google.protobuf.unknown_fields import UnknownFieldSet

    def _fields(data):  # protobuf's own decoding, not our reader's
        message = empty_pb2.Empty()
        message.ParseFromString(data)
        return [(f.field_number, f.data) for f in UnknownFieldSet(message)]

    processor = spm.SentencePieceProcessor(model_file=str(path))
    vocab = [(processor.id_to_piece(i), processor.get_score(i))
             for i in range(processor.get_piece_size())]
    with open(path, "rb") as f:
        normalizer_spec = dict(_fields(f.read())).get(3)
    charsmap = dict(_fields(normalizer_spec)).get(2) if normalizer_spec else None
    return transformers.AlbertTokenizer(vocab=vocab, _spm_precompiled_charsmap=charsmap,
                                        **options)


def assert_fill_mask_is_hfs(folder, hf_model, vocab_path, text="the quick brown [MASK] jumps"):
    """``fill-mask`` on ``folder`` gives the top 3 tokens that ``hf_model``
    (an HF ...ForPreTraining on the same weights) scores at the mask, with
    transformers' own BertTokenizerFast on ``vocab_path``."""
    import torch

    from albert_keras.drivers import inference

    ours = inference.fill_mask(str(folder), [text], top_k=3)[0][0]
    tokenizer = hf_bert_tokenizer(vocab_path, True)
    batch = tokenizer([text], return_tensors="pt")
    with torch.no_grad():
        logits = hf_model(**batch).prediction_logits[0]
    position = int((batch["input_ids"][0] == tokenizer.mask_token_id).nonzero()[0, 0])
    assert [r["id"] for r in ours] == logits[position].argsort(descending=True)[:3].tolist()


def assert_layer_decay_slows(start, tuned):
    """``tuned = {decay: encoder}`` trained from the encoder ``start`` with
    layer-wise decay 1.0 and 0.01: the pooler learns at the full rate
    either way, the stack much slower at 0.01 and the embeddings (0.01 **
    (L + 1) of the rate) all but stand still."""
    moved = {decay: {name: max(np.abs(a.numpy() - b.numpy()).max()
                               for a, b in zip(getattr(start, name).trainable_variables,
                                               getattr(encoder, name).trainable_variables))
                     for name in ("embeddings", "transformer", "pooler")}
             for decay, encoder in tuned.items()}
    assert moved[0.01]["pooler"] > 0.3 * moved[1.0]["pooler"], moved
    assert moved[0.01]["transformer"] < 0.05 * moved[1.0]["transformer"], moved
    assert moved[0.01]["embeddings"] < 1e-3 * moved[1.0]["embeddings"], moved


# A small ALBERT config with two groups of two inner blocks, for model tests.
TINY = dict(
    vocab_size=60,
    embedding_size=8,
    hidden_size=16,
    num_hidden_layers=4,
    num_hidden_groups=2,
    inner_group_num=2,
    num_attention_heads=2,
    intermediate_size=24,
    max_position_embeddings=32,
)


def encoder_inputs(batch, seq, vocab=60):
    rng = np.random.default_rng(seq)
    mask = np.ones((batch, seq), "int32")
    mask[0, seq - seq // 3 :] = 0
    segments = np.zeros((batch, seq), "int32")
    segments[:, seq // 2 :] = 1
    return {
        "token_ids": rng.integers(5, vocab, (batch, seq)).astype("int32") * mask,
        "segment_ids": segments * mask,
        "padding_mask": mask,
    }


def make_deberta_spm(folder):
    """A small SentencePiece model in DeBERTa's convention ([PAD] [CLS]
    [SEP] [UNK] first, no [MASK] piece) in ``folder``; its path."""
    import sentencepiece as spm

    (folder / "corpus.txt").write_text("\n".join(make_sentences(1500)), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(folder / "corpus.txt"), model_prefix=str(folder / "spm"), vocab_size=120,
        model_type="unigram", pad_id=0, pad_piece="[PAD]", bos_id=1, bos_piece="[CLS]",
        eos_id=2, eos_piece="[SEP]", unk_id=3, unk_piece="[UNK]", minloglevel=2)
    return str(folder / "spm.model")


def make_bpe_file(folder, texts=()):
    """A ModernBERT-like ``tokenizer.json`` in ``folder``: byte-level BPE of
    700 pieces learned from the corpus (and ``texts``), no prefix space, its
    special tokens after the learned pieces, ``[CLS] a [SEP]`` packing;
    returns its path."""
    from tokenizers import Tokenizer
    from tokenizers import decoders
    from tokenizers import models
    from tokenizers import pre_tokenizers
    from tokenizers import processors
    from tokenizers import trainers

    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(make_sentences(3000) + list(texts), trainer)
    from tokenizers import AddedToken

    # ModernBERT's, its [MASK] taking the space before it (lstrip) as there
    hf.add_special_tokens([AddedToken(t, lstrip=t == "[MASK]", normalized=False, special=True)
                           for t in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]")])
    hf.post_processor = processors.TemplateProcessing(
        single="[CLS]:0 $A:0 [SEP]:0", pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
        special_tokens=[(t, hf.token_to_id(t)) for t in ("[CLS]", "[SEP]")])
    path = os.path.join(str(folder), "tokenizer.json")
    hf.save(path)
    return path


def relative_max_diff(ours, theirs, mask=None):
    """Max difference, relative to the reference's largest value (MobileBERT's
    NoNorm leaves activations unscaled, so their size grows with depth)."""
    ours = np.asarray(ours, np.float64)
    theirs = np.asarray(theirs.detach().numpy() if hasattr(theirs, "detach") else theirs,
                        np.float64)
    diff = np.abs(ours - theirs)
    if mask is not None:
        diff, theirs = diff[mask.astype(bool)], theirs[mask.astype(bool)]
    return float(diff.max() / max(1.0, np.abs(theirs).max()))


def write_tf1_checkpoint(folder, tensors, config, config_name, step=1000,  # noqa: PLR0913 (what a TF1 run leaves)
                         prefix="", slots=True):
    """A TF1 checkpoint of ``tensors`` (with LAMB/Adam slots, as the original
    optimizer writes them) and its config file in ``folder``; returns the
    checkpoint's path."""
    import json

    import tensorflow as tf

    with tf.Graph().as_default():
        for name, value in tensors.items():
            tf.compat.v1.get_variable(prefix + name, initializer=tf.constant(value))
            if slots:
                tf.compat.v1.get_variable(prefix + name + "/adam_m", initializer=tf.zeros_like(value))
                tf.compat.v1.get_variable(prefix + name + "/adam_v", initializer=tf.zeros_like(value))
        tf.compat.v1.train.get_or_create_global_step()
        saver = tf.compat.v1.train.Saver()
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            path = saver.save(sess, str(folder / "model.ckpt"), global_step=step)
    (folder / config_name).write_text(json.dumps(config))
    return path
