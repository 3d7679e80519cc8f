"""SentenceEmbedder: one vector per text, from any layer(s) of the encoder."""

import keras
from keras import ops

from albert_keras.models.backbone import rebuilt
from albert_keras.models.export_kind import ExportKind
from albert_keras.models.task_models.task_model import ENCODER_INPUTS
from albert_keras.models.task_models.task_model import TaskModel

POOLINGS = ("mean", "max", "cls", "pooled")
TOKEN_POOLINGS = ("mean", "max", "cls")
COMBINES = ("concat", "mean")


@keras.saving.register_keras_serializable(package="albert_keras")
class LayerPooling(keras.layers.Layer):
    """Pools chosen hidden states ``[B, N, S, H]`` into one ``[B, D]`` vector.

    Args:
        layers: indices into the N states (0 = embeddings, -1 = last layer).
        pooling: ``mean`` or ``max`` over real tokens, or ``cls`` (token 0).
        combine: ``concat`` (D = H * len(layers)) or ``mean`` (D = H).
        normalize: L2-normalize the result.
        dimensions: keep only the first this many features (before
            normalizing: a Matryoshka-trained vector cut short); None keeps all.
    """

    def __init__(self, layers=(-1,), pooling="mean", combine="concat", normalize=False,
                 dimensions=None, **kwargs):
        super().__init__(**kwargs)
        if pooling not in TOKEN_POOLINGS:
            raise ValueError(f"pooling must be one of {TOKEN_POOLINGS}, got {pooling!r}")
        if combine not in COMBINES:
            raise ValueError(f"combine must be one of {COMBINES}, got {combine!r}")
        self.layers_ = [int(i) for i in layers]
        if not self.layers_:
            raise ValueError("layers must name at least one layer")
        self.pooling = pooling
        self.combine = combine
        self.normalize = bool(normalize)
        self.dimensions = _dimensions(dimensions)

    def call(self, hidden_states, padding_mask):
        states = ops.cast(hidden_states, "float32")
        mask = ops.cast(padding_mask, "float32")[:, :, None]
        vectors = []
        for index in self.layers_:
            h = states[:, index]
            if self.pooling == "cls":
                vectors.append(h[:, 0])
            elif self.pooling == "max":
                # padding pushed far below any state, as sentence-transformers'
                # max pooling does, so an all-negative feature stays negative
                vectors.append(ops.max(h * mask + (mask - 1.0) * 1e9, axis=1))
            else:
                vectors.append(ops.sum(h * mask, axis=1) / ops.maximum(ops.sum(mask, axis=1), 1.0))
        if self.combine == "mean":
            out = ops.mean(ops.stack(vectors, axis=0), axis=0)
        else:
            out = ops.concatenate(vectors, axis=-1) if len(vectors) > 1 else vectors[0]
        return _cut_and_normalize(out, self.dimensions, self.normalize)

    def compute_output_shape(self, hidden_states_shape, padding_mask_shape):
        width = hidden_states_shape[-1]
        if self.combine == "concat" and width is not None:
            width = width * len(self.layers_)
        return (hidden_states_shape[0], self.dimensions or width)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "layers": self.layers_,
                "pooling": self.pooling,
                "combine": self.combine,
                "normalize": self.normalize,
                "dimensions": self.dimensions,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="albert_keras")
class FirstDimensions(keras.layers.Layer):
    """The first ``dimensions`` features of a ``[B, D]`` vector, optionally
    L2-normalized (the pooler's output cut short).

    Args:
        dimensions: features kept.
        normalize: L2-normalize the result.
    """

    def __init__(self, dimensions, normalize=False, **kwargs):
        super().__init__(**kwargs)
        self.dimensions = _dimensions(dimensions)
        self.normalize = bool(normalize)

    def call(self, vectors):
        return _cut_and_normalize(ops.cast(vectors, "float32"), self.dimensions,
                                  self.normalize)

    def compute_output_shape(self, shape):
        return (shape[0], self.dimensions)

    def get_config(self):
        return {**super().get_config(), "dimensions": self.dimensions,
                "normalize": self.normalize}


def _dimensions(dimensions):
    if dimensions is None:
        return None
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise ValueError(f"dimensions must be a positive integer, got {dimensions!r}")
    return dimensions


def _cut_and_normalize(vectors, dimensions, normalize):
    if dimensions is not None:
        vectors = vectors[:, :dimensions]
    if normalize:
        vectors = vectors / ops.maximum(ops.norm(vectors, axis=-1, keepdims=True), 1e-12)
    return vectors


