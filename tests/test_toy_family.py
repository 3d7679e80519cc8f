"""A model family defined here, in the test, goes through the whole package.

The proof that a family is its own folder plus one registry line: nothing
below changes albert_keras. The toy encoder has no attention (each block
mixes the tokens through their masked mean), but it has the backbone entry
(``albert_keras.models.backbone``), so fine-tuning, saving, loading with
plain Keras and the TFLite export with validation all take it.
"""

import dataclasses
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
from keras import ops

from albert_keras.drivers.finetune import finetune
from albert_keras.families import Family
from albert_keras.families import build_backbone
from albert_keras.families import register_family
from albert_keras.models.backbone import BACKBONE_MEMBERS
from albert_keras.models.backbone import BACKBONE_METHODS
from albert_keras.models.backbone import Backbone
from albert_keras.models.backbone import is_backbone
from albert_keras.saving import save_model
from albert_keras.sources.layout import ENCODER_FILE
from albert_keras.sources.tokenizers import write_tokenizer
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.text.registry import load_tokenizer
from tests.helpers import make_wordpiece_vocab


@dataclasses.dataclass
class ToyConfig:
    vocab_size: int = 2000
    hidden_size: int = 16
    num_hidden_layers: int = 2
    num_attention_heads: int = 1
    max_position_embeddings: int = 64
    initializer_range: float = 0.02

    def with_dropout(self, rate):
        return self  # no dropout in the toy

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data, source=None):
        return cls(**data)


