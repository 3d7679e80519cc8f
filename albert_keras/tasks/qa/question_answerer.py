"""``QuestionAnswerer``: the span of a context that answers a question."""

import keras

from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.text_task import TextTask


@keras.saving.register_keras_serializable(package="albert_keras")
class QuestionAnswerer(TextTask):
    """Extractive question answering (as ``--task qa`` reads SQuAD).

    ``fit`` takes ``(questions, contexts)`` and one answer per question
    (its text, ``{"text", "answer_start"}``, or ``""`` for none with
    ``version_2=True``); ``predict`` gives ``{"answer", "start", "end",
    "score"}`` per question, characters of the context. Long contexts are
    read in windows ``stride`` pieces apart, as on the command line.

    Example:
    >>> model = QuestionAnswerer.from_preset("albert-base-v2/")  # doctest: +SKIP
    >>> model.fit((["Who wrote it?"], ["Ada wrote it."]), ["Ada"])  # doctest: +SKIP
    >>> answer, = model.predict((["Who wrote it?"], ["Ada wrote it."]))  # doctest: +SKIP
    >>> answer["answer"]  # doctest: +SKIP
    'Ada'
    """

    task_name = "qa"

    @classmethod
    def from_preset(cls, source, tokenizer=None, **settings):
        """A question answerer on ``source``'s encoder (a fine-tuned ``qa``
        folder keeps its head); ``settings`` are ``FinetuneConfig``'s fields
        (``stride``, ``max_answer_length``, ``version_2``, ...)."""
        cfg = finetune_settings(cls.task_name, settings, "QuestionAnswerer.from_preset")
        made, kept = cls._from_source(source, tokenizer, cfg)
        if kept is None:
            made._build(made.spec.replace(labels=()))  # the head needs no labels
        return made

    def _build_task_model(self, spec, encoder):
        return self.task.build_model(spec, encoder, self.settings.dropout)

    def predict(self, x, batch_size=64, verbose="auto"):
        """One ``{"answer", "start", "end", "score", "null_score"}`` per question."""
        outputs, data, spec = self._outputs(x, batch_size)
        return [{k: v for k, v in record.items() if k != "id"}
                for record in self.task.records(spec, data, outputs)]
