"""``--recipe deberta_v3``: DeBERTa-v3's pretraining on the small-corpus
recipe's budget."""

import dataclasses
import logging

from albert_keras.families import family_named
from albert_keras.options import name_of
from albert_keras.training.pipeline_config import PipelineConfig
from albert_keras.training.pretrain_config import DEFAULT_TOTAL_STEPS
from albert_keras.training.pretrain_config import SMALL_CORPUS_MASK_RATE
from albert_keras.training.pretrain_config import SMALL_CORPUS_WARMUP_STEPS
from albert_keras.training.recipes import refuse_init

logger = logging.getLogger(__name__)

# At the small-corpus recipe's 1.6e-2 the discriminator collapsed on the built-in
# corpus (held-out RTD AUC 0.50, one vector for every token, at 400 and 800 steps);
# at 4e-3 it learned in warmup and fell back (AUC 0.62); at 1e-3 it kept learning
# (AUC 0.82 at 400 steps). docs/reports/deberta.md has the search.
DEBERTA_V3_LEARNING_RATE = 1e-3
DEBERTA_V3_SHORTFALL = (
    "--recipe deberta_v3 learns on the built-in corpus at its learning rate (1e-3; held-out "
    "RTD AUC 0.60 at its 800 steps, 0.82 at 400) but fine-tuned below --recipe small_corpus "
    "with DeBERTa's encoder there (sotu century 0.779 against 0.865, party 0.566 against "
    "0.568; 800 pretraining steps against 1,600; docs/reports/deberta.md)")


def deberta_v3_recipe(pipeline, train_config):
    """DeBERTa-v3's pretraining on the small-corpus recipe's budget.

    ``rtd`` (ELECTRA's replaced-token detection) with ``gdes`` embedding
    sharing, on an encoder with DeBERTa-v3's disentangled attention (the
    DeBERTa family's ``recipe_fields``; ALBERT's sharing of the preset
    stays). The
    warmup, steps and 40% masking are the small-corpus recipe's for
    ``rtd``; the learning rate is 1e-3, since at the small-corpus recipe's
    1.6e-2 this encoder's discriminator collapsed on the built-in corpus. It
    learns at 1e-3 but still fine-tunes below the small-corpus recipe with
    DeBERTa's encoder there, which choosing it says.

    Args:
        pipeline: the run's ``PipelineConfig`` (unused: the recipe sets
            training values only).
        train_config: the run's ``PretrainConfig``, as the user gave it.

    Example:
    >>> from albert_keras.training.pretrain_config import PretrainConfig
    >>> deberta_v3_recipe(None, PretrainConfig(learning_rate=1e-3)).objective
    'rtd'
    """
    refuse_init("deberta_v3", train_config)
    if train_config.learning_rate is None:
        # measured, docs/reports/deberta.md: said when chosen
        logger.warning(DEBERTA_V3_SHORTFALL)
    if train_config.objective not in ("auto", "rtd"):
        raise ValueError(f"{name_of(PipelineConfig, 'recipe')} deberta_v3 trains --objective "
                         f"rtd, not {train_config.objective}")
    overrides = {**family_named("deberta").recipe_fields, **(train_config.model_overrides or {})}
    sharing = train_config.embedding_sharing
    mask_rate = train_config.mask_rate
    if mask_rate is None and train_config.dynamic_masking:
        mask_rate = SMALL_CORPUS_MASK_RATE
    train_config = train_config.with_defaults(DEBERTA_V3_LEARNING_RATE, SMALL_CORPUS_WARMUP_STEPS,
                                              DEFAULT_TOTAL_STEPS)
    return dataclasses.replace(train_config, objective="rtd", model_overrides=overrides,
                               embedding_sharing="gdes" if sharing == "tied" else sharing,
                               mask_rate=mask_rate)
