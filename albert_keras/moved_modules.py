"""Module paths that moved, still importable by their former names.

Code written against an earlier release imports, say,
``albert_keras.models.sequence_classifier``; the module now lives in
``albert_keras.models.task_models``. A finder on ``sys.meta_path`` answers
each former name with a module that holds the new module's names (the same
objects: classes keep their identity, ``isinstance`` and Keras' registered
names are unchanged), importing the new module only when the former name
is imported. ``.keras`` files need none of this: Keras finds our classes by
their registered names (``albert_keras>SequenceClassifier``), never by a
module path.

This table's job is to name modules (as ``albert_keras._PUBLIC`` does).

Example:
>>> install()
>>> from albert_keras.models.layer_map import uniform_layer_map
>>> uniform_layer_map.__module__
'albert_keras.models.distillers.layer_map'
"""

import importlib
import importlib.abc
import importlib.util
import sys

# former module -> its module now
MOVED = {
    **{f"albert_keras.models.{name}": f"albert_keras.models.task_models.{name}" for name in (
        "sequence_classifier", "token_tagger", "span_extractor", "choice_scorer",
        "sentence_embedder", "task_model", "hf_task_model", "output_divergence")},
    **{f"albert_keras.models.{name}": f"albert_keras.models.pretrainers.{name}" for name in (
        "encoder_pretrainer", "electra_pretrainer", "token_discriminator")},
    **{f"albert_keras.models.{name}": f"albert_keras.models.distillers.{name}" for name in (
        "distiller", "layer_distiller", "progressive_distiller", "layer_map")},
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a former module name; loads it as a view of the new module."""

    def find_spec(self, name, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None  # a plain module, filled below

    def exec_module(self, module):
        moved = importlib.import_module(MOVED[module.__name__])
        module.__dict__.update({k: v for k, v in vars(moved).items()
                                if not k.startswith("__")})
        module.__doc__ = f"Moved to ``{moved.__name__}``; this name keeps old imports working."


def install():
    """Puts the finder on ``sys.meta_path`` (once; the package does it on
    import)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
