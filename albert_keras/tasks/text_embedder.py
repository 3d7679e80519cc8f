"""``TextEmbedder``: one vector per raw text, from any encoder."""

import keras
import numpy as np

from albert_keras.data.length_buckets import predict_in_buckets
from albert_keras.models.task_models.sentence_embedder import SentenceEmbedder
from albert_keras.tasks.embed.embed_run import train_pairs
from albert_keras.tasks.embed.embedder_source import EMBEDDER_DEFAULTS
from albert_keras.tasks.embed.embedder_source import embedder_source
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.python_inputs import python_examples
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task_run import TaskSets
from albert_keras.tasks.task_run import task_spec
from albert_keras.text.packer import pack_texts


@keras.saving.register_keras_serializable(package="albert_keras")
class TextEmbedder(keras.Model):
    """Sentence vectors: the encoder's states pooled over each text's tokens.

    ``pooling="mean"`` averages the last layer over the real tokens (what
    sentence-transformers' mean pooling does), ``"max"`` takes each feature's
    largest value over them (its max pooling), ``"cls"`` takes the
    ``[CLS]`` row and ``"pooled"`` the pooler's output; ``layers`` picks
    other states (``-2``: the one below the last).

    Args:
        embedder: the ``SentenceEmbedder`` (its encoder carries the tokenizer).
        sequence_length: texts are cut to this many pieces.

    Example:
    >>> model = TextEmbedder.from_preset("bert-base-uncased/", pooling="mean")  # doctest: +SKIP
    >>> model.predict(["a text", "another"]).shape  # doctest: +SKIP
    (2, 768)
    """

    def __init__(self, embedder, sequence_length=128, **kwargs):
        super().__init__(**kwargs)
        if isinstance(embedder, dict):
            embedder = keras.saving.deserialize_keras_object(embedder)
        self.embedder = embedder
        self.sequence_length = int(sequence_length)
        self.built = True

    @classmethod
    def from_preset(cls, source, pooling=None, layers=None, combine=None,  # noqa: PLR0913 (the embedder's choices, each a keyword)
                    normalize=None, dimensions=None, sequence_length=128, tokenizer=None):
        """An embedder on ``source``'s encoder (anything ``--init`` takes).

        The choices left None are the folder's own where ``source`` is an
        embedder trained here (``finetune --task embed``) or a
        sentence-transformers folder (its ``modules.json``: the pooling
        mode and normalization; its transformer's subfolder), else mean
        pooling of the last layer, not normalised.

        Args:
            source: a model folder, an HF, TF1 or keras-hub folder, or a
                ``.keras`` file (with ``tokenizer``).
            pooling: ``mean``, ``max``, ``cls`` or ``pooled``.
            layers: the states to pool (0: the embeddings, -1: the last layer).
            combine: several layers ``concat``enated or their ``mean``.
            normalize: L2-normalise each vector.
            dimensions: keep each vector's first this many features, before
                normalizing (an embedder trained with ``matryoshka_dims``,
                cut short).
            sequence_length: the longest text, in pieces (at most the
                model's ``max_position_embeddings``).
            tokenizer: a tokenizer file (default: the source's own).
        """
        origin, trained = embedder_source(source, tokenizer)
        asked = {"pooling": pooling, "layers": layers, "combine": combine,
                 "normalize": normalize, "dimensions": dimensions}
        choices = {**EMBEDDER_DEFAULTS, **trained,
                   **{k: v for k, v in asked.items() if v is not None}}
        encoder = origin.encoder(dtype="float32",
                                 output_hidden_states=choices["pooling"] != "pooled")
        if encoder.tokenizer is None or tokenizer:
            encoder.tokenizer = origin.tokenizer
        length = min(int(sequence_length), encoder.config.max_position_embeddings)
        return cls(SentenceEmbedder(encoder, **choices), sequence_length=length)

    @property
    def tokenizer(self):
        return self.embedder.encoder.tokenizer

    def call(self, inputs, training=False):
        return self.embedder(inputs, training=training)

    def fit(self, anchors, positives, negatives=None, epochs=1, batch_size=32,  # noqa: PLR0913 (the pairs, and the run's few settings)
            learning_rate=5e-5, scale=20.0, symmetric=False, matryoshka_dims=None, seed=0,
            verbose="auto"):
        """Trains the encoder so that each anchor's vector is nearest its
        positive's: in-batch negatives (every other pair's positive, and the
        hard negatives when given), sentence-transformers'
        ``MultipleNegativesRankingLoss`` (``InBatchNegatives``).

        The run of ``albert-keras finetune --task embed`` (``train_pairs``):
        AdamW with weight decay 0.01 (not on norms and biases), gradients
        clipped to norm 1, the rate warmed up over the first 10% of the
        steps, then decayed linearly.

        Args:
            anchors: texts (queries, questions, headlines).
            positives: one text per anchor that answers it.
            negatives: optionally one hard negative per anchor.
            epochs: passes over the pairs.
            batch_size: pairs a batch (more pairs, more negatives).
            learning_rate: the peak rate.
            scale: the similarities' scale (inverse temperature).
            symmetric: also each positive to its anchor.
            matryoshka_dims: shorter widths also trained as embeddings of
                their own (sentence-transformers' ``MatryoshkaLoss``), so
                that ``from_preset(..., dimensions=d)`` keeps retrieving well.
            seed: the shuffling's (and dropout's) seed.
            verbose: Keras' ``verbose``.

        Returns:
            Keras' ``History``.

        Example:
        >>> model = TextEmbedder.from_preset("runs/minilm", normalize=True)  # doctest: +SKIP
        >>> model.fit(["capital of France?"] * 32, ["Paris is France's capital."] * 32)  # doctest: +SKIP
        """
        settings = FinetuneConfig(task="embed", epochs=int(epochs), batch_size=int(batch_size),
                                  learning_rate=learning_rate, scale=scale,
                                  symmetric=symmetric, matryoshka_dims=matryoshka_dims,
                                  seed=seed,
                                  sequence_length=self.sequence_length)
        settings.validate()
        task, spec = get_task("embed"), task_spec(settings)
        pairs = (anchors, positives) if negatives is None else (anchors, positives, negatives)
        data, _ = task.from_python(pairs, None, spec, self.tokenizer, name="anchors")
        keras.utils.set_random_seed(seed)
        history, _ = train_pairs(task, self.embedder, (spec, TaskSets(data), settings),
                                 where="anchors", verbose=verbose)
        return history

    def predict(self, x, batch_size=64, length_buckets=True, verbose="auto"):
        """``[n, width]`` float32 vectors of Python texts (or pairs), in
        their order; ``length_buckets`` batches them by length (the same
        vectors, less padding computed)."""
        return self.vectors(x, batch_size, length_buckets)

    def vectors(self, x, batch_size=64, length_buckets=True, name="x"):
        """``predict``, with errors naming the texts ``name``."""
        examples = python_examples(x, None, name)
        packed = pack_texts(self.tokenizer, examples.texts, examples.pairs, self.sequence_length)
        if length_buckets:
            outputs = predict_in_buckets(self.embedder, packed, batch_size)
        else:
            outputs = self.embedder.predict(packed, batch_size=batch_size, verbose=0)
        return np.asarray(outputs["embeddings"], np.float32)

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "embedder": keras.saving.serialize_keras_object(self.embedder),
                "sequence_length": self.sequence_length}
