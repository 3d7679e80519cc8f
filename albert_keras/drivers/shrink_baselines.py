"""The baselines of a ``shrink`` table: what a transformer buys on the user's rows.

* ``avg_embedding``: an average-word-embedding classifier of the kind
  MediaPipe Model Maker trains and ships (its ``AverageWordEmbedding``
  model: lower-cased words split on non-word characters, the 10,000 most
  frequent training words, 16-wide word vectors averaged over the text, a
  16-unit ReLU layer, dropout 0.2, softmax), trained here on the labelled
  rows, converted to ``.tflite`` (word ids in) in each float mode and scored
  with LiteRT on the eval rows like every candidate. Its file is a few
  hundred kilobytes; it is a reference, never recommended, since it takes
  the ids of its own vocabulary, not the teacher's tokenizer's.
* ``tfidf``: TF-IDF (word 1-2-grams, sublinear tf) with logistic regression,
  the usual strong linear baseline, when scikit-learn is installed: its
  accuracy only (TFLite has no TF-IDF op, so there is no file).
"""

import collections
import logging
import os
import re

import numpy as np

from albert_keras.files import read_json
from albert_keras.files import write_json
from albert_keras.tasks.readers import canonical_label
from albert_keras.tasks.readers import read_text_table

logger = logging.getLogger(__name__)

AVG_EMBEDDING = "avg_embedding"
# MediaPipe Model Maker's AverageWordEmbedding defaults.
_VOCABULARY, _WIDTH, _LENGTH, _DROPOUT = 10_000, 16, 256, 0.2
_EPOCHS, _BATCH, _LEARNING_RATE = 20, 32, 5e-3
_WORDS = re.compile(r"[^\w']+")
# ids 0, 1: padding and unknown words
_PAD, _UNKNOWN = 0, 1
# float modes: full int8 would need a calibration set of its own
BASELINE_MODES = ("none", "float16", "dynamic")
_MIN_AGREEMENT = 0.9


def baseline_rows(spec, paths, out_dir, cfg):
    """The ``avg_embedding`` rows (one per float mode in ``cfg.modes``),
    from earlier results where a run left them.

    Args:
        spec: the teacher's ``task.json`` dict (its labels and columns).
        paths: ``(train_path, eval_path)``.
        out_dir: the run's folder (``results/``, ``files/``).
        cfg: the ``ShrinkConfig``.
    """
    modes = [m for m in cfg.modes if m in BASELINE_MODES]
    done = [os.path.join(out_dir, "results", f"{AVG_EMBEDDING}_{m}.json") for m in modes]
    if all(os.path.isfile(p) for p in done):
        return [read_json(p) for p in done]
    (train_texts, train_y), (eval_texts, eval_y) = (_rows(p, spec) for p in paths)
    vocabulary = _vocabulary(train_texts)
    model = _trained(_ids(train_texts, vocabulary), train_y, len(spec["labels"]), cfg.seed)
    eval_ids = _ids(eval_texts, vocabulary)
    keras_predicted = model.predict(eval_ids, verbose=0).argmax(-1)
    keras_accuracy = float(np.mean(keras_predicted == eval_y))
    rows = []
    for mode, result in zip(modes, done):
        path = os.path.join(out_dir, "files", f"{AVG_EMBEDDING}_{mode}.tflite")
        row = _measured_file(model, mode, path, (eval_ids, eval_y, keras_predicted), cfg)
        row.update(candidate=AVG_EMBEDDING, mode=mode, baseline=True,
                   params=int(model.count_params()), keras_accuracy=keras_accuracy,
                   file=os.path.relpath(path, out_dir), examples=len(eval_y))
        write_json(result, row)
        rows.append(row)
    return rows


def tfidf_accuracy(spec, paths):
    """TF-IDF + logistic regression's accuracy on the eval rows, or None
    without scikit-learn (an optional dependency)."""
    try:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        logger.info("scikit-learn is not installed: no TF-IDF reference in the table")
        return None
    (train_texts, train_y), (eval_texts, eval_y) = (_rows(p, spec) for p in paths)
    vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=1)
    classifier = LogisticRegression(max_iter=2000, C=10.0)
    classifier.fit(vectorizer.fit_transform(train_texts), train_y)
    return float(np.mean(classifier.predict(vectorizer.transform(eval_texts)) == eval_y))


