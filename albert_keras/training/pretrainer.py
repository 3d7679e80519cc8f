"""``Pretrainer``: pretraining (or continued pretraining) from Python."""

import dataclasses
import math
import os
import tempfile

import keras
import tensorflow as tf

from albert_keras.data.reader import read_manifest
from albert_keras.families import build_backbone
from albert_keras.families import preset_config
from albert_keras.files import write_json
from albert_keras.files import writing_into
from albert_keras.models.backbone import is_backbone
from albert_keras.models.backbone import rebuilt
from albert_keras.optimizers.optimizer import build_optimizer
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.options import config_from_keywords
from albert_keras.precision import global_policy
from albert_keras.precision import resolve_precision
from albert_keras.saving import load_model
from albert_keras.sources import checkpoint_reader
from albert_keras.sources.folder_writing import write_pretraining_folder
from albert_keras.sources.layout import ENCODER_FILE
from albert_keras.sources.layout import PRETRAINER_FILE
from albert_keras.sources.layout import TRAIN_CONFIG_FILE
from albert_keras.sources.layout import model_file
from albert_keras.text.tokenizer import Tokenizer
from albert_keras.training.datasets import train_dataset
from albert_keras.training.objectives import get_objective
from albert_keras.training.pretrain_config import PretrainConfig
from albert_keras.training.pretraining_inputs import pretraining_data
from albert_keras.training.strategy import check_layout
from albert_keras.training.unused_weights import unused_pooler_quiet


