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
from albert_keras.files import writing_folder
from albert_keras.model_folder import TRAIN_CONFIG_FILE
from albert_keras.model_folder import write_pretraining_folder
from albert_keras.models.backbone import rebuilt
from albert_keras.options import config_from_keywords
from albert_keras.precision import global_policy
from albert_keras.precision import resolve_precision
from albert_keras.text.tokenizer import Tokenizer
from albert_keras.training.datasets import train_dataset
from albert_keras.training.objectives import get_objective
from albert_keras.training.pretrain import build_objective_model
from albert_keras.training.pretrain import init_source
from albert_keras.training.pretrain_config import PretrainConfig
from albert_keras.training.pretraining_inputs import pretraining_data


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
        dataset = train_dataset(self.strategy, data_dir, self.settings, self.objective,
                                skip_batches=int(self.model.optimizer.iterations.numpy()))
        # the pipeline shuffles itself (Keras warns on shuffle=True with one)
        return self.model.fit(dataset, epochs=epochs, steps_per_epoch=steps_per_epoch,
                              callbacks=callbacks, verbose=verbose, shuffle=False, **kwargs)

    def evaluate(self, data_dir, split="eval"):
        """The objective's held-out metrics on a data folder's split (every
        example once), with a trivial predictor's for comparison."""
        if self.model is None:
            raise ValueError("Pretrainer.evaluate: fit first (the model is built there)")
        metrics = self.objective.evaluate(self.model, os.fspath(data_dir), split)
        metrics.update(self.objective.baselines(os.fspath(data_dir)))
        return metrics

    def save_to_preset(self, folder):
        """Writes the pretraining folder (``encoder.keras``,
        ``pretrainer.keras``, the tokenizer, ``config.json``,
        ``train_config.json``); nothing is left half-written."""
        if self.model is None:
            raise ValueError(f"{folder}: fit first (there is no trained model to save)")
        with writing_folder(os.fspath(folder)) as tmp:
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
