"""Prediction in LiteRT: a task model's calls run by XNNPACK instead of
TensorFlow's executor.

One text at a time, TensorFlow's graph executor costs more than the
arithmetic: MiniLM-L6's shape on 32 pieces runs 11.4 ms as a traced graph
(931 ops), 8.2 ms under XLA, and 4.8 ms converted to LiteRT, where XNNPACK
runs each layer's matrix products as packed, fused kernels (2-core Intel
Xeon with AMX, float32). This module converts a task model once, in memory,
into a LiteRT model whose input is one row of any length, and runs
batches through it row by row (each batch cut to its longest row, as on
TensorFlow).

The conversion is the export's own safe path (a float32 copy with the
model's own attention mask, ``keras.export.ExportArchive``, the SavedModel
converter), which takes seconds (MiniLM-L6's shape: about 9 s): a cost paid
when the model is loaded for serving, not per call, and once per model:
the converted file is kept (``albert_keras.tasks.litert_cache``). The
outputs are the Keras model's in float32 up to rounding (about 1e-6).

The default runtime, ``auto``, never converts: a call of at most
``AUTO_MAX_ROWS`` rows (a few texts) runs in LiteRT when the model's converted file is
already kept (``finetune`` keeps one, ``keep_converted``), every other call
on TensorFlow, which batches many rows faster than LiteRT runs them one by
one.
"""

import logging
import os
import time

import numpy as np
import tensorflow as tf
from ai_edge_litert.interpreter import Interpreter

from albert_keras.export.converter import convert
from albert_keras.export.converter import model_kind
from albert_keras.export.converter import prepare_for_export
from albert_keras.native_output import stderr_silenced
from albert_keras.tasks import litert_cache
from albert_keras.training.strategy import where_it_runs

logger = logging.getLogger(__name__)

# where a task object's predictions run (TextTask.load's and predict's ``runtime``)
RUNTIMES = ("auto", "keras", "litert")
# runtime auto: a call of at most this many rows runs in a kept LiteRT file.
# LiteRT runs rows one at a time, TensorFlow batches them. At MiniLM-L6's
# shape on a 2-core AMD EPYC, requests of 1, 4 and 8 short texts took 7, 24
# and 49 ms in LiteRT against 13, 34 and 59 ms on TensorFlow with AVX2
# kernels, and 7, 24 and 51 against 15, 29 and 45 ms with its AVX512-BF16
# ones (benchmarks/real_text.py --latency-only): 4 wins on both.
AUTO_MAX_ROWS = 4
# LiteRT takes its thread count as a C int
MAX_THREADS = 2**31 - 1
# the encoder inputs under the serving function's argument names
_FEEDS = {"ids": "token_ids", "mask": "padding_mask", "segment_ids": "segment_ids"}


class LiteRTRunner:
    """A task model converted to LiteRT, called on batches of any size.

    Args:
        model: one of the package's task models (``SequenceClassifier``,
            ``TokenTagger``, ``SpanExtractor``; not ``ChoiceScorer``), in any
            precision: LiteRT runs a float32 copy of its weights.
        threads: XNNPACK's threads (default: the CPUs this process may use).

    Example:
    >>> runner = LiteRTRunner(classifier.task_model)  # doctest: +SKIP
    >>> runner(batch)["logits"].shape  # doctest: +SKIP
    (1, 2)
    """

    def __init__(self, model, threads=None, convert_missing=True):
        kind, self.output_names = model_kind(model)
        if not runs_in_litert(model):
            raise ValueError(f"runtime litert: {kind.article()} {kind} model does not run in "
                             f"LiteRT here; use runtime keras")
        began = time.perf_counter()
        self.threads = int(threads or len(os.sched_getaffinity(0)))
        served = prepare_for_export(model, _mask_value(model))
        key = litert_cache.model_key(served, self.output_names)
        blob = litert_cache.cached(key)
        if blob is None:
            if not convert_missing:
                raise NotKept(key)
            blob = convert(served, _serving_function(served, self.output_names))
            litert_cache.keep(key, blob)
        self._run = _signature_runner(blob, self.threads)
        logger.info(f"ready for LiteRT in {time.perf_counter() - began:.1f} s "
                    f"({len(blob) / 1e6:.1f} MB, {self.threads} threads)")

    def __call__(self, batch):
        """The outputs on one batch of encoder inputs (numpy ``[B, S]``), as
        float32 numpy arrays by output name; the rows run one at a time."""
        feed = {name: np.asarray(batch[key], np.int32) for name, key in _FEEDS.items()}
        rows = [self._run(**{name: value[i:i + 1] for name, value in feed.items()})
                for i in range(len(feed["ids"]))]
        return {name: np.concatenate([row[name] for row in rows]) for name in self.output_names}


