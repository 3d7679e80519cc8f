"""Quantization-aware training for a fine-tuned model, before int8 export.

Phases: a copy of the model whose dense layers fake-quantize (``QuantizedDense``)
-> the fine-tuned float weights copied in by variable path -> a short
fine-tune on the model's own training file, so the weights adapt to 8-bit
rounding and the activation ranges are learned -> TFLite converts the
fake-quant ops to int8 kernels with those ranges.
"""

import os

import keras

from albert_keras.training.optimizer import make_optimizer


def quantization_aware_copy(model):
    """``model`` rebuilt with ``quantize_aware=True``, float weights copied."""
    config = model.get_config()
    target = config if "config" in config and "mask_value" in config else config["encoder"]["config"]
    target["quantize_aware"] = True
    target["dtype"] = "float32"
    if "encoder" in config:
        config["dtype"] = "float32"
    copy = type(model).from_config(config)
    by_path = {v.path: v for v in copy.weights}
    missing = []
    for variable in model.weights:
        if variable.path not in by_path:
            missing.append(variable.path)
            continue
        by_path[variable.path].assign(keras.ops.cast(variable, "float32"))
    if missing:
        raise ValueError(f"QAT copy has no place for {missing[0]} (and {len(missing) - 1} more)")
    return copy


def qat_finetune(model, spec, train_path, spm_path, epochs=1, learning_rate=1e-5,
                 batch_size=32, seed=0, log=print):
    """Fine-tunes a quantization-aware copy of ``model``; returns it.

    Args:
        model: a fine-tuned task model (float).
        spec: its ``task.json``.
        train_path: the training file (the folder's own by default).
        spm_path: the tokenizer.
        epochs, learning_rate, batch_size: the QAT fine-tune (short and
            gentle: the model is already trained).
    """
    from albert_keras.tasks.encoding import PieceEncoder
    from albert_keras.tasks.finetune import _dataset
    from albert_keras.tasks.finetune import _losses
    from albert_keras.tasks.finetune import load_task_data

    if not spec.get("task"):
        raise ValueError("QAT needs a fine-tuned task folder (task.json and a training file)")
    if not train_path or not os.path.isfile(train_path):
        raise ValueError(f"QAT needs the training file; {train_path!r} is missing (--qat-data)")
    keras.utils.set_random_seed(seed)
    data = load_task_data(train_path, spec, PieceEncoder(spm_path))
    qat = quantization_aware_copy(model)
    loss, loss_weights, metrics = _losses(spec)
    steps = max(1, len(data) // batch_size) * epochs
    qat.compile(
        optimizer=make_optimizer("adamw", learning_rate=learning_rate, total_steps=steps,
                                 warmup_steps=0, weight_decay=0.0, clip_norm=1.0),
        loss=loss, loss_weights=loss_weights,
    )
    log(f"quantization-aware fine-tuning: {epochs} epoch(s) on {len(data)} rows ...")
    qat.fit(_dataset(data, batch_size, True, seed), epochs=epochs, shuffle=False, verbose=0)
    return qat
