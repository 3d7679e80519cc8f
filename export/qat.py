"""Quantization-aware training for a fine-tuned model, before int8 export.

Phases: a copy of the model whose dense layers fake-quantize (``QuantizedDense``)
-> the fine-tuned float weights copied in by variable path -> a short
fine-tune on the model's own training file, so the weights adapt to 8-bit
rounding and the activation ranges are learned -> TFLite converts the
fake-quant ops to int8 kernels with those ranges.
"""

import logging
import os

import keras

from albert_keras.export.converter import rebuild
from albert_keras.export.export_config import arg
from albert_keras.optimizers.optimizer import build_optimizer
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.training.callbacks import NanGuard

logger = logging.getLogger(__name__)


def quantization_aware_copy(model):
    """``model`` rebuilt with ``quantize_aware=True``, float weights copied."""
    return rebuild(model, quantize_aware=True)


def qat_finetune(model, spec, train_path, tokenizer, epochs=1, learning_rate=1e-5,
                 batch_size=32, seed=0):
    """Fine-tunes a quantization-aware copy of ``model``; returns it.

    Args:
        model: a fine-tuned task model (float).
        spec: its ``TaskSpec`` (None for a folder without a task).
        train_path: the training file (the folder's own by default).
        tokenizer: the host-side tokenizer.
        epochs, learning_rate, batch_size: the QAT fine-tune (short and
            gentle: the model is already trained).
    """
    from albert_keras.tasks.registry import get_task
    from albert_keras.tasks.task_run import make_dataset

    if spec is None:
        raise ValueError("QAT needs a fine-tuned task folder (task.json and a training file)")
    if not train_path or not os.path.isfile(train_path):
        raise ValueError(f"QAT needs the training file; {train_path!r} is missing ({arg('qat_data')})")
    keras.utils.set_random_seed(seed)
    task = get_task(spec.task)
    data, _ = task.read(train_path, spec, tokenizer)
    qat = quantization_aware_copy(model)
    args = task.compile_args(spec)
    steps = max(1, len(data) // batch_size) * epochs
    qat.compile(
        optimizer=make_optimizer("adamw", learning_rate=learning_rate, total_steps=steps,
                                 warmup_steps=0, weight_decay=0.0, clip_norm=1.0),
        loss=args["loss"], loss_weights=args.get("loss_weights"),
    )
    logger.info(f"quantization-aware fine-tuning: {epochs} epoch(s) on {len(data)} rows ...")
    guard = NanGuard()
    build_optimizer(qat)
    # Every row padded to the sequence length (no length buckets): the
    # activation ranges are learned on the inputs the phone sees, [1, S].
    qat.fit(make_dataset(data, batch_size, True, seed), epochs=epochs, shuffle=False,
            verbose=0, callbacks=[guard])
    if guard.bad_step is not None:
        raise RuntimeError(f"quantization-aware fine-tuning: the loss became NaN at step "
                           f"{guard.bad_step}; lower {arg('qat_learning_rate')}")
    return qat
