import dataclasses

import pytest

from albert_keras import families
from albert_keras.families import Family
from albert_keras.families import family_for_hf
from albert_keras.families import preset_config
from albert_keras.families import register_family


@dataclasses.dataclass
class _Config:
    vocab_size: int = 10


def test_a_family_registered_later_is_found_by_its_preset_and_config():
    family = register_family(Family("registry_test", _Config, "builtins:dict",
                                    presets={"registry_test_small": {"vocab_size": 7}}))
    try:
        assert preset_config("registry_test_small").vocab_size == 7
        assert families.family_of(_Config()) is family
        assert "registry_test_small" in families.preset_names()
    finally:
        families._FAMILIES.pop("registry_test")


def test_a_preset_name_or_hf_type_is_one_familys():
    with pytest.raises(ValueError, match="preset 'albert_base' belongs to family 'albert'"):
        register_family(Family("clash", _Config, "builtins:dict",
                               presets={"albert_base": {}}))
    with pytest.raises(ValueError, match="model_type 'bert' belongs to family 'albert'"):
        register_family(Family("clash", _Config, "builtins:dict", hf_model_types=("bert",)))
    assert "clash" not in families._FAMILIES


def test_unknown_names_are_one_line_errors():
    with pytest.raises(ValueError, match=r"unknown preset 'albert_huge'; choose one of \["):
        preset_config("albert_huge")
    with pytest.raises(ValueError, match="config.json: model_type 'gpt2' is not supported; "
                                         "supported: albert, bert, deberta-v2, electra"):
        family_for_hf("gpt2")
    with pytest.raises(ValueError, match="no registered model family takes a _Config"):
        families.family_of(_Config())