@keras.saving.register_keras_serializable(package="albert_keras")
class SentenceEmbedder(TaskModel):
    """Text embeddings: ``mean``/``max``/``cls`` pooling of chosen layers, or the
    ``pooled`` (tanh pooler) output.

    Inputs: the encoder's three. Output: ``embeddings`` ``[B, D]`` float32.

    Args:
        encoder: an ``AlbertEncoder``. If ``layers`` is not just the last
            one, an encoder with ``output_hidden_states=True`` is built from
            it, sharing its weights.
        layers: hidden-state indices (0 = embedding output, -1 = last).
        pooling: ``mean`` or ``max`` (over real tokens), ``cls`` (token 0) or
            ``pooled`` (the pretrained pooler; last layer only).
        combine: ``concat`` or ``mean`` over the chosen layers.
        normalize: L2-normalize the vectors.
        dimensions: keep the first this many features, before normalizing
            (an embedder trained with Matryoshka dimensions, cut short);
            None keeps all.
        dtype: a dtype policy; defaults to the encoder's.

    Example:
    >>> from albert_keras.presets import get_preset
    >>> from albert_keras.models.albert.albert_encoder import AlbertEncoder
    >>> model = SentenceEmbedder(AlbertEncoder(get_preset("bert_tiny")), layers=(-2, -1))
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> out = model({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> tuple(out["embeddings"].shape)
    (2, 256)
    """

    # TaskModel's export declaration
    export_kind = ExportKind("embedder", outputs=("embeddings",), web=True,
                             app_task="text_embedder", summary="Embeds a text")

    @property
    def reads_only_cls(self):
        """Only ``[CLS]`` is read (see ``TaskModel.reads_only_cls``)."""
        return self.pooling == "pooled" and self.encoder.pools_first_row

    def __init__(self, encoder, layers=(-1,), pooling="mean", combine="concat",  # noqa: PLR0913 (the pooling's choices, each a Keras config key)
                 normalize=False, dimensions=None, dtype=None, **kwargs):
        encoder, dtype = self._encoder_and_dtype(encoder, dtype)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        layers = [int(i) for i in layers]
        num_states = encoder.num_hidden_states
        for index in layers:
            if not -num_states <= index < num_states:
                raise ValueError(
                    f"layer {index} is out of range: this encoder has {num_states} "
                    f"hidden states (0 = embeddings, -1 = last)"
                )
        if pooling == "pooled" and layers not in ([-1], [num_states - 1]):
            raise ValueError("pooling 'pooled' uses the last layer only")
        if pooling != "pooled" and not encoder.output_hidden_states:
            with_states = rebuilt(encoder, output_hidden_states=True)  # its tokenizer too
            with_states.set_weights(encoder.get_weights())
            encoder = with_states

        inputs = self._encoder_inputs()
        encoded = encoder({n: inputs[n] for n in ENCODER_INPUTS})
        full = encoder.config.hidden_size * (
            len(layers) if combine == "concat" and pooling != "pooled" else 1)
        if dimensions is not None and not 1 <= _dimensions(dimensions) <= full:
            raise ValueError(f"dimensions {dimensions} is not within this embedder's "
                             f"{full} features")
        if pooling == "pooled" and dimensions is not None:
            vectors = FirstDimensions(dimensions, normalize, dtype="float32",
                                      name="embeddings")(encoded["pooled_output"])
        elif pooling == "pooled":
            layer = (
                keras.layers.UnitNormalization(dtype="float32", name="embeddings")
                if normalize
                else keras.layers.Activation("linear", dtype="float32", name="embeddings")
            )
            vectors = layer(encoded["pooled_output"])
        else:
            vectors = LayerPooling(
                layers, pooling, combine, normalize, dimensions, dtype="float32",
                name="embeddings")(encoded["hidden_states"], inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs={"embeddings": vectors}, **kwargs)
        self.dtype_policy = dtype
        self.encoder = encoder
        self.layers_ = layers
        self.pooling = pooling
        self.combine = combine
        self.normalize = bool(normalize)
        self.dimensions = dimensions

    @property
    def width(self):
        """The vectors' width."""
        return int(self.outputs[0].shape[-1])

    def get_config(self):
        return {
            **self._base_config(),
            "layers": self.layers_,
            "pooling": self.pooling,
            "combine": self.combine,
            "normalize": self.normalize,
            "dimensions": self.dimensions,
        }
