"""``TokenClassifier``: one tag per word (named entities, parts of speech)."""

import keras

from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.text_task import TextTask


@keras.saving.register_keras_serializable(package="albert_keras")
class TokenClassifier(TextTask):
    """Tags each word of a sentence (BIO tags, as ``--task tag`` reads CoNLL).

    ``fit`` takes sentences (lists of words, or strings split on
    whitespace) and their tag lists; ``predict`` gives each sentence's tags
    and ``entities`` its BIO spans.

    Example:
    >>> model = TokenClassifier.from_preset("bert-base-cased/")  # doctest: +SKIP
    >>> model.fit([["Ada", "lives", "in", "London"]], [["B-PER", "O", "O", "B-LOC"]])  # doctest: +SKIP
    >>> model.predict(["Ada lives in Paris"])  # doctest: +SKIP
    [['B-PER', 'O', 'O', 'B-LOC']]
    """

    task_name = "tag"

    @classmethod
    def from_preset(cls, source, labels=None, tokenizer=None, **settings):
        """A tagger on ``source``'s encoder (a fine-tuned ``tag`` folder keeps
        its head); ``labels`` builds the head before ``fit``, which
        otherwise takes the tags it sees. ``settings`` are
        ``FinetuneConfig``'s fields."""
        cfg = finetune_settings(cls.task_name, settings, "TokenClassifier.from_preset")
        made, kept = cls._from_source(source, tokenizer, cfg)
        if kept is None and labels is not None:
            made._build(made.spec.replace(labels=tuple(str(t) for t in labels)))
        return made

    @property
    def labels(self):
        """The tags by id (``()`` before ``fit``)."""
        return tuple(self.spec.labels or ())

    def _build_task_model(self, spec, encoder):
        return self.task.build_model(spec, encoder, self.settings.dropout)

    def predict(self, x, batch_size=64, verbose="auto"):
        """Each sentence's tags, one per word."""
        return [record["tags"] for record in self._records(x, batch_size)]

    def entities(self, x, batch_size=64):
        """Each sentence's BIO spans: ``{"type", "start", "end", "text"}``
        (word positions, ``end`` exclusive)."""
        return [record["entities"] for record in self._records(x, batch_size)]

    def _records(self, x, batch_size):
        outputs, data, spec = self._outputs(x, batch_size)
        return self.task.records(spec, data, outputs)
