"""Using models: evaluate and predict with a fine-tuned folder, fill-mask
with a pretraining folder, embeddings from any of them."""

import os

import numpy as np
import tensorflow as tf

from albert_keras.config import CLS_ID
from albert_keras.config import MASK_ID
from albert_keras.config import SEP_ID
from albert_keras.models.albert_embedder import AlbertEmbedder
from albert_keras.saving import load_model
from albert_keras.tasks import readers
from albert_keras.tasks.encoding import PieceEncoder
from albert_keras.tasks.encoding import pack_texts
from albert_keras.tasks.finetune import load_task_data
from albert_keras.tasks.finetune import predict_outputs
from albert_keras.tasks.finetune import qa_answers
from albert_keras.tasks.finetune import score
from albert_keras.tasks.metrics import bio_spans
from albert_keras.tasks.model_folder import load_encoder
from albert_keras.tasks.model_folder import load_task_model
from albert_keras.tasks.model_folder import tokenizer_path
from albert_keras.tasks.tagging import decode_tags

MASK_TOKEN = "[MASK]"


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def evaluate(folder, path, batch_size=64):
    """The task metrics of a fine-tuned folder on a labelled file."""
    model, spec = load_task_model(folder)
    data = load_task_data(path, spec, PieceEncoder(os.path.join(folder, "spm.model")))
    return score(spec, data, predict_outputs(model, data, batch_size))


def predict(folder, path, batch_size=64):
    """Predictions for every row of ``path`` (labels not needed), as dicts."""
    model, spec = load_task_model(folder)
    data = load_task_data(path, spec, PieceEncoder(os.path.join(folder, "spm.model")),
                          require_labels=False)
    outputs = predict_outputs(model, data, batch_size)
    task = spec["task"]
    if task == "classify":
        logits = outputs["logits"]
        if spec["regression"]:
            return [{"score": float(v)} for v in logits[:, 0]]
        probs = _softmax(logits)
        return [
            {"label": spec["labels"][int(p.argmax())],
             "probabilities": {name: float(v) for name, v in zip(spec["labels"], p)}}
            for p in probs
        ]
    if task == "tag":
        words = data.extra["words"]
        tags = decode_tags(data.extra["features"], outputs["logits"], words, spec["labels"])
        return [
            {"tokens": w, "tags": t,
             "entities": [{"type": kind, "start": a, "end": b + 1, "text": " ".join(w[a:b + 1])}
                          for kind, a, b in bio_spans(t)]}
            for w, t in zip(words, tags)
        ]
    if task == "qa":
        examples = data.extra["examples"]
        answers = qa_answers(spec, data, outputs)
        return [
            {"id": e.qid, "answer": answers[e.qid]["text"], "start": answers[e.qid]["start"],
             "end": answers[e.qid]["end"], "score": answers[e.qid]["score"],
             "null_score": answers[e.qid]["null_score"]}
            for e in examples
        ]
    probs = _softmax(outputs["logits"])
    return [{"label": int(p.argmax()), "probabilities": [float(v) for v in p]} for p in probs]


# -- fill-mask ---------------------------------------------------------------------------


def encode_with_masks(encoder, text):
    """Ids for ``text`` with every ``[MASK]`` as the mask id."""
    parts = text.split(MASK_TOKEN)
    if len(parts) < 2:
        raise ValueError(f"no {MASK_TOKEN} in {text!r}")
    ids = []
    for i, part in enumerate(parts):
        if part.strip():
            ids.extend(encoder.encode([part.strip()])[0])
        if i < len(parts) - 1:
            ids.append(MASK_ID)
    return ids


def fill_mask(folder, texts, top_k=5, sequence_length=128, tokenizer=None):
    """Top-k pieces for each ``[MASK]`` of each text, with the pretrained
    MLM head (``pretrainer.keras`` of a pretraining folder).

    Returns, per text, a list (one per mask) of
    ``[{"token", "id", "probability"}]``, best first.
    """
    path = os.path.join(folder, "pretrainer.keras") if os.path.isdir(folder) else folder
    model = load_model(path)
    if not hasattr(model, "mlm_head"):
        raise ValueError(f"{path}: {type(model).__name__} has no masked-LM head")
    pieces = PieceEncoder(tokenizer_path(folder, tokenizer))
    sequence_length = min(sequence_length, model.config.max_position_embeddings)
    results = []
    for text in texts:
        ids = [CLS_ID] + encode_with_masks(pieces, text)[:sequence_length - 2] + [SEP_ID]
        positions = [i for i, t in enumerate(ids) if t == MASK_ID]
        if not positions:
            raise ValueError(f"the {MASK_TOKEN} in {text!r} falls past sequence_length")
        x = {
            "token_ids": tf.constant([ids], tf.int32),
            "segment_ids": tf.zeros((1, len(ids)), tf.int32),
            "padding_mask": tf.ones((1, len(ids)), tf.int32),
            "masked_positions": tf.constant([positions], tf.int32),
        }
        logits = np.asarray(model(x, training=False)["mlm_logits"], np.float32)[0]
        probs = _softmax(logits)
        per_mask = []
        for p in probs:
            best = np.argsort(p)[::-1][:top_k]
            per_mask.append([{"token": pieces.id_to_piece(i), "id": int(i),
                              "probability": float(p[i])} for i in best])
        results.append(per_mask)
    return results


# -- embeddings --------------------------------------------------------------------------


def embed(folder, texts, layers=(-1,), pooling="mean", combine="concat", normalize=False,
          sequence_length=128, batch_size=64, tokenizer=None):
    """``[N, D]`` float32 text embeddings from any of our model folders."""
    encoder = load_encoder(folder, dtype="float32", output_hidden_states=pooling != "pooled")
    model = AlbertEmbedder(encoder, layers=layers, pooling=pooling, combine=combine,
                           normalize=normalize)
    pieces = PieceEncoder(tokenizer_path(folder, tokenizer))
    for i, text in enumerate(texts):
        if not text.strip():
            raise readers.TaskDataError(f"text {i + 1} is empty")
    sequence_length = min(sequence_length, encoder.config.max_position_embeddings)
    x = pack_texts(pieces, list(texts), None, sequence_length)
    return model.predict(x, batch_size=batch_size, verbose=0)["embeddings"]
