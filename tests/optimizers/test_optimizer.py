import keras
import numpy as np
import pytest

from albert_keras import AlbertConfig
from albert_keras import AlbertEncoder
from albert_keras import EncoderPretrainer
from albert_keras.optimizers.optimizer import LayerwiseLamb
from albert_keras.optimizers.optimizer import make_optimizer
from albert_keras.optimizers.schedule import WarmupPolynomialDecay
from tests.helpers import TINY


def test_schedule_values():
    s = WarmupPolynomialDecay(1e-3, total_steps=1000, warmup_steps=100)
    assert float(s(0)) == 0.0
    assert float(s(50)) == pytest.approx(5e-4)
    assert float(s(100)) == pytest.approx(1e-3)
    assert float(s(550)) == pytest.approx(5e-4)
    assert float(s(1000)) == pytest.approx(0.0)
    assert float(s(5000)) == pytest.approx(0.0)
    clone = WarmupPolynomialDecay.from_config(s.get_config())
    assert float(clone(300)) == pytest.approx(float(s(300)))


def test_lamb_skips_layer_norm_and_bias():
    model = EncoderPretrainer(AlbertEncoder(AlbertConfig(**TINY)))
    optimizer = make_optimizer("lamb", total_steps=10, warmup_steps=1)
    optimizer.build(model.trainable_variables)
    skipped = {v.path for v in model.trainable_variables if not optimizer._use_weight_decay(v)}
    decayed = {v.path for v in model.trainable_variables if optimizer._use_weight_decay(v)}
    assert skipped and decayed
    assert all(p.split("/")[-1] in ("gamma", "beta", "bias", "output_bias") for p in skipped)
    assert all(p.split("/")[-1] in ("kernel", "embeddings") for p in decayed)
    # Every LayerNorm and every bias is skipped.
    layer_norms = [v for v in model.trainable_variables if v.name in ("gamma", "beta")]
    assert {v.path for v in layer_norms} <= skipped
    assert any("output_bias" in p for p in skipped)


def reference_lamb(w, grads, lr, wd, b1=0.9, b2=0.999, eps=1e-6, excluded=False,  # noqa: PLR0913 (the original optimizer's arguments, one for one)
                   bias_correction=False):
    """Steps of google-research/albert's ``lamb_optimizer.py``, transcribed
    in numpy: no bias correction; decay inside the trust ratio; a variable
    excluded from weight decay is also excluded from the ratio (its
    ``exclude_from_layer_adaptation`` defaults to the decay exclusions).
    ``bias_correction`` adds the LAMB paper's ``1 - beta**t`` division."""
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        m_hat, v_hat = m, v
        if bias_correction:
            m_hat, v_hat = m / (1 - b1**t), v / (1 - b2**t)
        update = m_hat / (np.sqrt(v_hat) + eps)
        ratio = 1.0
        if not excluded:
            update = update + wd * w
            w_norm, u_norm = np.linalg.norm(w), np.linalg.norm(update)
            ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
        w = w - ratio * lr * update
    return w


@pytest.mark.parametrize("bias_correction", [False, True])
@pytest.mark.parametrize("name", ["kernel", "bias"])
def test_lamb_steps_match_the_original(name, bias_correction):
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(4, 3)).astype("float32")
    grads = [rng.normal(size=(4, 3)).astype("float32") for _ in range(4)]
    var = keras.Variable(w0, name=name)
    opt = LayerwiseLamb(learning_rate=0.01, weight_decay=0.1, bias_correction=bias_correction)
    for g in grads:
        opt.apply_gradients([(g, var)])
    expected = reference_lamb(w0.astype("float64"), grads, 0.01, 0.1, excluded=name == "bias",
                              bias_correction=bias_correction)
    # float32 moments, updated in Keras' form m += (g - m) * (1 - b1)
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-4, atol=2e-5)


