"""albert-keras: ALBERT (A Lite BERT) for TensorFlow / Keras 3.

Importing the package registers every Keras class that a saved model can hold,
as ``import keras_hub`` does, so that ``keras.saving.load_model`` finds them by
name. It sets no Keras setting: the backend follows Keras' own rules
(``KERAS_BACKEND``, then ``~/.keras/keras.json``). It keeps freed memory
for the next training step instead of returning it to the kernel, where the
user set nothing: glibc's ``mallopt`` (mmap threshold 32 MiB, trim threshold
1 GiB, top pad 64 MiB) and, when TensorFlow is not loaded yet, TensorFlow's
BFC allocator on the CPU (``TF_CPU_ALLOCATOR_USE_BFC=true``); the page
faults of fresh buffers took a third of a fine-tune's cycles on a 2-core
AVX2 machine (``albert_keras.cpu_allocator``).

Example:
>>> import keras
>>> import albert_keras
>>> keras.saving.get_registered_object("albert_keras>AlbertEncoder")
<class 'albert_keras.models.albert.albert_encoder.AlbertEncoder'>
"""

import importlib
import sys

from albert_keras.cpu_allocator import keep_the_heap
from albert_keras.cpu_allocator import use_bfc_allocator

# before anything loads TensorFlow, which reads its variable once
use_bfc_allocator()
keep_the_heap()

__version__ = "0.1.0"

# Public name -> the module that defines it. Loading these modules registers
# every serializable class (the models import their layers, heads and
# optimizers); tests/test_package.py checks that no registering module is missed.
_PUBLIC = {
    "LayerwiseAdamW": "albert_keras.optimizers.optimizer",
    "SequenceClassifier": "albert_keras.models.task_models.sequence_classifier",
    "AlbertConfig": "albert_keras.models.albert.albert_config",
    "TokenDiscriminator": "albert_keras.models.pretrainers.token_discriminator",
    "Distiller": "albert_keras.models.distillers.distiller",
    "ElectraPretrainer": "albert_keras.models.pretrainers.electra_pretrainer",
    "SentenceEmbedder": "albert_keras.models.task_models.sentence_embedder",
    "InBatchNegatives": "albert_keras.models.task_models.in_batch_negatives",
    "AlbertEncoder": "albert_keras.models.albert.albert_encoder",
    "LayerwiseLamb": "albert_keras.optimizers.optimizer",
    "LayerDistiller": "albert_keras.models.distillers.layer_distiller",
    "ChoiceScorer": "albert_keras.models.task_models.choice_scorer",
    "EncoderPretrainer": "albert_keras.models.pretrainers.encoder_pretrainer",
    "SpanExtractor": "albert_keras.models.task_models.span_extractor",
    "TokenTagger": "albert_keras.models.task_models.token_tagger",
    "Backbone": "albert_keras.models.backbone",
    "ConfigError": "albert_keras.config_dicts",
    "MobileBertConfig": "albert_keras.models.mobilebert.mobilebert_config",
    "DebertaConfig": "albert_keras.models.deberta.deberta_config",
    "DisentangledAttentionBlock": "albert_keras.models.deberta.disentangled_attention",
    "RelativeEmbedding": "albert_keras.models.deberta.relative_position",
    "MobileBertEncoder": "albert_keras.models.mobilebert.mobilebert_encoder",
    "ModernBertConfig": "albert_keras.models.modernbert.modernbert_config",
    "ModernBertEncoder": "albert_keras.models.modernbert.modernbert_encoder",
    "PRESETS": "albert_keras.presets",
    "ProgressiveDistiller": "albert_keras.models.distillers.progressive_distiller",
    "QuantizedDense": "albert_keras.layers.quantized_dense",
    "Tokenizer": "albert_keras.text.tokenizer",
    "WarmupPolynomialDecay": "albert_keras.optimizers.schedule",
    "count_parameters": "albert_keras.presets",
    "get_preset": "albert_keras.presets",
}
# The in-graph text layers are tf.text ops: loaded (and registered) on the
# TensorFlow backend only, so that the model code runs on JAX and torch
# machines that have no TensorFlow.
_TENSORFLOW_ONLY = {
    "SegmentPacker": "albert_keras.text.packer",
    "SentencePieceTokenizer": "albert_keras.text.sentencepiece_tokenizer",
    "WordPieceTokenizer": "albert_keras.text.wordpiece_tokenizer",
}
# The Python task classes read their data with tf.data on every backend:
# loaded with the package on TensorFlow, and on first use on JAX and torch
# (so that the model code alone imports no TensorFlow there).
_WITH_TF_DATA = {
    "MaskedLM": "albert_keras.tasks.masked_lm",
    "MultipleChoice": "albert_keras.tasks.choice.multiple_choice",
    "MultipleChoicePreprocessor": "albert_keras.tasks.preprocessor",
    "Pretrainer": "albert_keras.training.pretrainer",
    "QuestionAnswerer": "albert_keras.tasks.qa.question_answerer",
    "QuestionAnswererPreprocessor": "albert_keras.tasks.preprocessor",
    "ShrinkConfig": "albert_keras.drivers.shrink_config",
    "TaskPreprocessor": "albert_keras.tasks.preprocessor",
    "TextClassifier": "albert_keras.tasks.classify.text_classifier",
    "TextClassifierPreprocessor": "albert_keras.tasks.preprocessor",
    "TextEmbedder": "albert_keras.tasks.text_embedder",
    "TextTask": "albert_keras.tasks.text_task",
    "TokenClassifier": "albert_keras.tasks.tag.token_classifier",
    "TokenClassifierPreprocessor": "albert_keras.tasks.preprocessor",
    "pretraining_data": "albert_keras.training.pretraining_inputs",
    "pretraining_inputs": "albert_keras.training.pretraining_inputs",
    "shrink": "albert_keras.drivers.shrink",
}
__all__ = sorted([*_PUBLIC, *_TENSORFLOW_ONLY, *_WITH_TF_DATA])
# The names the generic parts had before (they took any family's encoder but
# carried ALBERT's name): still importable, and registered with Keras under
# them too, so .keras files that saved them load.
_FORMER_NAMES = {
    "AlbertAdamW": "LayerwiseAdamW",
    "AlbertClassifier": "SequenceClassifier",
    "AlbertDiscriminator": "TokenDiscriminator",
    "AlbertDistiller": "Distiller",
    "AlbertElectraPretrainer": "ElectraPretrainer",
    "AlbertEmbedder": "SentenceEmbedder",
    "AlbertLamb": "LayerwiseLamb",
    "AlbertLayerDistiller": "LayerDistiller",
    "AlbertMultipleChoice": "ChoiceScorer",
    "AlbertPacker": "SegmentPacker",
    "AlbertPretrainer": "EncoderPretrainer",
    "AlbertQuestionAnswerer": "SpanExtractor",
    "AlbertTokenClassifier": "TokenTagger",
}


