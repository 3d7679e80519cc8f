"""QuantizedDense: the shared checker, range tracking, and 8-bit outputs."""

import keras
import numpy as np

from albert_keras.layers.quantized_dense import QuantizedDense
from albert_keras.layers.quantized_dense import make_dense
from tests.helpers import run_layer_test


def _x(batch, seq):
    return (np.random.default_rng(seq).normal(size=(batch, seq, 8)).astype("float32"),)


def test_quantized_dense():
    run_layer_test(QuantizedDense, {"units": 4, "activation": "gelu"}, _x,
                   lambda b, s: (b, s, 4))


def test_ranges_follow_training_batches_and_stay_fixed_at_inference():
    layer = QuantizedDense(3, ema_decay=0.5)
    x = np.linspace(-2.0, 4.0, 24, dtype="float32").reshape(1, 3, 8)
    layer(x, training=True)
    np.testing.assert_allclose(layer.input_range.numpy(), [-2.0, 4.0])  # first batch
    layer(2 * x, training=True)
    np.testing.assert_allclose(layer.input_range.numpy(), [-3.0, 6.0])  # moving average
    before = layer.input_range.numpy().copy()
    layer(10 * x, training=False)
    np.testing.assert_array_equal(layer.input_range.numpy(), before)


def test_outputs_sit_on_an_8_bit_grid():
    layer = QuantizedDense(5, use_bias=False)
    x = np.random.default_rng(0).normal(size=(64, 8)).astype("float32")
    layer(x, training=True)
    y = layer(x, training=False).numpy()
    lo, hi = layer.output_range.numpy()
    step = (hi - lo) / 255.0
    # Every output is min + k * step (up to the nudging of the zero point).
    k = (y - y.min()) / step
    assert np.allclose(k, np.round(k), atol=1e-2)
    assert len(np.unique(np.round(y, 5))) <= 256
    # Close to the float layer all the same.
    dense = keras.layers.Dense(5, use_bias=False)
    dense.build((None, 8))
    dense.kernel.assign(layer.kernel)
    assert np.max(np.abs(dense(x).numpy() - y)) < 4 * step


def test_make_dense_and_weight_paths():
    plain = make_dense(4, name="proj")
    quant = make_dense(4, quantize_aware=True, name="proj")
    assert type(plain) is keras.layers.Dense and type(quant) is QuantizedDense
    plain.build((None, 3))
    quant.build((None, 3))
    assert [v.path for v in plain.weights] == [v.path for v in quant.trainable_weights]
