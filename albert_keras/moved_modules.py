"""Module paths that moved, still importable by their former names.

Code written against an earlier release imports, say,
``albert_keras.models.sequence_classifier`` or
``albert_keras.tasks.finetune``; those modules now live in
``albert_keras.models.task_models`` and ``albert_keras.drivers``. A finder
on ``sys.meta_path`` answers each former name with the module itself,
imported when the former name is (so classes keep their identity, and
monkeypatching the former name patches the code that runs). ``.keras``
files need none of this: Keras finds our classes by
their registered names (``albert_keras>SequenceClassifier``), never by a
module path.

This table's job is to name modules (as ``albert_keras._PUBLIC`` does).

Example:
>>> install()
>>> import albert_keras.models.layer_map as former
>>> former.__name__
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
    **{f"albert_keras.tasks.{name}": f"albert_keras.drivers.{name}" for name in (
        "finetune", "distill", "distill_config", "shrink", "shrink_baselines", "shrink_config",
        "shrink_picture", "shrink_table", "inference")},
    # a task's modules in its package (the former ``tasks/classify.py`` and
    # the other units are those packages now, which export their names)
    **{f"albert_keras.tasks.{name}": f"albert_keras.tasks.{task}.{name}" for name, task in (
        ("text_classifier", "classify"), ("token_classifier", "tag"), ("tag_features", "tag"),
        ("question_answerer", "qa"), ("qa_features", "qa"), ("multiple_choice", "choice"))},
}


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a former module name; loads it as the module it moved to."""

    def find_spec(self, name, path=None, target=None):
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec):
        return None  # a plain module, filled below

    def exec_module(self, module):
        # the import system returns what sys.modules holds after this call,
        # so the former name is the module itself (monkeypatching it patches
        # the code that runs)
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


def install():
    """Puts the finder on ``sys.meta_path`` (once; the package does it on
    import)."""
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())
