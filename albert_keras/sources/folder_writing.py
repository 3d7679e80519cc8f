"""Writing our model folders: a pretraining run's (``pretrainer.keras``,
``encoder.keras``, the tokenizer, ``config.json``) and a fine-tuned one's
(``model.keras``, the tokenizer, ``task.json``, its metrics and settings).
``albert_keras.sources`` reads them."""

import os

from albert_keras.files import write_json
from albert_keras.saving import save_model
from albert_keras.sources.layout import CONFIG_FILE
from albert_keras.sources.layout import DISCRIMINATOR_FILE
from albert_keras.sources.layout import ENCODER_FILE
from albert_keras.sources.layout import GENERATOR_FILE
from albert_keras.sources.layout import METRICS_FILE
from albert_keras.sources.layout import PRETRAINER_FILE
from albert_keras.sources.layout import TASK_FILE
from albert_keras.sources.layout import TASK_MODEL_FILE
from albert_keras.sources.layout import TRAIN_CONFIG_FILE
from albert_keras.sources.tokenizers import carry_tokenizer
from albert_keras.sources.tokenizers import write_tokenizer


def write_pretraining_folder(folder, pretrainer, tokenizer):
    """``pretrainer.keras``, ``encoder.keras``, the tokenizer and ``config.json``.

    ``encoder.keras`` is what fine-tuning and export read: for ELECTRA's
    objective the discriminator, its word table folded in
    (``standalone_encoder``); ``pretrainer.keras`` keeps the generator too,
    for continued pretraining, and ``discriminator.keras`` and
    ``generator.keras`` hold each half alone (they convert to HF
    ``ElectraForPreTraining`` and ``ElectraForMaskedLM``).
    """
    carry_tokenizer(pretrainer, tokenizer)
    save_model(pretrainer, os.path.join(folder, PRETRAINER_FILE), overwrite=True)
    standalone = getattr(pretrainer, "standalone_encoder", None)
    encoder = carry_tokenizer(standalone() if standalone else pretrainer.encoder, tokenizer)
    save_model(encoder, os.path.join(folder, ENCODER_FILE), overwrite=True)
    if hasattr(pretrainer, "standalone_generator"):  # ELECTRA: each half on its own,
        # for `convert` to HF ElectraForPreTraining and ElectraForMaskedLM
        save_model(carry_tokenizer(pretrainer.standalone_discriminator(), tokenizer),
                   os.path.join(folder, DISCRIMINATOR_FILE), overwrite=True)
        save_model(carry_tokenizer(pretrainer.standalone_generator(), tokenizer),
                   os.path.join(folder, GENERATOR_FILE), overwrite=True)
    write_tokenizer(folder, tokenizer)
    write_json(os.path.join(folder, CONFIG_FILE), pretrainer.config.to_dict())  # any family


def write_task_folder(folder, model, tokenizer, spec, metrics, train_config):
    """``model.keras``, the tokenizer, ``task.json``, ``metrics.json``, ``train_config.json``."""
    carry_tokenizer(model, tokenizer)
    model.task_spec = spec
    save_model(model, os.path.join(folder, TASK_MODEL_FILE))
    write_tokenizer(folder, tokenizer)
    write_json(os.path.join(folder, TASK_FILE), spec)
    write_json(os.path.join(folder, METRICS_FILE), metrics)
    write_json(os.path.join(folder, TRAIN_CONFIG_FILE), train_config)
