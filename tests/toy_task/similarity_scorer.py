"""``SimilarityScorer``: the Python class of the toy ``similarity`` task."""

import keras
import numpy as np

from albert_keras.tasks.finetune_config import finetune_settings
from albert_keras.tasks.text_task import TextTask


@keras.saving.register_keras_serializable(package="toy_task_test")
class SimilarityScorer(TextTask):
    """Scores sentence pairs: ``predict((firsts, seconds))`` gives one number each.

    Example:
    >>> scorer = SimilarityScorer.from_preset("runs/pretrain")  # doctest: +SKIP
    >>> scorer.fit((["a fox"], ["a dog"]), [1.0], epochs=1)  # doctest: +SKIP
    """

    task_name = "similarity"

    @classmethod
    def from_preset(cls, source, tokenizer=None, **settings):
        """A scorer on ``source``'s encoder (a fine-tuned folder keeps its head)."""
        cfg = finetune_settings(cls.task_name, settings, "SimilarityScorer.from_preset")
        made, _ = cls._from_source(source, tokenizer, cfg)
        return made

    def _build_task_model(self, spec, encoder):
        return self.task.build_model(spec, encoder, self.settings.dropout)

    def predict(self, x, batch_size=64, verbose="auto"):
        outputs, _, _ = self._outputs(x, batch_size)
        return np.asarray(outputs["logits"], np.float32)[:, 0]