def load_all():
    """Imports every public name, registering each Keras class by its name.

    Runs when the package is imported; the command line calls it itself once
    its flags are parsed (see below).
    """
    package = sys.modules[__name__]
    names = dict(_PUBLIC)
    if importlib.import_module("keras").backend.backend() == "tensorflow":
        names.update(_TENSORFLOW_ONLY)
        names.update(_WITH_TF_DATA)
    for name, module in names.items():
        setattr(package, name, getattr(importlib.import_module(module), name))
    keep_former_name = importlib.import_module("albert_keras.saving").keep_former_name
    for former, name in _FORMER_NAMES.items():
        if name in names:
            setattr(package, former, keep_former_name(getattr(package, name), former))


def __getattr__(name):
    # only reached for names load_all did not set
    if name in _FORMER_NAMES:
        return getattr(sys.modules[__name__], _FORMER_NAMES[name])
    if name in _WITH_TF_DATA:
        value = getattr(importlib.import_module(_WITH_TF_DATA[name]), name)
        setattr(sys.modules[__name__], name, value)
        return value
    if name in _TENSORFLOW_ONLY:
        backend = importlib.import_module("keras").backend.backend()
        raise AttributeError(f"albert_keras.{name} runs on TensorFlow only (tf.text ops); "
                             f"this process runs Keras on {backend}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# The ``albert-keras`` command (module ``albert_keras_cli``, outside this
# package) builds its parser from this package's light config modules and must
# answer ``--help`` without importing Keras, so while it is loading, the
# package leaves loading to the command; every other import loads everything.
if "albert_keras_cli" not in sys.modules:
    load_all()
