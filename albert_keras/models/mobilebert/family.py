"""The MobileBERT family's registration and presets.

``mobilebert`` is ``google/mobilebert-uncased``'s shape, ``mobilebert_tiny``
the paper's MobileBERT-TINY (Table 1: two FFNs per block, attention on the
bottleneck), ``ib_bert`` the paper's IB-BERT-LARGE teacher (512 between
blocks, 1024 inside, FFN 4096, LayerNorm and gelu) and ``mobilebert_shared``
the published shape with ALBERT's all-shared blocks (one set of block
weights for the 24 layers). ``mobilebert_qat`` is the published shape in the
form google-research trains for quantization-aware training
(``uncased_L-24_H-128_B-512_A-4_F-4_OPT_QAT.json``): relu6 and NoNorm, so every
activation has a bounded range and no norm needs statistics at int8.
"""

from albert_keras.families import Family
from albert_keras.families import register_family
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig

PRESETS = {
    # google/mobilebert-uncased: the config's defaults, and its pooled output
    # is the raw [CLS] row (classifier_activation false in the released config)
    "mobilebert": dict(classifier_activation=False),
    # Sun et al. 2020, Table 1: MobileBERT-TINY, 15.1M parameters
    "mobilebert_tiny": dict(classifier_activation=False, intra_bottleneck_size=128, intermediate_size=512,
                            num_feedforward_networks=2, use_bottleneck_attention=True,
                            key_query_shared_bottleneck=False),
    # IB-BERT-LARGE, the teacher: 293M parameters
    "ib_bert": dict(intra_bottleneck_size=1024, intermediate_size=4096,
                    num_feedforward_networks=1, hidden_act="gelu",
                    normalization_type="layer_norm", key_query_shared_bottleneck=False,
                    use_bottleneck_attention=False),
    "mobilebert_shared": dict(classifier_activation=False, num_hidden_groups=1),
    "mobilebert_qat": dict(classifier_activation=False, hidden_act="relu6"),
}

FAMILY = register_family(Family(
    name="mobilebert",
    config_class=MobileBertConfig,
    backbone="albert_keras.models.mobilebert.mobilebert_encoder:MobileBertEncoder",
    presets=PRESETS,
    hf_model_types=("mobilebert",),
    checkpoints="albert_keras.models.mobilebert.checkpoints",
    tf1="albert_keras.models.mobilebert.tf1",
    layout="albert_keras.models.mobilebert.layout:LAYOUT_RULES",
))
