"""The file-path conveniences over the Python task classes: evaluate and
predict with a fine-tuned folder, fill-mask with a pretraining folder,
embeddings from any model. The command line's ``evaluate``, ``predict``,
``fill-mask`` and ``embed`` call these, so each is the class's own method
(``TextTask.evaluate_file``, ``TextTask.predict_file``, ``MaskedLM.predict``,
``TextEmbedder.predict``) and nothing is implemented twice."""

import os

from albert_keras.sources.layout import read_task_spec
from albert_keras.tasks.masked_lm import MaskedLM
from albert_keras.tasks.registry import TASKS
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.text_embedder import TextEmbedder
from albert_keras.tasks.text_task import TextTask


def evaluate(folder, path, batch_size=64, length_buckets=True, precision="auto",  # noqa: PLR0913 (the command's flags)
             runtime="auto"):
    """The task metrics of a fine-tuned folder on a labelled file (rows
    batched by length unless ``length_buckets`` is False; ``precision`` and
    ``runtime`` as ``predict``'s). A task that scores its own folders (an
    embedder on pairs: retrieval) takes them in Keras."""
    task = folder_task(folder)
    if task is not None and task.evaluate_folder is not None:
        if runtime not in ("auto", "keras") or precision != "auto":
            raise ValueError(f"{folder}: a {task.name} folder is scored in Keras; --runtime "
                             "and --precision do not apply")
        return task.evaluate_folder(folder, path, batch_size, length_buckets)
    model = TextTask.load(folder, precision=precision, runtime=runtime)
    return model.evaluate_file(path, batch_size, length_buckets)


def predict(folder, path, batch_size=64, length_buckets=True, precision="auto",  # noqa: PLR0913 (the command's flags)
            runtime="auto"):
    """Predictions for every row of ``path`` (labels not needed), as dicts,
    each with ``row``: the example's place in the file, from 0. Rows are
    batched by length unless ``length_buckets`` is False; the predictions
    come back in the file's order either way. A folder trained in bf16
    runs large batches in bf16 where the CPU multiplies it natively and
    small ones in float32 (``precision="auto"``), or every batch in
    float32 (``"float32"``). ``runtime="auto"`` runs a file of up to 4 rows
    in the LiteRT file ``finetune`` kept, ``"litert"`` converts the model to
    LiteRT first and runs it there (``TextTask.use_runtime``)."""
    model = TextTask.load(folder, precision=precision, runtime=runtime)
    return model.predict_file(path, batch_size, length_buckets)


def fill_mask(folder, texts, top_k=5, sequence_length=128, tokenizer=None):
    """Top-k pieces for each ``[MASK]`` of each text (``MaskedLM.predict``),
    with the pretrained MLM head of ``folder`` (``pretrainer.keras`` of a
    pretraining folder, or a published checkpoint with its MLM head) and
    its tokenizer, or ``tokenizer`` (a file)."""
    model = MaskedLM.from_preset(folder, sequence_length=sequence_length, tokenizer=tokenizer)
    return model.fill(texts, top_k, name="texts")


def embed(folder, texts, sequence_length=128, batch_size=64, tokenizer=None,  # noqa: PLR0913 (the command's flags, and the embedder's choices)
          length_buckets=True, **embedding):
    """``[N, D]`` float32 text embeddings from any of our model folders, a
    ``.keras`` file (with ``tokenizer``) or a published checkpoint folder
    (``TextEmbedder.predict``); ``embedding`` holds ``TextEmbedder``'s
    choices: ``layers``, ``pooling``, ``combine``, ``normalize``,
    ``dimensions``."""
    model = TextEmbedder.from_preset(folder, sequence_length=sequence_length,
                                     tokenizer=tokenizer, **embedding)
    return model.vectors(texts, batch_size, length_buckets, name="texts")


def folder_task(folder):
    """The task unit of a fine-tuned folder of ours (None for anything else)."""
    name = read_task_spec(folder).get("task") if os.path.isdir(folder) else None
    return get_task(name) if name in TASKS else None