def test_lamb_moves_a_zero_bias_like_adam():
    """A bias that starts at zero takes full steps: with a trust ratio it
    would stay within lr * ||w|| of zero."""
    var = keras.Variable(np.zeros(8, "float32"), name="bias")
    opt = LayerwiseLamb(learning_rate=0.01, weight_decay=0.01)
    for _ in range(20):
        opt.apply_gradients([(np.ones(8, "float32"), var)])
    # 20 steps of lr * 1 (bias-corrected Adam on a constant gradient); with
    # the trust ratio it would sit near -0.012
    np.testing.assert_allclose(var.numpy(), -0.2, rtol=1e-4)


def test_lamb_without_bias_correction_takes_the_originals_larger_early_steps():
    var = keras.Variable(np.zeros(8, "float32"), name="bias")
    opt = LayerwiseLamb(learning_rate=0.01, weight_decay=0.01, bias_correction=False)
    for _ in range(20):
        opt.apply_gradients([(np.ones(8, "float32"), var)])
    # each step is lr * (1 - 0.9**t) / sqrt(1 - 0.999**t), 3.2 to 6.5 times lr
    expected = -0.01 * sum((1 - 0.9**t) / np.sqrt(1 - 0.999**t) for t in range(1, 21))
    np.testing.assert_allclose(var.numpy(), expected, rtol=1e-3)


def test_optimizer_config_round_trip():
    opt = make_optimizer("lamb", learning_rate=1e-3, total_steps=100, warmup_steps=10)
    clone = LayerwiseLamb.from_config(opt.get_config())
    assert clone.no_decay_names == ["gamma", "beta", "bias"]
    assert clone.bias_correction is True
    assert LayerwiseLamb.from_config(LayerwiseLamb(bias_correction=False).get_config()).bias_correction is False
    assert clone.get_config()["global_clipnorm"] == 1.0
    with pytest.raises(ValueError, match="optimizer"):
        make_optimizer("sgd")


def test_adamw_steps_equal_torch_adamw():
    """Our AdamW against torch's on the same gradients: epsilon after the
    bias correction, decoupled decay, a weight excluded from decay."""
    import torch  # a test dependency (the parity tests' reference)
    rng = np.random.default_rng(0)
    start = {"kernel": rng.normal(size=(4, 3)).astype("float32"),
             "bias": rng.normal(size=(3,)).astype("float32")}
    # gradients of the order of epsilon, where the two Adam forms part
    grads = [{k: (1e-6 * rng.normal(size=v.shape)).astype("float32") for k, v in start.items()}
             for _ in range(20)]
    lr, wd, eps = 1e-3, 0.01, 1e-6

    ours = {k: keras.Variable(v, name=k) for k, v in start.items()}
    opt = make_optimizer("adamw", learning_rate=lr, total_steps=10**9, warmup_steps=0,
                         weight_decay=wd, clip_norm=None, epsilon=eps)
    variables = [ours["kernel"], ours["bias"]]
    for g in grads:
        opt.apply_gradients([(keras.ops.convert_to_tensor(g["kernel"]), variables[0]),
                             (keras.ops.convert_to_tensor(g["bias"]), variables[1])])

    theirs = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in start.items()}
    torch_opt = torch.optim.AdamW(
        [{"params": [theirs["kernel"]], "weight_decay": wd},
         {"params": [theirs["bias"]], "weight_decay": 0.0}],
        lr=lr, betas=(0.9, 0.999), eps=eps)
    for g in grads:
        for k, p in theirs.items():
            p.grad = torch.tensor(g[k])
        torch_opt.step()
    for k in start:
        moved = np.abs(theirs[k].detach().numpy() - start[k]).max()
        assert moved > 1e-4  # the steps are not swallowed by epsilon
        np.testing.assert_allclose(keras.ops.convert_to_numpy(ours[k]),
                                   theirs[k].detach().numpy(), rtol=0, atol=moved * 1e-3)