class Pretrainer:
    """Pretrains an encoder with one objective (``mlm_sop``, ``mlm``, ``rtd``,
    ...) on raw documents or a data folder, with ``fit``.

    The model, optimizer (LAMB or AdamW with warmup and linear decay), input
    pipeline (dynamic masking) and saved folder are the ones
    ``albert-keras pretrain`` uses; ``save_to_preset`` writes the folder that
    ``TextClassifier.from_preset`` and ``albert-keras finetune --init`` read.
    ``model`` is the Keras model ``fit`` trains (built at the first ``fit``,
    when the data says which objective and how many steps).

    Args:
        encoder: the encoder to pretrain.
        tokenizer: its host tokenizer.
        settings: a ``PretrainConfig``.
        sequence_length: the examples' length when ``fit`` writes the data
            from documents (cut to the model's longest).
        source: a loaded pretrainer to take the heads from, or None.

    Example:
    >>> tok = Tokenizer.from_preset("spm.model")  # doctest: +SKIP
    >>> pretrainer = Pretrainer.from_preset("albert_tiny", tokenizer=tok)  # doctest: +SKIP
    >>> pretrainer.fit(documents, epochs=2, steps_per_epoch=100)  # doctest: +SKIP
    >>> pretrainer.save_to_preset("runs/pretrain")  # doctest: +SKIP
    """

    def __init__(self, encoder, tokenizer, settings, sequence_length=128, source=None):  # noqa: PLR0913 (the model, its tokenizer and the run's settings)
        self.encoder, self.tokenizer, self.settings = encoder, tokenizer, settings
        self.sequence_length = min(int(sequence_length), encoder.config.max_position_embeddings)
        self.source, self.model, self.objective = source, None, None
        # a head built at fit, and the dataset, go on the devices of the
        # strategy the object was made under (Colab's TPU, Mirrored)
        self.strategy = tf.distribute.get_strategy()
        self._folders = []  # the data folders written from Python documents

    @classmethod
    def from_preset(cls, source, tokenizer=None, sequence_length=128, **settings):
        """A pretrainer on a new model (``source`` a preset name, such as
        ``albert_base``, and a ``tokenizer``) or on a model to continue (a
        model folder, an HF or TF1 checkpoint folder, a ``.keras`` file: its
        heads are kept where the objective has them).

        Args:
            source: a preset name or a model.
            tokenizer: a tokenizer object or file (a new model needs one).
            sequence_length: the examples' length when ``fit`` writes the
                data from documents.
            **settings: ``PretrainConfig`` fields (``objective``,
                ``batch_size``, ``learning_rate``, ``optimizer``,
                ``warmup_steps``, ``mask_rate``, ``seed``, ...).
        """
        cfg = config_from_keywords(PretrainConfig, settings, "Pretrainer.from_preset")
        if cfg.objective == "distill":  # its stages are the driver's phases
            raise ValueError("Pretrainer.from_preset: objective 'distill' trains in stages; run "
                             "albert_keras.training.pretrain.pretrain(data_dir, out_dir, "
                             "PretrainConfig(objective='distill', teacher=...)) or "
                             "`albert-keras pretrain --objective distill`")
        keras.utils.set_random_seed(cfg.seed)
        with global_policy(resolve_precision(cfg.precision)):  # as ``pretrain`` builds it
            return cls._made(os.fspath(source), tokenizer, sequence_length, cfg)

    @classmethod
    def _made(cls, source, tokenizer, sequence_length, cfg):
        if not os.path.exists(source):
            if tokenizer is None:
                raise ValueError(f"source {source!r}: a new model needs tokenizer=")
            tokenizer = _tokenizer(tokenizer)
            config = preset_config(source, vocab_size=tokenizer.vocabulary_size,
                                   **(cfg.model_overrides or {}))
            return cls(build_backbone(config), tokenizer, cfg, sequence_length)
        tokenizer = _tokenizer(tokenizer) if tokenizer is not None else Tokenizer.from_preset(
            source)
        model, found = init_source(source, tokenizer.vocabulary_size)
        # rebuilt so its variables belong to the strategy (and the policy)
        encoder = rebuilt(found, dtype=None, output_hidden_states=False,
                          quantize_aware=False, cls_only=False)
        encoder.set_weights(found.get_weights())
        return cls(encoder, tokenizer, cfg, sequence_length, source=model)

    def fit(self, x, epochs=1, steps_per_epoch=None, callbacks=None, verbose="auto", **kwargs):  # noqa: PLR0913 (Keras' fit arguments)
        """Trains on ``x``: a list of documents (strings) or corpus files,
        written to a data folder first with ``pretraining_data``, or a data
        folder. ``steps_per_epoch`` defaults to one pass over the examples.
        Returns Keras' history."""
        data_dir = self._data_folder(x)
        manifest = read_manifest(data_dir)
        if steps_per_epoch is None:
            steps_per_epoch = max(1, manifest["splits"]["train"]["examples"]
                                  // self.settings.batch_size)
        if self.model is None:
            self._build(manifest, epochs * steps_per_epoch, steps_per_epoch)
        return self.train_phase(data_dir, epochs, steps_per_epoch, callbacks=callbacks,
                                verbose=verbose, **kwargs)

    @classmethod
    def around(cls, model, objective, settings, strategy):
        """The object of a model already built for ``objective`` (what
        ``albert-keras pretrain`` resumed, continued or made)."""
        made = cls.__new__(cls)
        made.encoder, made.tokenizer = getattr(model, "encoder", None), None
        made.settings = settings
        made.sequence_length, made.source, made._folders = None, None, []
        made.model, made.objective, made.strategy = model, objective, strategy
        return made

    def train_phase(self, data_dir, epochs, steps_per_epoch=None, initial_epoch=0,  # noqa: PLR0913 (Keras' fit arguments, and where the data resumes)
                    skip_batches=None, **fit_options):
        """Trains on a data folder until epoch ``epochs``: the one training
        call of ``fit`` and of each ``albert-keras pretrain`` phase.

        Args:
            data_dir: a data folder.
            epochs: the epoch to stop after (Keras' ``epochs``).
            steps_per_epoch: steps per epoch (default: the settings').
            initial_epoch: the epoch to start from (a resumed run's).
            skip_batches: batches of the data to skip first, so that a
                resumed or continued run reads what an uninterrupted one
                would (default: the steps taken so far).
            **fit_options: more of Keras' ``fit`` arguments (callbacks,
                validation data, verbose).

        Returns:
            Keras' history.
        """
        if skip_batches is None:
            skip_batches = int(self.model.optimizer.iterations.numpy())
        dataset = train_dataset(self.strategy, os.fspath(data_dir), self.settings,
                                self.objective, skip_batches)
        # A fresh step function per call: traced for this data's static shape
        # (TPUs need one), not relaxed to an unknown length by retracing.
        self.model.train_function = None
        build_optimizer(self.model)  # the step is then traced once, not twice
        with unused_pooler_quiet():  # rtd's discriminator reads no pooler
            # the pipeline shuffles itself (Keras warns on shuffle=True with one)
            return self.model.fit(dataset, epochs=epochs, initial_epoch=initial_epoch,
                                  steps_per_epoch=steps_per_epoch or self.settings.steps_per_epoch,
                                  shuffle=False, **fit_options)

    def evaluate(self, data_dir, split="eval"):
        """The objective's held-out metrics on a data folder's split (every
        example once), with a trivial predictor's for comparison."""
        if self.model is None:
            raise ValueError("Pretrainer.evaluate: fit first (the model is built there)")
        metrics = self.objective.evaluate(self.model, os.fspath(data_dir), split)
        metrics.update(self.objective.baselines(os.fspath(data_dir)))
        return metrics

    def save_to_preset(self, folder, overwrite=False):
        """Writes the pretraining folder (``encoder.keras``,
        ``pretrainer.keras``, the tokenizer, ``config.json``,
        ``train_config.json``); nothing is left half-written, and no file
        the package did not write is removed.

        Args:
            folder: a new or empty folder, or a pretraining folder of ours
                (its files are replaced; the user's files beside them stay).
            overwrite: write into a folder that holds other files.
        """
        if self.model is None:
            raise ValueError(f"{folder}: fit first (there is no trained model to save)")
        with writing_into(os.fspath(folder), (PRETRAINER_FILE,), overwrite) as tmp:
            write_pretraining_folder(tmp, self.model, self.tokenizer)
            write_json(os.path.join(tmp, TRAIN_CONFIG_FILE),
                       {**dataclasses.asdict(self.settings), "objective": self.objective.name})
        return folder

    def _build(self, manifest, total_steps, steps_per_epoch):
        """The objective's compiled model, its schedule over ``total_steps``."""
        if manifest["vocab_size"] != self.encoder.config.vocab_size:
            raise ValueError(f"the data was made with {manifest['vocab_size']} pieces; the "
                             f"model has {self.encoder.config.vocab_size}")
        self.objective = get_objective(self.settings.objective, manifest, self.settings)
        cfg = dataclasses.replace(
            self.settings, total_steps=self.settings.total_steps or total_steps,
            # Keras rounds an epoch up to whole executions
            steps_per_execution=math.gcd(self.settings.steps_per_execution, steps_per_epoch),
        ).with_defaults()
        cfg.validate()
        self.settings = cfg
        with self.strategy.scope(), global_policy(resolve_precision(cfg.precision)):
            self.model = build_objective_model(self.objective, self.encoder, cfg)
            if self.source is not None:
                self.objective.continue_from(self.source, self.model)
        check_layout(self.strategy, self.model)

    def _data_folder(self, x):
        """The data folder of ``fit``'s ``x``."""
        if isinstance(x, (str, os.PathLike)) and os.path.isfile(
                os.path.join(os.fspath(x), "manifest.json")):
            return os.fspath(x)
        folder = tempfile.TemporaryDirectory(prefix="albert-keras-data-")
        self._folders.append(folder)  # removed with the object
        data_dir = os.path.join(folder.name, "data")
        pretraining_data(x, self.tokenizer, data_dir, max_seq_length=self.sequence_length)
        return data_dir


def _tokenizer(tokenizer):
    return Tokenizer.from_preset(tokenizer) if isinstance(tokenizer, (str, os.PathLike)) \
        else tokenizer


def init_source(init, vocab_size):
    """``(model, encoder)`` to continue pretraining from, loaded once.

    ``model`` is a pretrainer (its heads are kept) or an encoder; a folder's
    ``pretrainer.keras`` is preferred to its ``encoder.keras``.
    """
    if checkpoint_reader.claims(init):
        path, model = init, checkpoint_reader.model(init)
    else:
        path = model_file(init, (PRETRAINER_FILE, ENCODER_FILE))
        model = load_model(path)
    standalone = getattr(model, "standalone_encoder", None)
    encoder = standalone() if standalone else getattr(model, "encoder", model)
    if not is_backbone(encoder):
        raise ValueError(f"{path}: {type(model).__name__} has no encoder")
    if encoder.config.vocab_size != vocab_size:
        raise ValueError(
            f"{path}: vocabulary of {encoder.config.vocab_size} pieces, but the data "
            f"was made with {vocab_size}; create the data with this model's tokenizer"
        )
    return model, encoder


def build_objective_model(objective, encoder, train_config):
    """The objective's model on ``encoder``, compiled with the run's optimizer
    (LAMB or AdamW, warmup then linear decay, clipping)."""
    optimizer = make_optimizer(
        train_config.optimizer,
        learning_rate=train_config.learning_rate,
        total_steps=train_config.total_steps,
        warmup_steps=train_config.warmup_steps,
        weight_decay=train_config.weight_decay,
        clip_norm=train_config.clip_norm,
    )
    return objective.build_model(encoder, optimizer, train_config.steps_per_execution)
