"""DeBERTa-v2/v3 in HF transformers folders, in and out: ``DebertaV2Model``,
``DebertaV2ForMaskedLM`` (both head layouts) and every ``...For<Task>``
class as our task model (prefix ``deberta.`` optional).

DeBERTa runs ALBERT's encoder, so its folders go through ALBERT's HF reader
and writer (``load_hf_layouts``, ``save_hf_layout``) with this layout: its
config dialect (``hf_config``), its tensor names (``weight_names``), its
heads outside the ``deberta.`` prefix.

Example:
>>> LAYOUT.architectures[0]
'DebertaV2Model'
"""

from albert_keras.convert import hf_heads
from albert_keras.convert.conversion_error import ConversionError
from albert_keras.convert.hf import HF_GENERIC_KEYS
from albert_keras.models.albert.checkpoints import PRETRAINING_HEAD_PREFIXES
from albert_keras.models.albert.checkpoints import HfLayout
from albert_keras.models.albert.checkpoints import load_hf_layouts
from albert_keras.models.albert.checkpoints import save_hf_layout
from albert_keras.models.deberta.hf_config import MODEL_TYPE
from albert_keras.models.deberta.hf_config import from_deberta_dict
from albert_keras.models.deberta.hf_config import to_deberta_dict
from albert_keras.models.deberta.weight_names import hf_deberta_names

# DeBERTa-v3 discriminator checkpoints carry the replaced-token head
# (``mask_predictions``), which HF's DeBERTa skips too.
_SKIPPED_PREFIX = "mask_predictions."


def _names(config, tensors=None):
    """The name table, with the masked-LM head's layout read from the
    folder's tensors (HF writes ``cls.predictions``, its default)."""
    legacy = tensors is None or not any(k.startswith("lm_predictions.") for k in tensors)
    return hf_deberta_names(config, legacy_head=legacy)


def _skipped_by_hf(config, tensors):
    """Tensors HF's own DeBERTa leaves unused: ``mask_predictions``, and the
    relative table's LayerNorm when there is no relative attention."""
    out = {k for k in tensors if k.startswith(_SKIPPED_PREFIX)}
    if not config.relative_attention:
        out |= {"encoder.LayerNorm.weight", "encoder.LayerNorm.bias"}
    return out


LAYOUT = HfLayout(
    model_type=MODEL_TYPE, prefix="deberta.", names=_names,
    architectures=("DebertaV2Model", "DebertaV2ForMaskedLM", None), class_prefix="DebertaV2",
    tied=("cls.predictions.decoder.weight", "cls.predictions.decoder.bias"),
    output_bias="cls.predictions.bias",
    read_config=lambda data, source: from_deberta_dict(data, source, HF_GENERIC_KEYS),
    write_config=to_deberta_dict,
    # its sequence classifier keeps its ContextPooler and classifier outside
    # the ``deberta.`` prefix (BERT's pooler is inside ``bert.``)
    head_prefixes=PRETRAINING_HEAD_PREFIXES + ("pooler.", "classifier."),
    # HF's encoder has no pooler: the pooler is the head's own ContextPooler
    pooled=hf_heads.reads_pooler,
    skipped=_skipped_by_hf,
    headless_classifier=True,
)


def load_hf(folder, strict=True, dtype=None, only_encoder=None):
    """``albert_keras.convert.load_hf`` for DeBERTa-v2/v3 folders: the task
    model of a ``...For<Task>`` folder, an ``EncoderPretrainer`` for a
    masked LM (either head layout), a ``SequenceClassifier`` for a
    classifier folder without ``architectures``, else the encoder; with the
    report of what was loaded."""
    return load_hf_layouts({MODEL_TYPE: LAYOUT}, folder, strict, dtype, only_encoder)


def save_hf(model, folder, overwrite=False, model_type=None):
    """Writes a DeBERTa ``model`` as ``DebertaV2Model``,
    ``DebertaV2ForMaskedLM`` (HF's default head layout) or its task's
    ``DebertaV2For<Task>`` class. A shared or factorized DeBERTa has no HF
    form and is refused."""
    if model_type not in (None, MODEL_TYPE):
        raise ConversionError(f"a DeBERTa model is written as model_type {MODEL_TYPE}, "
                              f"not {model_type!r}")
    return save_hf_layout(LAYOUT, model, folder, overwrite)
