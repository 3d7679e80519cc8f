"""Each family's model-parallel layout, on 8 JAX host devices: the declared
kernels are split over the model axis, the outputs equal one device's, and a
model the layout splits nothing of is refused."""

import json
import os
import subprocess
import sys

import pytest

from albert_keras.families import families

CHILD = r"""
import json
import keras
import numpy as np
from albert_keras.families import preset_config, build_backbone
from albert_keras.models.layout_map import check_sharded
from albert_keras.training.strategy import KerasDistribution, check_layout, describe_devices
from albert_keras.training.strategy import where_it_runs

strategy = KerasDistribution.for_name("model_parallel")
result = {"devices": describe_devices(strategy)}
rng = np.random.default_rng(0)
inputs = {"token_ids": rng.integers(5, 90, (4, 16)).astype("int32"),
          "segment_ids": np.zeros((4, 16), "int32"),
          "padding_mask": np.ones((4, 16), "int32")}
for preset in ("albert_tiny", "deberta_v3_tiny", "mobilebert_tiny", "modernbert_tiny"):
    config = preset_config(preset, vocab_size=100)
    keras.utils.set_random_seed(0)
    one = build_backbone(config)
    with strategy.scope():
        split = build_backbone(config)
    split.set_weights(one.get_weights())
    split_paths = check_layout(strategy, split)  # raises when nothing is split
    sharded = check_sharded(split)
    result.setdefault("lines", {})[preset] = [
        where_it_runs(strategy, "float32", 16, split, split_paths), len(split.weights)]
    big = [w.path for w in split.weights if len(w.shape) == 2 and "embedding" not in w.path
           and "pooler" not in w.path and "bottleneck" not in w.path
           and not w.path.startswith("head/")]  # ModernBERT's pooler is HF's "head"
    a = keras.ops.convert_to_numpy(one(inputs)["sequence_output"])
    b = keras.ops.convert_to_numpy(split(inputs)["sequence_output"])
    result[preset] = {"sharded": sharded, "replicated_kernels": sorted(set(big) - set(sharded)),
                      "max_diff": float(np.abs(a - b).max())}
with strategy.scope():
    toy = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, name="not_a_family")])
try:
    check_layout(strategy, toy)
    result["toy"] = "accepted"
except ValueError as e:
    result["toy"] = str(e)
print("RESULT " + json.dumps(result))
"""


@pytest.fixture(scope="module")
def on_eight_devices():
    env = {**os.environ, "KERAS_BACKEND": "jax", "CUDA_VISIBLE_DEVICES": "",
           "XLA_FLAGS": "--xla_force_host_platform_device_count=8"}
    done = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=900)
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert line, done.stderr[-3000:]
    return json.loads(line[0][len("RESULT "):])


def test_every_built_in_family_declares_a_layout():
    built_in = {"albert", "deberta", "mobilebert", "modernbert"}  # not tests' own (the toy's)
    assert {f.name: f.layout is not None for f in families() if f.name in built_in} == {
        "albert": True, "deberta": True, "mobilebert": True, "modernbert": True}


@pytest.mark.parametrize("preset,split_kernels", [
    ("albert_tiny", 6),        # one shared attention and FFN: q, k, v, output, ffn, ffn_output
    ("deberta_v3_tiny", 12),   # two unshared layers of the same six
    # 24 blocks: q, k, v, attention output, and two FFNs (ffn_0, output_ffn) x 2
    ("mobilebert_tiny", 24 * 8),
    ("modernbert_tiny", 4 * 4),  # 4 layers: Wqkv, Wo, Wi, Wo
])
def test_the_declared_kernels_split_and_the_outputs_equal_one_devices(
        on_eight_devices, preset, split_kernels):
    assert on_eight_devices["devices"] == {"backend": "jax", "hardware": "CPU", "devices": 8,
                                           "replicas": 4}
    found = on_eight_devices[preset]
    assert len(found["sharded"]) == split_kernels, found["sharded"][:12]
    assert found["replicated_kernels"] == []
    assert found["max_diff"] < 1e-5
    # the line a run prints says so, with the count of weights split
    line, weights = on_eight_devices["lines"][preset]
    assert line == (f"8 CPU device(s) on jax, 4 replica(s): global batch 16, precision float32; "
                    f"{split_kernels} of {weights} weights split over the model axis")


def test_a_model_the_layout_cannot_split_is_refused(on_eight_devices):
    assert "the layout splits no weight of Sequential" in on_eight_devices["toy"]
