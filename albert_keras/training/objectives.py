"""Pretraining objectives by name. Adding one is a module and a line here.

Each entry is ``"module:Class"`` and is imported on first use, so the names
(``--objective`` choices, ``--help``) cost no Keras or TensorFlow import.
"""

import importlib

OBJECTIVES = {
    "mlm_sop": "albert_keras.training.mlm_sop:MlmSop",
    "mlm_nsp": "albert_keras.training.mlm_sop:MlmNsp",
    "mlm": "albert_keras.training.mlm_sop:Mlm",
    "rtd": "albert_keras.training.rtd:Rtd",
    "distill": "albert_keras.training.distill_objective:ProgressiveTransfer",
}
CHOICES = ("auto", *OBJECTIVES)


def objective_class(name):
    """The ``Objective`` subclass registered as ``name``."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; known: {', '.join(OBJECTIVES)}")
    module, cls = OBJECTIVES[name].split(":")
    return getattr(importlib.import_module(module), cls)


def get_objective(name, manifest, train_config=None):
    """The objective ``name``; ``auto`` follows the data (NSP data -> ``mlm_nsp``)."""
    if name == "auto":
        name = "mlm_nsp" if manifest["config"].get("random_next") else "mlm_sop"
    random_next = bool(manifest["config"].get("random_next"))
    if name in ("mlm_sop", "mlm_nsp") and (name == "mlm_nsp") != random_next:
        made, wanted = ("next-sentence (--nsp)", "sentence-order") if random_next else \
            ("sentence-order", "next-sentence (--nsp)")
        raise ValueError(f"--objective {name} needs {wanted} pairs; this data has {made} "
                         "pairs (--objective auto picks the data's own)")
    objective = objective_class(name)(train_config)
    if objective.needs_sentence_labels and \
            manifest["config"].get("packing") == "full_sentences":
        raise ValueError(
            f"objective {name} trains on sentence-order labels, which data made with "
            "--packing full_sentences does not have; use --objective mlm or rtd (without "
            "--rtd-sop), or data made with --packing pairs")
    return objective
