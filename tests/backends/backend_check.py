"""Run under one Keras backend (``KERAS_BACKEND`` set by the caller):
the shared layer/model checks, the outputs of a ``.keras`` file made on
another backend, a ``.keras`` file for the caller, and a short fit.

    KERAS_BACKEND=jax python tests/backends/backend_check.py IN_DIR OUT_DIR

IN_DIR holds ``encoder.keras`` and ``inputs.npz`` (made under TensorFlow);
OUT_DIR receives ``outputs.npz``, ``encoder.keras`` and ``report.json``.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

from albert_keras import AlbertConfig  # noqa: E402
from albert_keras import AlbertEncoder  # noqa: E402
from albert_keras import EncoderPretrainer  # noqa: E402
from albert_keras.families import build_backbone  # noqa: E402
from albert_keras.layers.attention_block import AttentionBlock  # noqa: E402
from tests.helpers import run_layer_test  # noqa: E402
from tests.helpers import run_model_test  # noqa: E402

TINY = AlbertConfig(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=32, max_position_embeddings=32)


def _inputs(batch, seq):
    rng = np.random.default_rng(seq)
    mask = np.ones((batch, seq), "int32")
    mask[0, seq // 2:] = 0
    return {"token_ids": rng.integers(0, 60, (batch, seq)).astype("int32"),
            "segment_ids": np.zeros((batch, seq), "int32"), "padding_mask": mask}


def main(in_dir, out_dir):
    report = {"backend": keras.backend.backend()}

    # -- the model code alone imports no TensorFlow ------------------------------------
    # (Keras' own file I/O imports it when it is installed, so this is
    # recorded before anything is saved.)
    probe = EncoderPretrainer(AlbertEncoder(TINY))
    probe({**_inputs(2, 9), "masked_positions": np.ones((2, 3), "int32")})
    report["tensorflow_imported"] = "tensorflow" in sys.modules

    # -- the shared checks --------------------------------------------------------
    run_layer_test(
        AttentionBlock, dict(hidden_size=16, num_heads=4),
        lambda b, s: (np.random.default_rng(s).normal(size=(b, s, 16)).astype("float32"),
                      _inputs(b, s)["padding_mask"]),
        lambda b, s: (b, s, 16),
    )
    run_model_test(
        lambda dtype: AlbertEncoder(TINY, dtype=dtype), _inputs,
        lambda b, s: {"sequence_output": (b, s, 16), "pooled_output": (b, 16)},
    )

    # -- a .keras file from another backend: same outputs ----------------------------
    encoder = keras.saving.load_model(os.path.join(in_dir, "encoder.keras"), safe_mode=True)
    inputs = dict(np.load(os.path.join(in_dir, "inputs.npz")))
    outputs = {k: keras.ops.convert_to_numpy(v) for k, v in encoder(inputs).items()}
    np.savez(os.path.join(out_dir, "outputs.npz"), **outputs)
    encoder.save(os.path.join(out_dir, "encoder.keras"))

    # -- a short pretraining fit of the same architecture ------------------------------
    keras.utils.set_random_seed(0)
    config = encoder.config
    pretrainer = EncoderPretrainer(build_backbone(config),  # any family's (MobileBERT too)
                                  enhanced_mask_decoder=getattr(config, "relative_attention",
                                                                False))
    pretrainer.compile(optimizer=keras.optimizers.AdamW(1e-2))
    x = _inputs(8, 12)
    x["masked_positions"] = np.tile(np.array([[1, 2, 3]], "int32"), (8, 1))
    y = {"masked_ids": np.full((8, 3), 7, "int32"), "masked_weights": np.ones((8, 3), "float32"),
         "sop_label": np.zeros((8,), "int32")}
    history = pretrainer.fit(x, y, batch_size=4, epochs=12, verbose=0).history
    report["loss"] = [float(v) for v in history["loss"]]
    with open(os.path.join(out_dir, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