class NotKept(LookupError):
    """No converted file is kept for the model (``convert_missing=False``)."""


def runs_in_litert(model):
    """Whether ``model``'s kind converts to this runtime."""
    # a choice model's [1, C, S] rows become [C, S] inside it, a row count
    # the converter no longer knows; the layers' new-axis slices then need
    # TensorFlow's own kernels, which LiteRT lacks
    return not model_kind(model)[0].per_choice


def kept_runner(model, threads=None):
    """A ``LiteRTRunner`` of ``model`` read from its kept file, or None
    when none is kept or its kind does not convert (nothing is converted)."""
    if not runs_in_litert(model) or litert_cache.cache_folder() is None:
        return None
    try:
        return LiteRTRunner(model, threads, convert_missing=False)
    except NotKept:
        logger.info("runtime auto: no converted LiteRT file is kept for this model; it "
                    "runs on TensorFlow (finetune keeps one; runtime litert converts now)")
    except Exception as e:  # noqa: BLE001 (auto only saves time: TensorFlow answers instead)
        logger.warning(f"runtime auto: the kept LiteRT file was not used ({type(e).__name__}: "
                       f"{e}); the model runs on TensorFlow",
                       exc_info=logger.isEnabledFor(logging.DEBUG))
    return None


def _mask_value(model):
    """The attention bias the model was built with: the same one keeps the
    outputs the Keras model's (the export's bounded -120 is for int8)."""
    return model.encoder.mask_value


def _serving_function(model, output_names):
    """The model on int32 inputs of one row and any length, returning its
    float32 outputs. One row: with the rows left open too, TFLite's
    converter cannot lower the new-axis slices (``x[:, :, None]``) the
    layers take to its builtins."""
    shape = [1, None]
    spec = [tf.TensorSpec(shape, tf.int32, name=name) for name in _FEEDS]

    @tf.function(input_signature=spec)
    def serve(ids, mask, segment_ids):
        out = model({"token_ids": ids, "padding_mask": mask, "segment_ids": segment_ids},
                    training=False)
        return {name: tf.cast(out[name], tf.float32) for name in output_names}
    return serve


def _signature_runner(blob, threads):
    """The file's one signature, callable with numpy inputs of any shape
    (the runner resizes and reallocates when the length changes: 0.5-2 ms
    at small shapes, more for graphs of more ops)."""
    with stderr_silenced():  # LiteRT announces its XNNPACK delegate on stderr
        interpreter = Interpreter(model_content=blob, num_threads=threads)
        return interpreter.get_signature_runner()


class PredictionRuntime:
    """Where a task object's predictions run, and its converted model.

    ``keras`` runs the Keras model (TensorFlow's graph, bf16 for large
    batches where ``precision`` allows); ``litert`` runs every prediction
    call in a ``LiteRTRunner`` converted from the task model when first
    needed and converted again after the weights change (``forget``);
    ``auto`` runs a call of at most ``AUTO_MAX_ROWS`` rows in LiteRT when
    the model's converted file is kept (looked up at the first such call,
    never converted), every other call as ``keras``.

    Args:
        name: ``auto``, ``keras`` or ``litert``.
        threads: LiteRT's threads (default: the CPUs this process may use).
    """

    def __init__(self, name="keras", threads=None):
        if name not in RUNTIMES:
            raise ValueError(f"runtime: {name!r} is not one of {', '.join(RUNTIMES)}")
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int)
                                    or not 1 <= threads <= MAX_THREADS):
            raise ValueError(f"threads: {threads!r} is not an integer from 1 to {MAX_THREADS}")
        self.name, self.threads = name, threads
        self._converted = None  # (the model it was converted from, its runner)

    def runner(self, model, rows=None):
        """The callable that runs ``model``'s batches of a call of ``rows``
        rows (None: not known yet), or None for Keras."""
        if self.name == "keras" or model is None:
            return None
        if self.name == "auto" and (rows is None or rows > AUTO_MAX_ROWS):
            return None
        if self._converted is None or self._converted[0] is not model:
            made = (LiteRTRunner(model, self.threads) if self.name == "litert"
                    else kept_runner(model, self.threads))
            self._converted = (model, made)
        return self._converted[1]

    def where(self, model, batch_size, rows=None):
        """The one line a prediction command logs about where it computes."""
        runner = self.runner(model, rows)
        if runner is None:
            return where_it_runs(None, batch_size=batch_size, model=model)
        return (f"LiteRT (XNNPACK) on the CPU, {runner.threads} thread(s): "
                f"one row at a time, precision float32")

    def forget(self):
        """Drops the converted model (its weights are out of date)."""
        self._converted = None
