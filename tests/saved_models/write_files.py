"""Writes small .keras files of every saved model kind with the package as
it is, and their outputs on fixed inputs: the files a release before the
renaming of the generic parts wrote, which tests/test_saving.py loads.
Run from the checkout: python -m tests.saved_models.write_files tests/saved_models"""

import json
import os
import sys
import tempfile

import keras
import numpy as np

import albert_keras  # noqa: F401
from albert_keras.config import AlbertConfig
from albert_keras.models.albert.albert_encoder import AlbertEncoder
from albert_keras.models.albert_classifier import AlbertClassifier
from albert_keras.models.albert_discriminator import AlbertDiscriminator
from albert_keras.models.albert_embedder import AlbertEmbedder
from albert_keras.models.albert_multiple_choice import AlbertMultipleChoice
from albert_keras.models.albert_pretrainer import AlbertPretrainer
from albert_keras.models.albert_question_answerer import AlbertQuestionAnswerer
from albert_keras.models.albert_token_classifier import AlbertTokenClassifier
from albert_keras.models.mobilebert.mobilebert_config import MobileBertConfig
from albert_keras.models.mobilebert.mobilebert_encoder import MobileBertEncoder
from albert_keras.optimizers.optimizer import AlbertAdamW
from albert_keras.saving import save_model
from albert_keras.text.registry import load_tokenizer
from tests.helpers import write_small_vocab


def main(out):
    os.makedirs(out, exist_ok=True)
    keras.utils.set_random_seed(0)
    with tempfile.TemporaryDirectory() as work:  # the files carry it
        tokenizer = load_tokenizer(write_small_vocab(work, 60))
    small = dict(vocab_size=60, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                 num_attention_heads=2, intermediate_size=24, max_position_embeddings=32)

    def encoder(**changes):
        made = AlbertEncoder(AlbertConfig(**{**small, **changes}))
        made.tokenizer = tokenizer
        return made

    rng = np.random.default_rng(0)
    ids = rng.integers(5, 60, (2, 10)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    inputs = {"token_ids": ids * mask, "segment_ids": np.zeros_like(ids), "padding_mask": mask}
    choices = {k: np.stack([v, v[::-1]], 1) for k, v in inputs.items()}
    pretraining = {**inputs, "masked_positions": np.array([[1, 2], [3, 4]], "int32")}
    mobile = MobileBertEncoder(MobileBertConfig(vocab_size=60, hidden_size=16, embedding_size=8,
                                                intra_bottleneck_size=8, num_hidden_layers=2,
                                                num_attention_heads=2, intermediate_size=16,
                                                num_feedforward_networks=2,
                                                max_position_embeddings=32))
    mobile.tokenizer = tokenizer
    spec = {"task": "classify", "labels": ["neg", "pos"], "sequence_length": 32}
    models = {
        "encoder": (encoder(), inputs),
        "pretrainer": (AlbertPretrainer(encoder()), pretraining),
        "classifier": (AlbertClassifier(encoder(), 2, task_spec=spec), inputs),
        "tagger": (AlbertTokenClassifier(encoder(), 3), inputs),
        "qa": (AlbertQuestionAnswerer(encoder()), inputs),
        "choice": (AlbertMultipleChoice(encoder()), choices),
        "discriminator": (AlbertDiscriminator(encoder(sharing="none", num_hidden_groups=2)), inputs),
        "embedder": (AlbertEmbedder(encoder()), inputs),
        "mobilebert_classifier": (AlbertClassifier(mobile, 2, task_spec=spec), inputs),
    }
    expected = {}
    for name, (model, x) in models.items():
        if name == "classifier":  # a training checkpoint: the optimizer's state too
            model.compile(optimizer=AlbertAdamW(learning_rate=1e-3), loss="mse")
            model.fit(inputs, {"logits": np.zeros((2, 2), "float32")}, epochs=1, verbose=0)
        save_model(model, os.path.join(out, f"{name}.keras"), overwrite=True,
                   optimizer=name == "classifier")
        outputs = model(x, training=False)
        for key, value in (outputs.items() if isinstance(outputs, dict) else [("out", outputs)]):
            expected[f"{name}/{key}"] = np.asarray(value)
    np.savez(os.path.join(out, "outputs.npz"), **expected,
             **{f"inputs/{k}": v for k, v in inputs.items()},
             **{f"choices/{k}": v for k, v in choices.items()},
             **{f"pretraining/{k}": v for k, v in pretraining.items()})
    print(json.dumps({n: os.path.getsize(os.path.join(out, f"{n}.keras")) for n in models}))


if __name__ == "__main__":
    main(sys.argv[1])
