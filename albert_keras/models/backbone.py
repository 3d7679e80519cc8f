"""What makes a model an encoder the rest of the package builds on.

Pretrainers, task models, distillers, layer decay and export reach an
encoder only through its entry, so they accept any family's encoder:

- ``config``: the family's config (``albert_keras.families`` says what it
  must hold);
- ``encode(inputs, training, embedded=, token_table=, query_positions=,
  return_attention=)``, ``embed(inputs, training, token_table=)``,
  ``pool(rows, training, padding_mask=)``: the forward pass in its parts
  (``padding_mask`` for a family that pools by a mean over the real rows);
- ``variables_by_depth()``: ``{variable path: depth}`` for layer decay;
- ``token_embedding``: the word table's layer (the masked-LM head ties its
  decoder to it; ELECTRA's generator shares it) and ``pooler``: the layer
  over the first token (distillation freezes it);
- ``num_hidden_states``: how many states ``encode`` returns;
- ``token_rows(sequence)``: what token and span heads read of the sequence
  output, and ``mlm_head_options()``: the masked-LM head's keywords
  (``Backbone`` has both: the rows themselves, BERT's head);
- the constructor keywords ``output_hidden_states``, ``mask_value`` (the
  additive bias at padded keys; the export bounds it), ``quantize_aware``,
  ``cls_only`` and ``dtype``, all kept in ``get_config`` as ``config`` (a
  dict) is, so that ``rebuilt`` can copy an encoder with one of them changed;
- a ``tokenizer`` it carries into its ``.keras`` file (``Backbone`` has it).
- ``embedding_state()`` / ``load_embedding_state(state)``: the embedding layer
  as a whole, so a student can start from its teacher's (``Backbone`` has them
  for a family whose encoder keeps its embedding layer as ``embeddings``).
- ``pools_first_row``: whether the pooled output reads the first row
  alone, so an export may compute only that row (``Backbone`` says yes);
- optional, for DeBERTa's enhanced mask decoder only: ``position_rows`` and
  ``decode_rows`` (the absolute positions it adds, and its last block).

``is_backbone`` checks every required member.

``Backbone`` is the base class that gives a family's encoder the last item
and ``rebuilt``; the rest is the family's own.
"""

import contextlib

import keras
from keras import ops

from albert_keras.models.export_kind import ExportKind
from albert_keras.sources.registry import encoder_from_preset
from albert_keras.text.tokenizer_asset import TokenizerAsset

BACKBONE_METHODS = ("encode", "embed", "pool", "variables_by_depth", "embedding_state",
                    "load_embedding_state", "token_rows", "mlm_head_options")
# layers of the entry that pretrainers, ELECTRA and distillation reach, and
# the values that distillers, poolers, export and ``rebuilt`` read
BACKBONE_MEMBERS = ("token_embedding", "pooler", "num_hidden_states",
                    "output_hidden_states", "mask_value", "quantize_aware", "cls_only")


def is_backbone(model):
    """Whether ``model`` is an encoder: it has a ``config`` and every
    required member of the entry.

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> is_backbone(AlbertEncoder(get_preset("albert_tiny"))), is_backbone("text")
    (True, False)
    """
    return (getattr(model, "config", None) is not None
            and all(callable(getattr(model, name, None)) for name in BACKBONE_METHODS)
            and all(getattr(model, name, None) is not None for name in BACKBONE_MEMBERS))


def backbone_of(model):
    """The encoder of ``model`` (``model`` itself when it is one), or None.

    Example:
    >>> backbone_of("text") is None
    True
    """
    if is_backbone(model):
        return model
    encoder = getattr(model, "encoder", None)
    return encoder if is_backbone(encoder) else None


def rebuilt(encoder, config=None, **options):
    """A new encoder of ``encoder``'s class and settings, with ``config``
    and the constructor ``options`` changed; weights are not copied, the
    tokenizer is (where the vocabulary size stays).

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> from albert_keras.presets import get_preset
    >>> rebuilt(AlbertEncoder(get_preset("albert_tiny")), output_hidden_states=True).output_hidden_states
    True
    """
    settings = {**encoder.get_config(), **options}
    if config is not None:
        settings["config"] = config.to_dict()
    made = type(encoder).from_config(settings)
    if made.config.vocab_size == encoder.config.vocab_size:
        made.tokenizer_asset = getattr(encoder, "tokenizer_asset", None)
    return made


