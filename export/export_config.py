"""Every knob of an export, in one value."""

import dataclasses

from albert_keras.options import name_of
from albert_keras.options import option

# What ``converter.convert`` can write; here, away from TensorFlow, so the
# command line can offer them without importing it.
QUANTIZE_MODES = ("none", "float16", "dynamic", "int8", "int4", "qat")
INT8_SCOPES = ("dense", "all")
INT8_WEIGHTS = ("per-channel", "per-tensor")


class ExportError(ValueError):
    """A model that cannot be exported as asked (one-line message)."""


@dataclasses.dataclass(frozen=True)
class ExportConfig:
    """How a model becomes a validated ``.tflite``.

    Args:
        quantize: ``none``, ``float16``, ``dynamic`` (int8 weights), ``int8``
            (full integer, calibrated), ``int4`` (4-bit blockwise weights in
            the dense layers and the word table, float activations) or
            ``qat`` (quantization-aware fine-tune first).
        int8_scope: ``int8``: ``dense`` (the dense layers' matmuls in int8,
            the rest in float) or ``all`` (every op with an int8 kernel).
        int8_float_layers: ``int8``: this many more layers stay in float,
            those whose int8 output strays most from float on the
            calibration examples (the remedy when int8 loses accuracy).
        int8_weights: ``int8``: ``per-channel`` or ``per-tensor`` scales of
            the dense kernels.
        sequence_length: S (default: the task's, else 128).
        lengths: shorter input lengths the file also carries as signatures
            ``length_N`` (default: none; with ``web``: every 16 up to 128,
            then 256, 512, ..., below ``sequence_length``).
        web: also write a static web page folder there
            (``albert_keras.export.web_folder``).
        web_corpus: an embedder's web page searches these texts
            (``albert_keras.export.web_corpus``).
        with_tokenizer: string in (tokenizer and packer inside the graph).
        pair: a string-in model that takes ``text`` and ``text_pair``
            (default: when the task has pairs).
        representative: the calibration file (default: the folder's
            training file).
        validation_data: the validation file (default: the folder's eval
            file, else its training file, else ``representative``).
        examples: how many validation examples.
        calibration_examples: how many calibration examples.
        tolerance: float modes: the largest |diff| from Keras.
        min_cosine: quantized modes: the least mean cosine of vector outputs.
        min_agreement: quantized modes: the least top-1 agreement.
        max_probability_diff: quantized classifiers: the largest mean change
            of the top class's probability.
        max_accuracy_drop: quantized modes with labels: the largest accuracy
            drop.
        max_score_error: quantized regressions (one output): the largest
            mean error, in standard deviations of Keras' scores. Each bound is judged on the outputs it fits
            (``albert_keras.export.validation``).
        mask_value: the additive attention mask in the exported graph.
        part: which model of a folder.
        dimensions: an embedder's vectors cut to their first D features.
        tokenizer: a tokenizer file (default: the folder's).
        num_choices: multiple choice: answers per question.
        seed: the choice of validation and calibration examples.
        qat_data: the QAT fine-tune's training file (default: the folder's).
        qat_epochs: its epochs.
        qat_learning_rate: its learning rate.
        metadata: write TFLite Model Metadata for MediaPipe Tasks and the
            TFLite Task Library (``albert_keras.export.metadata``).
        mediapipe_min_agreement: with ``metadata``, how closely MediaPipe
            (its own tokenizer, its runtime) must agree with Keras on our
            tokenization: the share of texts with the same top label, or the
            least cosine of an embedder's vectors.
        overwrite: replace an existing ``.tflite``, its sidecar and its card.
    """

    quantize: str = option("none", "weights and activations in the .tflite",
                           choices=QUANTIZE_MODES)
    int8_scope: str = option("dense", "int8 and qat: dense: only the dense layers' matmuls "
                                      "in int8, LayerNorm, softmax, attention products and "
                                      "GELU in float (faster on CPUs); all: every op with an "
                                      "int8 kernel (integer-only accelerators)",
                             choices=INT8_SCOPES)
    int8_float_layers: int = option(0, "int8: also keep this many layers in float: those "
                                       "whose int8 output strays most from float on the "
                                       "calibration examples (TensorFlow's quantization "
                                       "debugger); the remedy when int8 loses accuracy",
                                    valid="[0, inf)")
    int8_weights: str = option("per-channel", "int8 and qat: a scale per output unit of each dense "
                                              "kernel, or one per kernel (per-tensor, for "
                                              "runtimes that want it)",
                               choices=INT8_WEIGHTS)
    sequence_length: int = option(None, "sequence length (default: the task's, else 128)",
                                  # --seq-len: its spelling before it matched finetune's
                                  flag="--seq-length", aliases=("--seq-len",),
                                  valid="[8, inf)")
    lengths: list[int] = option(
        None, "shorter input lengths the file also carries, one signature each (length_N, "
              "sharing the weights) and each validated; an app runs the shortest that holds "
              "a text (default: none; with --web: every 16 up to 128, then 256, 512, ... below "
              "the sequence length)",
        nargs="+", valid="[8, inf)")
    web: str = option(None, "also write this folder: a static web page that runs the model "
                            "in the browser (LiteRT.js, its tokenizer in JavaScript, a "
                            "module with classify/embed), the runtime copied in; needs npm "
                            "the first time (albert_keras.export.web_folder)")
    web_corpus: str = option(None, "with --web, for an embedder: a text file (one text a "
                                   "line) embedded into the folder, which the page searches "
                                   "for the text typed (export.web_corpus)")
    with_tokenizer: bool = option(False, "string in: tokenizer and packer inside the model")
    pair: bool = option(None, "string-in takes text and text_pair (default: when the "
                              "task has pairs)")
    representative: str = option(None, "int8 calibration data (default: the folder's "
                                       "training file)")
    validation_data: str = option(None, "examples to validate on (default: the folder's "
                                        "eval file, else its training file, else random ids)")
    examples: int = option(200, "validation examples (all of a smaller file)", valid="[1, inf)")
    calibration_examples: int = option(100, "int8 calibration examples", valid="[1, inf)")
    tolerance: float = option(None, "max |diff| for none/float16 (default 1e-4 / 1e-2)", valid="(0, inf)")
    min_cosine: float = option(0.98, "quantized modes: least mean cosine with Keras of "
                                     "vector outputs (hidden states, embeddings)", valid="(0, 1)")
    min_agreement: float = option(0.9, "quantized modes: least agreement with Keras of the "
                                       "top-1 class, QA span or replaced-token call", valid="(0, 1]")
    max_probability_diff: float = option(0.1, "quantized classifiers: largest mean change "
                                              "of the top class's probability", valid="(0, 1)")
    max_accuracy_drop: float = option(0.03, "quantized modes with labelled data: largest "
                                            "accuracy drop against Keras", valid="[0, 1)")
    max_score_error: float = option(0.1, "quantized regressions: largest mean error, in "
                                         "standard deviations of Keras' scores",
                                    valid="(0, inf)")
    mask_value: float = option(-120.0, "additive attention mask in the export (bounded "
                                       "for int8)", valid="[-1000000000, 0)")
    part: str = option("auto", "which model of a folder (pretraining folder: encoder or mlm; "
                               "an rtd run's folder: also discriminator; any folder: "
                               "embedder, the mean of the last layer as `embed` gives)",
                       choices=("auto", "encoder", "mlm", "model", "discriminator",
                                "embedder"))
    tokenizer: str = option(None, "tokenizer file (default: the folder's)")
    dimensions: int = option(None, "embedders: keep each vector's first D features, before "
                                   "normalizing (one trained with --matryoshka-dims; "
                                   "default: all)", valid="[1, inf)")
    num_choices: int = option(None, "multiple choice: answers per question (default: "
                                    "the task's)", valid="[2, inf)")
    seed: int = option(0, "which validation and calibration examples are drawn")
    qat_data: str = option(None, "qat: training file for the quantization-aware "
                                 "fine-tune (default: the folder's own)")
    qat_epochs: int = option(1, "qat: epochs of the quantization-aware fine-tune", valid="[1, inf)")
    metadata: bool = option(False, "write TFLite Model Metadata for MediaPipe Tasks and the "
                                   "TFLite Task Library (ids in; the tokenizer and labels "
                                   "packed in the file; classifiers output probabilities); "
                                   "MediaPipe runs it before it is written; needs the mediapipe "
                                   "extra: pip install 'albert-keras[mediapipe]'")
    mediapipe_min_agreement: float = option(
        0.99, "--metadata: the least share of validation texts on which MediaPipe, "
              "tokenizing them itself, gives Keras' top label (embedders: the least cosine "
              "with Keras' vector)", valid="(0, 1]")
    qat_learning_rate: float = option(1e-5, "qat: its learning rate", valid="(0, inf)")
    overwrite: bool = option(False, "replace an existing .tflite and its sidecar")


def arg(name):
    """How an error names an export setting: ``--seq-length`` on the command
    line, ``sequence_length`` in Python (``ExportConfig``'s field, or
    ``export_tflite``'s argument: ``out``)."""
    return name_of(ExportConfig, name)
