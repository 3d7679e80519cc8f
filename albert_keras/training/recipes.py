"""``--recipe``: which defaults fill what the user does not give.

A recipe is a function ``(pipeline, train_config) -> train_config``: the
shared ones in the ``RECIPES`` table, a family's own declared by its
``Family.recipes`` (ALBERT's settings, DeBERTa-v3's pretraining);
``resolve_recipe`` is the one entry, run once by
``run_pretraining`` before the settings are validated. Values the user
gives win over a recipe's either way.

Example:
>>> from albert_keras.training.pipeline_config import PipelineConfig
>>> from albert_keras.training.pretrain_config import PretrainConfig
>>> resolve_recipe(PipelineConfig(), PretrainConfig()).objective
'mlm'
"""

import dataclasses
import logging

from albert_keras.families import attribute
from albert_keras.families import family_of
from albert_keras.families import family_recipes
from albert_keras.families import preset_config
from albert_keras.options import name_of
from albert_keras.training.pipeline_config import SHARED_RECIPES
from albert_keras.training.pipeline_config import PipelineConfig
from albert_keras.training.pipeline_config import recipe_names
from albert_keras.training.pretrain_config import DEFAULT_TOTAL_STEPS
from albert_keras.training.pretrain_config import SMALL_CORPUS_LAYERS
from albert_keras.training.pretrain_config import SMALL_CORPUS_LEARNING_RATE
from albert_keras.training.pretrain_config import SMALL_CORPUS_MASK_RATE
from albert_keras.training.pretrain_config import SMALL_CORPUS_TOTAL_STEPS
from albert_keras.training.pretrain_config import SMALL_CORPUS_WARMUP_STEPS
from albert_keras.training.pretrain_config import PretrainConfig

logger = logging.getLogger(__name__)


def resolve_recipe(pipeline, train_config):
    """``train_config`` with the recipe's defaults filled in."""
    recipe = pipeline.recipe
    if recipe == "main_job":  # the old name, accepted for one release
        logger.info("--recipe main_job is now called small_corpus; the old name goes in a "
                    "later release")
        recipe = "small_corpus"
    if recipe in RECIPES:
        return RECIPES[recipe](pipeline, train_config)
    declared = family_recipes()
    if recipe not in declared:
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} {recipe!r}: "
                         f"expected one of {', '.join(recipe_names())}")
    return attribute(declared[recipe])(pipeline, train_config)


def auto_recipe(pipeline, train_config):
    """The small-corpus recipe on the corpus it was measured on (no
    ``--input``, ``--data`` or ``--init``), ALBERT's settings otherwise."""
    if pipeline.input or pipeline.data or train_config.init:
        # said out loud: a user who reuses the small-corpus recipe's data folder would
        # otherwise get a different, weaker recipe without knowing it
        given = "--input" if pipeline.input else "--data" if pipeline.data else "--init"
        logger.info(f"with {given}: ALBERT's settings for what is not given "
                    f"(--recipe small_corpus for the small-corpus recipe's)")
        return train_config
    return small_corpus_recipe(pipeline, train_config)


def refuse_init(name, train_config):
    """A recipe that picks the architecture cannot continue a model that has one."""
    if train_config.init:
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} {name} makes a new model; "
                         f"it cannot continue {name_of(PretrainConfig, 'init')} {train_config.init}")


def small_corpus_recipe(pipeline, train_config):
    """The small-corpus recipe, measured best on the built-in sotu corpus.

    Each choice, and why (the measurements are in
    docs/reports/small-corpus-recipe.md):

    * ``auto`` becomes ``mlm`` on the sentence-pair data: on a corpus this
      small the sentence-order task takes steps from the masked LM without
      teaching the tasks anything.
    * ``position_bias`` defaults to ``alibi`` with ``alibi_slope_scale`` 4
      where the family has learned positions: without it the model sits at
      the frequent-token plateau for the whole budget
      (docs/reports/alibi-and-plateau.md).
    * The learning rate and warmup, when not given, are 1.6e-2 and 150 steps.
    * ``mlm`` and ``rtd`` training batches mask 40% of the tokens: each step
      learns from more than twice the targets; a family whose authors
      pretrained at another rate masks that (ModernBERT: 30%).
    * With ``mlm`` on ``albert_tiny`` and no depth given: 2 shared layers and
      1,600 steps, the same weights at half the compute per token.
    """
    refuse_init("small_corpus", train_config)
    objective = "mlm" if train_config.objective == "auto" else train_config.objective
    overrides, total_steps = _small_corpus_depth(objective, train_config)
    if hasattr(preset_config(train_config.preset), "position_bias"):
        # a family with learned positions (ModernBERT's are rotary: none to replace)
        overrides.setdefault("position_bias", "alibi")
        if overrides["position_bias"] == "alibi":
            overrides.setdefault("alibi_slope_scale", 4.0)
    mask_rate = train_config.mask_rate
    # measured for mlm and rtd (docs/reports/small-corpus-recipe.md); mlm_sop
    # keeps the data's rate
    if mask_rate is None and train_config.dynamic_masking and objective in ("mlm", "rtd"):
        mask_rate = (family_of(preset_config(train_config.preset)).mask_rate
                     or SMALL_CORPUS_MASK_RATE)
    train_config = train_config.with_defaults(SMALL_CORPUS_LEARNING_RATE, SMALL_CORPUS_WARMUP_STEPS,
                                              total_steps)
    return dataclasses.replace(train_config, objective=objective, model_overrides=overrides,
                               mask_rate=mask_rate)


def _small_corpus_depth(objective, train_config):
    """``(model overrides, total steps)``: the 2-layer, 1,600-step model only
    where it was measured (mlm on albert_tiny with no depth given); another
    objective, preset or depth keeps 800 steps, so that a larger model does
    not run twice as long."""
    overrides = dict(train_config.model_overrides or {})
    if (objective == "mlm" and train_config.preset == "albert_tiny"
            and "num_hidden_layers" not in overrides):
        overrides["num_hidden_layers"] = SMALL_CORPUS_LAYERS
        return overrides, SMALL_CORPUS_TOTAL_STEPS
    if objective != "mlm" and "num_hidden_layers" not in overrides:
        # said out loud: comparing objectives "with the small-corpus recipe"
        # otherwise compares a 4-layer model against the small-corpus recipe's 2 layers
        logger.info(f"--recipe small_corpus with --objective {objective}: {train_config.preset}'s "
                    f"own depth; the small-corpus recipe's {SMALL_CORPUS_LAYERS} layers and "
                    f"{SMALL_CORPUS_TOTAL_STEPS:,} steps are mlm's (--model-overrides "
                    f"'{{\"num_hidden_layers\": {SMALL_CORPUS_LAYERS}}}' --steps "
                    f"{SMALL_CORPUS_TOTAL_STEPS} for the same model)")
    return overrides, DEFAULT_TOTAL_STEPS


# name -> recipe: the shared ones (a family's own, its ``recipes``, are found
# in the registry when chosen; the names, and so the flag's choices, are
# pipeline_config's)
RECIPES = {"auto": auto_recipe, "small_corpus": small_corpus_recipe}
if tuple(RECIPES) != SHARED_RECIPES:  # pipeline_config must stay free of this module's imports
    raise ImportError(f"recipes {tuple(RECIPES)} differ from --recipe's shared choices "
                      f"{SHARED_RECIPES}")
