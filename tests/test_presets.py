import keras_hub
import pytest

from albert_keras import AlbertEncoder
from albert_keras.presets import PRESETS
from albert_keras.presets import count_parameters
from albert_keras.presets import get_preset

# keras-hub's AlbertBackbone counts (vocabulary 30000), from the issue.
KERAS_HUB_COUNTS = {
    "albert_base": 11_683_584,
    "albert_large": 17_683_968,
    "albert_xlarge": 58_724_864,
    "albert_xxlarge": 222_595_584,
}


@pytest.mark.parametrize("name", sorted(KERAS_HUB_COUNTS))
def test_published_counts(name):
    assert count_parameters(get_preset(name, vocab_size=30000)) == KERAS_HUB_COUNTS[name]


def test_base_count_equals_a_built_keras_hub_backbone_and_ours():
    c = get_preset("albert_base")
    theirs = keras_hub.models.AlbertBackbone(
        vocabulary_size=c.vocab_size,
        num_layers=c.num_hidden_layers,
        num_heads=c.num_attention_heads,
        embedding_dim=c.embedding_size,
        hidden_dim=c.hidden_size,
        intermediate_dim=c.intermediate_size,
    ).count_params()
    assert AlbertEncoder(c).count_params() == theirs == count_parameters(c)


def test_paper_table_4_sharing_variants():
    """ALBERT-base, E = 128: paper Table 4 says 12M / 64M / 38M / 89M.

    The paper's not-shared figures leave out the pooler (0.59M): its Table 3
    gives 87M / 89M / 93M / 108M for E = 64 / 128 / 256 / 768, and our counts
    without the pooler are 87.05M / 89.06M / 93.06M / 108.49M, while with it
    they are 0.6M higher on every row. Its shared figures include the pooler.
    """
    def millions(sharing, **kw):
        return count_parameters(get_preset("albert_base", sharing=sharing), **kw) / 1e6

    assert abs(millions("all") - 12) <= 0.5
    assert abs(millions("attention") - 64) <= 0.5
    assert abs(millions("ffn") - 38) <= 0.5
    assert abs(millions("none", with_pooler=False) - 89) <= 0.5
    for e, paper in ((64, 87), (128, 89), (256, 93), (768, 108)):
        c = get_preset("albert_base", sharing="none", embedding_size=e)
        assert abs(count_parameters(c, with_pooler=False) / 1e6 - paper) <= 0.5


@pytest.mark.parametrize("name", ["albert_tiny", "bert_tiny"])
def test_built_models_match_the_formula(name):
    c = get_preset(name)
    assert AlbertEncoder(c).count_params() == count_parameters(c)


def test_bert_presets_are_bert():
    for name in ("bert_base", "bert_tiny"):
        c = get_preset(name)
        assert c.sharing == "none" and c.embedding_size == c.hidden_size
        assert c.hidden_act == "gelu" and c.is_bert_layout
    assert count_parameters(get_preset("bert_base")) == 109_482_240  # HF BertModel


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        get_preset("albert_huge")
    assert set(PRESETS) >= {"albert_tiny", "bert_tiny", "albert_xxlarge"}


@pytest.mark.parametrize("overrides", [{}, {"share_att_key": False},
                                       {"pos_att_type": "c2p", "share_att_key": False},
                                       {"norm_rel_ebd": "none", "position_buckets": -1}])
def test_deberta_formula_matches_a_built_model(overrides):
    c = get_preset("deberta_v3_tiny", **overrides)
    assert AlbertEncoder(c).count_params() == count_parameters(c)


def test_deberta_v3_base_has_the_published_size():
    """microsoft/deberta-v3-base's model card: 86M backbone parameters and
    98M in the embedding layer (a 128K vocabulary). Ours also holds a
    512 x 768 position table (the enhanced mask decoder's) and the pooler,
    0.98M together, which the card leaves out."""
    total = count_parameters(get_preset("deberta_v3_base")) / 1e6
    assert abs(total - (86 + 98) - 0.98) < 1.0


def test_every_preset_builds_its_family():
    from albert_keras.families import family_of

    assert {family_of(get_preset(name)).name for name in PRESETS} == {"albert", "deberta",
                                                                      "mobilebert", "modernbert"}
    assert family_of(get_preset("mobilebert_tiny")).name == "mobilebert"
    assert family_of(get_preset("deberta_v3_small")).name == "deberta"
    assert family_of(get_preset("bert_base")).name == "albert"