class Backbone(keras.Model):
    """The base of a family's encoder: the tokenizer it carries.

    A subclass builds its functional graph, calls ``super().__init__(inputs=,
    outputs=)`` and sets ``config``; it then carries a tokenizer (set by
    pretraining, fine-tuning and checkpoint loading, or by you) in its
    ``.keras`` file, so a bare model file knows its special ids and how its
    text is cut.

    Example:
    >>> from albert_keras import AlbertEncoder
    >>> issubclass(AlbertEncoder, Backbone)
    True
    """

    @staticmethod
    def from_preset(source, dtype=None, tokenizer=None):
        """The encoder of ``source``: anything ``--init`` takes (its weights,
        and the tokenizer it carries), or a preset name (new weights, of
        that preset's family; ``tokenizer`` gives it one).

        Example:
        >>> Backbone.from_preset("bert_tiny").config.hidden_size
        128
        """
        # the source registry names its readers, which build encoders (this
        # class's subclasses) and so sit above this module
        return encoder_from_preset(source, dtype=dtype, tokenizer=tokenizer)

    # what export, validation, app metadata and the model card read (the
    # export's vocabulary; a subclass inherits it)
    export_kind = ExportKind("encoder", outputs=("sequence_output", "pooled_output"),
                             hf_outputs={"last_hidden_state": "sequence_output"})
    tokenizer_asset = None
    # whether masked-LM pretraining trains the pooled output (a family whose
    # pooler is its masked LM's transform): a classifier's ``auto`` pooling
    # then reads it, as transformers' class of the family does
    masked_lm_trains_pooler = False

    @property
    def tokenizer(self):
        """The host-side tokenizer of this encoder's vocabulary, or None."""
        asset = self.tokenizer_asset
        return asset.tokenizer() if asset is not None else None

    @tokenizer.setter
    def tokenizer(self, tokenizer):
        if tokenizer is not None and tokenizer.vocabulary_size > self.config.vocab_size:
            raise ValueError(f"the tokenizer ({tokenizer.source}) has "
                             f"{tokenizer.vocabulary_size} pieces; the encoder's vocab_size "
                             f"is {self.config.vocab_size}")
        self.tokenizer_asset = None if tokenizer is None else TokenizerAsset.of(tokenizer)

    def get_config(self):
        """The constructor keywords of the entry (``config`` as a dict), so
        that ``rebuilt`` and ``.keras`` files make the same encoder."""
        return {"name": self.name, "trainable": self.trainable,
                "config": self.config.to_dict(),
                "output_hidden_states": self.output_hidden_states,
                "mask_value": self.mask_value, "quantize_aware": self.quantize_aware,
                "cls_only": self.cls_only,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)

    def token_rows(self, sequence):
        """What a token or span head reads of ``sequence_output`` (the rows
        themselves; ModernBERT puts its prediction head on each first)."""
        return sequence

    def mlm_head_options(self):
        """The ``MaskedLMHead`` keywords of this family's masked-LM head
        (BERT's: the config's activation and LayerNorm epsilon; MobileBERT's
        decoder has extra rows)."""
        return {"activation": self.config.hidden_act,
                "layer_norm_eps": self.config.layer_norm_eps,
                "extra_output_width": getattr(self, "mlm_extra_width", 0)}

    # -- the embedding layer as a whole (a student starting from its teacher's) --------

    def embedding_state(self):
        """``(layer class name, [numpy arrays])``: the embedding layer's weights,
        in the form ``load_embedding_state`` takes."""
        return type(self.embeddings).__name__, self.embeddings.get_weights()

    def load_embedding_state(self, state):
        """Set the embedding layer's weights from another encoder's
        ``embedding_state()`` when both layers have the same class and
        shapes; returns whether they were set (otherwise nothing changes).

        Example:
        >>> from albert_keras import AlbertEncoder
        >>> from albert_keras.presets import get_preset
        >>> a = AlbertEncoder(get_preset("albert_tiny"))
        >>> b = AlbertEncoder(get_preset("albert_tiny"))
        >>> b.load_embedding_state(a.embedding_state())
        True
        """
        name, values = state
        if name != type(self.embeddings).__name__ or \
                [v.shape for v in values] != [tuple(w.shape) for w in self.embeddings.weights]:
            return False
        self.embeddings.set_weights(values)
        return True

    # -- a perturbation of the embeddings (adversarial fine-tuning) -------------------

    @contextlib.contextmanager
    def perturbing(self, perturbation):
        """While inside, the encoder adds ``perturbation(embeddings)`` to
        what its blocks read: ``call`` runs ``embed``, the perturbation and
        ``encode(embedded=...)`` instead of its graph. A Python-level switch,
        read when the call is traced, as DeBERTa's SiFT hooks a module.

        Example:
        >>> from albert_keras import AlbertEncoder
        >>> from albert_keras.presets import get_preset
        >>> encoder = AlbertEncoder(get_preset("albert_tiny"))
        >>> ids = keras.ops.ones((1, 8), "int32")
        >>> inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids}
        >>> with encoder.perturbing(lambda e: e + 1.0):
        ...     moved = encoder(inputs)["pooled_output"]
        >>> bool(keras.ops.any(moved != encoder(inputs)["pooled_output"]))
        True
        """
        self.__dict__["_perturbation"] = perturbation  # untracked: not a layer
        try:
            yield self
        finally:
            self.__dict__["_perturbation"] = None

    # -- the last block on the first row alone (a model that reads only it) -----------

    @contextlib.contextmanager
    def reading_first_row(self):
        """While inside, a call computes only the first (``[CLS]``) row in
        the last block, as ``cls_only`` does, without a new encoder: the
        pooled output is the same, ``sequence_output`` is ``[B, 1, H]``.

        A task model that reads only the pooled output calls its encoder
        inside (``TaskModel.call``), so that fitting and prediction skip the
        last block's query, output and FFN work on every other row (about
        1/L of the encoder's matrix products, forward and backward). Read
        when the call is traced; with ``output_hidden_states`` it does
        nothing (the last state would be cut).

        Example:
        >>> import numpy as np
        >>> from albert_keras.families import build_backbone, preset_config
        >>> encoder = build_backbone(preset_config("bert_tiny"))
        >>> ids = np.ones((1, 8), "int32")
        >>> with encoder.reading_first_row():
        ...     out = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
        >>> tuple(out["sequence_output"].shape)
        (1, 1, 128)
        """
        before = self.__dict__.get("_first_row", False)
        self.__dict__["_first_row"] = not self.output_hidden_states  # untracked
        try:
            yield self
        finally:
            self.__dict__["_first_row"] = before

    def call(self, inputs, training=None, mask=None, **kwargs):
        perturbation = self.__dict__.get("_perturbation")
        first_row = self.__dict__.get("_first_row", False) and not self.cls_only
        if perturbation is None and not first_row:
            return super().call(inputs, training=training, mask=mask, **kwargs)
        return self._entry_call(inputs, perturbation, bool(training), first_row)

    def _entry_call(self, inputs, perturbation, training, first_row):
        """The graph's outputs, through the entry: with perturbed embeddings
        (``perturbation`` may be None) and the last block on the first row
        where ``first_row`` or ``cls_only``."""
        embedded = self.embed(inputs, training)
        if perturbation is not None:
            embedded = perturbation(embedded)
        cut = first_row or self.cls_only
        first = ops.zeros_like(inputs["token_ids"][:, :1]) if cut else None
        out = self.encode(inputs, training, embedded=embedded, query_positions=first)
        sequence = out["sequence_output"]
        result = {"sequence_output": sequence,
                  "pooled_output": self.pool(sequence, training,
                                             padding_mask=inputs["padding_mask"])}
        if self.output_hidden_states:
            result["hidden_states"] = ops.stack(out["hidden_states"], axis=1)
        return result

    @property
    def pools_first_row(self):
        """Whether the pooled output reads the first row alone (a family
        that pools by a mean says no)."""
        return True

    def save_assets(self, dir_path):
        if self.tokenizer_asset is not None:
            self.tokenizer_asset.write(dir_path)

    def load_assets(self, dir_path):
        # files saved before encoders carried a tokenizer have no folder here
        self.tokenizer_asset = TokenizerAsset.read(dir_path)
