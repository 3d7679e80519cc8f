"""``MultipleChoice``: the right one of N answers (RACE, SWAG style)."""

import keras

from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.task import softmax
from albert_keras.tasks.text_task import TextTask


@keras.saving.register_keras_serializable(package="albert_keras")
class MultipleChoice(TextTask):
    """Scores each (context, question + choice) pair and picks the best
    (as ``--task choice`` reads JSONL).

    Example:
    >>> model = MultipleChoice.from_preset("runs/pretrain")  # doctest: +SKIP
    >>> model.fit((["A fox ran."], ["What did it do?"], [["ran", "sat"]]), [0])  # doctest: +SKIP
    >>> model.predict((["A fox ran."], ["What did it do?"], [["ran", "sat"]])).shape  # doctest: +SKIP
    (1, 2)
    """

    task_name = "choice"

    @classmethod
    def from_preset(cls, source, tokenizer=None, **settings):
        """A multiple-choice model on ``source``'s encoder (a fine-tuned
        ``choice`` folder keeps its head); ``settings`` are
        ``FinetuneConfig``'s fields."""
        cfg = finetune_settings(cls.task_name, settings, "MultipleChoice.from_preset")
        made, _ = cls._from_source(source, tokenizer, cfg)
        return made

    def _build_task_model(self, spec, encoder):
        return self.task.build_model(spec, encoder, self.settings.dropout)

    def predict(self, x, batch_size=64, verbose="auto"):
        """``[n, choices]`` probabilities of each choice."""
        outputs, _, _ = self._outputs(x, batch_size)
        return softmax(outputs["logits"])