@keras.saving.register_keras_serializable(package="toy_family_test")
class MeanMixBlock(keras.layers.Layer):
    """``LayerNorm(x + relu(W [x, masked mean of x]))``."""

    def __init__(self, hidden_size, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.dense = keras.layers.Dense(hidden_size, activation="relu", dtype=self.dtype_policy,
                                        name="dense")
        self.norm = keras.layers.LayerNormalization(dtype=self.dtype_policy, name="norm")

    def build(self, shape):
        self.dense.build((*shape[:-1], 2 * shape[-1]))
        self.norm.build(shape)

    def call(self, x, padding_mask, training=False):
        mask = ops.cast(padding_mask, x.dtype)[:, :, None]
        mean = ops.sum(x * mask, axis=1, keepdims=True) / ops.maximum(
            ops.sum(mask, axis=1, keepdims=True), 1.0)
        mixed = ops.concatenate([x, ops.broadcast_to(mean, ops.shape(x))], axis=-1)
        return self.norm(x + self.dense(mixed))

    def get_config(self):
        return {**super().get_config(), "hidden_size": self.hidden_size}


@keras.saving.register_keras_serializable(package="toy_family_test")
class ToyEncoder(Backbone):
    """Token and position embeddings, then ``MeanMixBlock``s; the pooled
    output is ``tanh(W h_0)``."""

    def __init__(self, config, output_hidden_states=False, mask_value=-10000.0,  # noqa: PLR0913 (the backbone's constructor keywords)
                 quantize_aware=False, cls_only=False, dtype=None, **kwargs):
        config = ToyConfig.from_dict(config) if isinstance(config, dict) else config
        if quantize_aware:
            raise ValueError("the toy family has no quantization-aware layers")
        h = config.hidden_size
        tokens = keras.layers.Embedding(config.vocab_size, h, dtype=dtype, name="tokens")
        positions = keras.layers.Embedding(config.max_position_embeddings, h, dtype=dtype,
                                           name="positions")
        blocks = [MeanMixBlock(h, dtype=dtype, name=f"block_{i}")
                  for i in range(config.num_hidden_layers)]
        pooler = keras.layers.Dense(h, activation="tanh", dtype=dtype, name="pooler")
        self.config, self.tokens, self.positions = config, tokens, positions
        self.blocks, self.pooler = blocks, pooler
        inputs = {name: keras.Input((None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        states = self.encode(inputs)["hidden_states"]
        sequence = states[-1][:, :1] if cls_only else states[-1]
        outputs = {"sequence_output": sequence, "pooled_output": self.pool(sequence)}
        if output_hidden_states:
            outputs["hidden_states"] = keras.layers.Lambda(
                lambda s: ops.stack(s, axis=1))(states)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.config, self.tokens, self.positions = config, tokens, positions
        self.blocks, self.pooler = blocks, pooler
        if dtype is not None:
            self.dtype_policy = dtype
        self.output_hidden_states, self.mask_value = output_hidden_states, float(mask_value)
        self.quantize_aware, self.cls_only = False, bool(cls_only)

    def embed(self, inputs, training=False, token_table=None):
        ids = ops.cast(inputs["token_ids"], "int32")
        where = ops.cumsum(ops.ones_like(ids), axis=1) - 1
        return self.tokens(ids) + self.positions(where)

    def encode(self, inputs, training=False, embedded=None, token_table=None,  # noqa: PLR0913 (the entry's keywords)
               query_positions=None, return_attention=False):
        x = self.embed(inputs, training) if embedded is None else embedded
        states = [x]
        for block in self.blocks:
            states.append(block(states[-1], inputs["padding_mask"], training=training))
        return {"hidden_states": states, "sequence_output": states[-1]}

    def pool(self, rows, training=False, padding_mask=None):
        return self.pooler(rows[:, 0])

    def variables_by_depth(self):
        depth = {v.path: 0 for v in self.tokens.weights + self.positions.weights}
        for i, block in enumerate(self.blocks):
            depth.update({v.path: i + 1 for v in block.trainable_variables})
        return depth

    @property
    def num_hidden_states(self):
        return self.config.num_hidden_layers + 1

    @property
    def token_embedding(self):
        return self.tokens

    def embedding_state(self):  # two layers, where Backbone's default reads one
        return "ToyEmbeddings", self.tokens.get_weights() + self.positions.get_weights()

    def load_embedding_state(self, state):
        name, values = state
        mine = self.tokens.weights + self.positions.weights
        if name != "ToyEmbeddings" or [v.shape for v in values] != [tuple(w.shape) for w in mine]:
            return False
        self.tokens.set_weights(values[:1])
        self.positions.set_weights(values[1:])
        return True

    def get_config(self):
        return {"name": self.name, "trainable": self.trainable,
                "config": self.config.to_dict(),
                "output_hidden_states": self.output_hidden_states,
                "mask_value": self.mask_value, "quantize_aware": self.quantize_aware,
                "cls_only": self.cls_only,
                "dtype": keras.dtype_policies.serialize(self.dtype_policy)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):
            config["dtype"] = keras.dtype_policies.deserialize(config["dtype"])
        return cls(**config)


FAMILY = register_family(Family(
    name="toy", config_class=ToyConfig, backbone=f"{__name__}:ToyEncoder",
    presets={"toy_small": {"hidden_size": 16}}))


_WORDS = {0: "dull grey slow flat tired", 1: "bright vivid quick sharp lively"}


def _task_csv(path, rows, seed):
    rng = np.random.default_rng(seed)
    with open(path, "w") as f:
        f.write("text,label\n")
        for _ in range(rows):
            label = int(rng.integers(2))
            words = rng.choice(_WORDS[label].split(), 4).tolist() + ["the", "a"]
            rng.shuffle(words)
            f.write(f"{' '.join(words)},{label}\n")
    return str(path)


def _toy_folder(tmp_path):
    """A "pretrained" toy model folder: encoder.keras and a WordPiece vocab."""
    folder = tmp_path / "toy"
    folder.mkdir()
    texts = [" ".join(_WORDS.values()) + " the a"] * 50
    vocab = make_wordpiece_vocab(str(tmp_path), lowercase=True, vocab_size=200, texts=texts)
    tokenizer = load_tokenizer(vocab)
    encoder = build_backbone(FAMILY.config_class(**FAMILY.presets["toy_small"]))
    encoder.tokenizer = tokenizer
    save_model(encoder, str(folder / ENCODER_FILE))
    write_tokenizer(str(folder), tokenizer)
    return str(folder)


@pytest.mark.sampled(keep=2, group="published_folders")  # CI: 2 of the published-folder end-to-end runs per commit
def test_a_family_from_a_test_file_finetunes_saves_loads_and_exports(tmp_path):
    from albert_keras.export import ExportConfig
    from albert_keras.export import export_tflite

    init = _toy_folder(tmp_path)
    train = _task_csv(tmp_path / "train.csv", 256, seed=0)
    test = _task_csv(tmp_path / "test.csv", 64, seed=1)
    out = str(tmp_path / "cls")
    cfg = FinetuneConfig(task="classify", epochs=4, batch_size=16, learning_rate=1e-2,
                         sequence_length=16, layer_decay=0.8)
    metrics = finetune(init, train, test, out, cfg)
    # the words decide the label: a working model is nearly perfect, chance is 0.5
    assert metrics["accuracy"] >= 0.9, metrics

    # a fresh process, plain Keras after the test module registers the family
    script = (f"import sys; sys.path.insert(0, {os.getcwd()!r}); import keras, json; "
              f"import albert_keras, {__name__}; "
              f"m = keras.saving.load_model({os.path.join(out, 'model.keras')!r}); "
              "print(json.dumps([type(m.encoder).__name__, m.labels]))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True)
    assert json.loads(loaded.stdout.splitlines()[-1]) == ["ToyEncoder", ["0", "1"]]

    sidecar = export_tflite(out, str(tmp_path / "cls.tflite"),
                            ExportConfig(validation_data=test, sequence_length=16))
    report = sidecar["validation"]
    assert report["passed"] and report["outputs"]["logits"]["max_abs_diff"] < 1e-4
    assert report["tflite_accuracy"] >= 0.9
    assert sidecar["cls_only"] is True  # the classifier reads only [CLS]: the toy cut it


def test_the_toy_encoder_has_every_member_is_backbone_checks():
    """``is_backbone`` checks each member callers use, and the toy family
    supplies them all (its two embedding tables move to a student as one)."""
    teacher, student = (build_backbone(ToyConfig()) for _ in range(2))
    assert is_backbone(teacher)
    assert student.load_embedding_state(teacher.embedding_state())
    np.testing.assert_array_equal(student.positions.get_weights()[0],
                                  teacher.positions.get_weights()[0])

    class Without:
        def __init__(self, member):
            self.member = member

        def __getattr__(self, name):
            if name == self.member:
                raise AttributeError(name)
            return getattr(teacher, name)

    for member in ("config", *BACKBONE_METHODS, *BACKBONE_MEMBERS):
        assert not is_backbone(Without(member)), member