@pytest.mark.parametrize("optimizer", ["adamw", "lamb"])
def test_a_table_row_read_many_times_steps_as_with_a_dense_gradient(optimizer):
    """An embedding lookup's gradient comes as one slice per looked-up id;
    a row read 1,000 times must step as with the summed (dense) gradient.
    AdamW is compared with torch's AdamW, which sees a dense gradient; LAMB
    with the same lookup written as a dense matmul."""
    import tensorflow as tf
    import torch

    from albert_keras.optimizers.optimizer import LayerwiseAdamW

    rng = np.random.default_rng(0)
    start = rng.normal(size=(3, 4)).astype("float32")
    ids = np.array([0] * 1000 + [1] * 3, "int32")
    weights = rng.normal(size=(len(ids), 4)).astype("float32")

    def make(name):
        if optimizer == "adamw":
            return LayerwiseAdamW(learning_rate=1e-2, weight_decay=0.0, name=name)
        return LayerwiseLamb(learning_rate=1e-2, weight_decay=0.0, name=name)

    sparse, dense = keras.Variable(start, name="sparse"), keras.Variable(start, name="dense")
    opt_sparse, opt_dense = make("a"), make("b")
    one_hot = tf.one_hot(ids, 3)
    for _ in range(5):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.gather(sparse, ids) * weights)
        grad = tape.gradient(loss, sparse)
        assert isinstance(grad, tf.IndexedSlices)
        opt_sparse.apply_gradients([(grad, sparse)])
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(one_hot, dense) * weights)
        opt_dense.apply_gradients([(tape.gradient(loss, dense), dense)])
    np.testing.assert_allclose(np.array(sparse), np.array(dense), rtol=1e-5, atol=1e-6)
    if optimizer == "adamw":
        table = torch.nn.Parameter(torch.tensor(start))
        opt = torch.optim.AdamW([table], lr=1e-2, weight_decay=0.0)
        for _ in range(5):
            opt.zero_grad()
            (table[torch.tensor(ids, dtype=torch.long)] * torch.tensor(weights)).sum().backward()
            opt.step()
        np.testing.assert_allclose(np.array(sparse), table.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(keras.backend.backend() != "tensorflow", reason="TensorFlow's tracing")
def test_built_optimizer_means_one_trace_of_the_training_step(monkeypatch):
    """Keras leaves building the optimizer to the first trace when the model
    has no strategy, and TensorFlow then traces the step a second time (the
    first trace created variables); built first, the step is traced once,
    and batches of different lengths reuse that graph."""
    import tensorflow as tf
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
    from albert_keras.optimizers.optimizer import build_optimizer

    traces = []
    step = TensorFlowTrainer.train_step
    monkeypatch.setattr(TensorFlowTrainer, "train_step",
                        lambda self, data: traces.append(1) or step(self, data))

    def batches(length):
        return ({"token_ids": np.ones((4, length), "int32"),
                 "segment_ids": np.zeros((4, length), "int32"),
                 "padding_mask": np.ones((4, length), "int32")}, np.zeros(4, "int32"))

    spec = ({k: tf.TensorSpec((None, None), tf.int32)
             for k in ("token_ids", "segment_ids", "padding_mask")},
            tf.TensorSpec((None,), tf.int32))
    data = tf.data.Dataset.from_generator(lambda: (batches(n) for n in (8, 16, 8)),
                                          output_signature=spec)

    def traced(build_first):
        traces.clear()
        model = SequenceClassifier(AlbertEncoder(AlbertConfig(**TINY)), 2)
        model.compile(optimizer=make_optimizer("adamw", total_steps=3, warmup_steps=1),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        if build_first:
            build_optimizer(model)
        model.fit(data, epochs=1, verbose=0)
        return len(traces)

    assert traced(build_first=False) == 2  # Keras' own behaviour: if it changes, say so
    assert traced(build_first=True) == 1