def _rows(path, spec):
    """``(texts, label ids)`` of a labelled file, by the teacher's labels."""
    table = read_text_table(path, spec.get("text_column") or "text",
                            spec.get("text_pair_column"),
                            label_column=spec.get("label_column") or "label")
    texts = table.texts if table.pairs is None else [
        f"{a} {b}" for a, b in zip(table.texts, table.pairs)]
    index = {name: i for i, name in enumerate(spec["labels"])}
    labels = [canonical_label(v) for v in table.labels]
    unknown = next((v for v in labels if v not in index), None)
    if unknown is not None:
        raise ValueError(f"{path}: label {unknown!r} is not one of the teacher's labels")
    return texts, np.array([index[v] for v in labels], np.int32)


def _words(text):
    return [w for w in _WORDS.split(text.lower()) if w]


def _vocabulary(texts):
    """The most frequent training words -> ids from 2."""
    counts = collections.Counter(w for t in texts for w in _words(t))
    ranked = [w for w, _ in counts.most_common(_VOCABULARY - 2)]
    return {w: i + 2 for i, w in enumerate(ranked)}


def _ids(texts, vocabulary):
    out = np.full((len(texts), _LENGTH), _PAD, np.int32)
    for row, text in enumerate(texts):
        ids = [vocabulary.get(w, _UNKNOWN) for w in _words(text)][:_LENGTH]
        out[row, :len(ids)] = ids
    return out


def _trained(ids, labels, classes, seed):
    """MediaPipe's model shape, trained with Adam (the mean over real words)."""
    import keras

    keras.utils.set_random_seed(seed)
    inputs = keras.Input((_LENGTH,), dtype="int32", name="ids")
    x = keras.layers.Embedding(_VOCABULARY, _WIDTH, mask_zero=True)(inputs)
    x = keras.layers.GlobalAveragePooling1D()(x)
    x = keras.layers.Dense(_WIDTH, activation="relu")(x)
    x = keras.layers.Dropout(_DROPOUT)(x)
    outputs = keras.layers.Dense(classes, activation="softmax", name="probabilities")(x)
    model = keras.Model(inputs, outputs, name=AVG_EMBEDDING)
    model.compile(optimizer=keras.optimizers.Adam(_LEARNING_RATE),
                  loss="sparse_categorical_crossentropy")
    model.fit(ids, labels, epochs=_EPOCHS, batch_size=_BATCH, verbose=0)
    return model


def _measured_file(model, mode, path, evaluation, cfg):
    """The file's size, median latency and accuracy (LiteRT, one row at a
    time); validated when its top class agrees with the Keras model's on
    ``_MIN_AGREEMENT`` of the eval rows (the export's default bound)."""
    from ai_edge_litert.interpreter import Interpreter

    from albert_keras.export.bench import bench

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(_tflite(model, mode))
    runner = Interpreter(model_path=path).get_signature_runner()
    ids, labels, keras_predicted = evaluation
    predicted = np.array([int(runner(ids=row[None])["probabilities"].argmax()) for row in ids])
    accuracy = float(np.mean(predicted == labels))
    agreement = float(np.mean(predicted == keras_predicted))
    if agreement < _MIN_AGREEMENT:
        return {"validated": False, "tflite_accuracy": accuracy,
                "failure": f"top-1 agreement with the Keras model {agreement:.3f} < "
                           f"{_MIN_AGREEMENT}"}
    timing = bench(path, runs=cfg.runs, threads=cfg.threads)
    size = os.path.getsize(path)
    return {"validated": True, "size_bytes": size, "size_mb": round(size / 1e6, 3),
            "median_ms": round(timing["median_ms"], 2), "tflite_accuracy": accuracy,
            "top1_agreement": agreement}


def _tflite(model, mode):
    """The ``.tflite`` bytes, through a SavedModel (Keras' ``ExportArchive``:
    converting a traced function of a Keras 3 model directly gave the
    converter stale weights, saturated outputs)."""
    import tempfile

    import keras
    import tensorflow as tf

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.add_endpoint("serving_default",
                         lambda ids: {"probabilities": model(ids, training=False)},
                         input_signature=[tf.TensorSpec([1, _LENGTH], tf.int32, name="ids")])
    with tempfile.TemporaryDirectory() as folder:
        archive.write_out(folder, verbose=False)
        converter = tf.lite.TFLiteConverter.from_saved_model(folder)
        return _quantized(converter, mode).convert()


def _quantized(converter, mode):
    import tensorflow as tf

    if mode in ("float16", "dynamic"):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        converter.target_spec.supported_types = [tf.float16]
    return converter
