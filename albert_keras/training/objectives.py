"""Pretraining objectives by name. Adding one is a module and a line here."""

from albert_keras.training.mlm_sop import MlmNsp
from albert_keras.training.mlm_sop import MlmSop

OBJECTIVES = {cls.name: cls for cls in (MlmSop, MlmNsp)}
CHOICES = ("auto", *OBJECTIVES)


def get_objective(name, manifest):
    """The objective ``name``; ``auto`` follows the data (NSP data -> ``mlm_nsp``)."""
    if name == "auto":
        name = "mlm_nsp" if manifest["config"].get("random_next") else "mlm_sop"
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(OBJECTIVES)}")
    return OBJECTIVES[name]()
