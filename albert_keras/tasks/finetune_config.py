"""Every knob of a fine-tuning run, saved as ``train_config.json``.

A module of its own, free of TensorFlow, so that the command line can build
its flags (and answer ``--help``) without importing it.
"""

import dataclasses

from albert_keras.config import TRUNCATE_MODES
from albert_keras.options import option
from albert_keras.tasks.registry import TASKS
from albert_keras.training.pretrain_config import STRATEGIES


@dataclasses.dataclass
class FinetuneConfig:
    """Every knob of a fine-tuning run (saved as ``train_config.json``).

    Args:
        task: ``classify``, ``tag``, ``qa`` or ``choice``.
        epochs, batch_size, learning_rate: AdamW with linear warmup over
            ``warmup_fraction`` of the steps, then linear decay to 0.
        sequence_length: S. QA: ``stride`` between windows,
            ``max_question_length``, ``max_answer_length``, ``n_best``,
            ``null_threshold`` and ``version_2`` (no-answer questions).
        regression: ``classify`` with a numeric label (one output, MSE).
        text_column, text_pair_column, label_column, context_column,
            choices_column, question_column: where the fields are in
            CSV/TSV/JSONL files (``context_column`` is for ``choice``).
        dropout: on the head's input.
        precision, strategy, seed: as in pretraining.
        from_scratch: same architecture as ``--init``, untrained weights
            (the baseline that shows what pretraining is worth).
    """

    task: str = option("classify", "the task", choices=tuple(TASKS))
    epochs: int = option(3, "passes over the training file")
    batch_size: int = option(32, "examples per step")
    learning_rate: float = option(5e-5, "peak AdamW learning rate")
    warmup_fraction: float = option(0.1, "share of the steps with linear warmup")
    weight_decay: float = option(0.01, "decoupled weight decay (not on LayerNorm/bias)")
    sequence_length: int = option(128, "pieces per input, specials included",
                                  flag="--seq-length")
    truncate: str = option("longest_first", "how a pair is cut to fit",
                           choices=TRUNCATE_MODES)
    regression: bool = option(False, "classify: a numeric label (one output, MSE)")
    text_column: str = option("text", "CSV/TSV/JSONL: the text field")
    text_pair_column: str = option(None, "CSV/TSV/JSONL: the second text's field")
    label_column: str = option("label", "the label field")
    context_column: str = option("context", "choice: the passage field")
    choices_column: str = option("choices", "choice: the answers field")
    question_column: str = option("question", "choice: the question field")
    stride: int = option(128, "qa: pieces between windows")
    max_question_length: int = option(64, "qa: longest question in pieces")
    max_answer_length: int = option(30, "qa: longest answer in pieces")
    n_best: int = option(20, "qa: start and end candidates per window")
    null_threshold: float = option(0.0, "qa v2: answer '' when the [CLS] score beats the "
                                        "best span by this")
    version_2: bool = option(False, "qa: questions may have no answer")
    dropout: float = option(0.1, "dropout on the head's input")
    precision: str = option("float32", "Keras dtype policy",
                            choices=("float32", "mixed_bfloat16", "mixed_float16"))
    strategy: str = option("auto", "how training spreads over devices", choices=STRATEGIES)
    seed: int = option(0, "weights and shuffling")
    from_scratch: bool = option(False, "same architecture as --init, untrained weights "
                                       "(a baseline)")

    def validate(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {tuple(TASKS)}, got {self.task!r}")
        for name in ("epochs", "batch_size", "sequence_length"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError("warmup_fraction must be in [0, 1)")
