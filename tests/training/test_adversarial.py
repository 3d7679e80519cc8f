"""SiFT and R3F against references written here from the originals, in
torch on transformers' BertForSequenceClassification with the same weights.

The references follow microsoft/DeBERTa's ``sift/sift.py`` (two
cross-entropies against detached probabilities, one ascent step normalised
by the row's largest gradient, the perturbed path reading the embeddings
without their gradient) and fairseq's ``examples/rxf`` (the full symmetric
KL), at the embedding output in normalised units, where ours perturbs.
"""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf
import torch
import torch.nn.functional as F

import albert_keras
from albert_keras.sources.model_source import ModelSource
from albert_keras.training import adversarial
from tests.helpers import make_hf_model
from tests.helpers import make_wordpiece_vocab

NUM_LABELS = 3


@pytest.fixture(scope="module")
def hf_classifier(tmp_path_factory):
    """A BERT classifier folder without dropout (so every pass is the same
    function), and transformers' model of it."""
    folder = tmp_path_factory.mktemp("bert-classifier")
    vocab = make_wordpiece_vocab(folder, lowercase=True, vocab_size=400)
    size = sum(1 for _ in open(vocab, encoding="utf-8"))
    model = make_hf_model("BertForSequenceClassification", folder, vocab_size=size,
                          num_labels=NUM_LABELS, hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0)
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    return str(folder), model


def _ours(folder, torch_model, **settings):
    """Our classifier on the folder, its head copied into torch's model, and
    one batch of inputs and labels."""
    keras.utils.set_random_seed(0)
    task = albert_keras.TextClassifier.from_preset(folder, num_classes=NUM_LABELS, dropout=0.0,
                                                   **settings)
    task.compile()
    head = task.task_model.get_layer("classifier")
    with torch.no_grad():
        torch_model.classifier.weight.copy_(torch.tensor(np.asarray(head.kernel).T))
        torch_model.classifier.bias.copy_(torch.tensor(np.asarray(head.bias)))
    data, _ = task._data(["the fox runs over the road", "a dog", "the quick brown fox jumps"],
                         [0, 2, 1])
    return task, data.x, data.y


def _our_step(task, x, y):
    """Our loss and the gradients of every trainable variable, by path."""
    with tf.GradientTape() as tape:
        outputs = task(x, training=True)
        loss = task.compute_loss(x=x, y=y, y_pred=outputs, training=True)
    grads = tape.gradient(loss, task.trainable_variables)
    return float(loss), {v.path: np.asarray(tf.convert_to_tensor(g))
                         for v, g in zip(task.trainable_variables, grads)}


def _perturbed(delta):
    """A forward hook on BERT's embeddings: ``e + s * delta``, ``e`` detached,
    ``s`` its rows' spread (a non-affine LayerNorm's, eps 1e-7)."""
    def hook(module, inputs, output):
        e = output.detach()
        spread = torch.sqrt(e.var(-1, unbiased=False, keepdim=True) + 1e-7)
        return e + spread * delta
    return hook


def _deberta_symmetric_kl(logits, target):  # sift.symmetric_kl, as written there
    logprob_stu, logprob_tea = F.log_softmax(logits, -1), F.log_softmax(target, -1)
    prob_tea, prob_stu = logprob_tea.exp().detach(), logprob_stu.exp().detach()
    return (prob_tea * -logprob_stu).sum(-1) + (prob_stu * -logprob_tea).sum(-1)


def _entropy(logits):
    p = F.softmax(logits.detach(), -1)
    return -(p * F.log_softmax(logits.detach(), -1)).sum(-1)


def _run(model, x, delta=None):
    """The logits, with the embeddings perturbed by ``delta`` (None: clean)."""
    hooked = model.bert.embeddings
    handle = hooked.register_forward_hook(_perturbed(delta)) if delta is not None else None
    try:
        return model(input_ids=torch.tensor(np.asarray(x["token_ids"]), dtype=torch.long),
                     token_type_ids=torch.tensor(np.asarray(x["segment_ids"]), dtype=torch.long),
                     attention_mask=torch.tensor(np.asarray(x["padding_mask"]))).logits
    finally:
        if handle is not None:
            handle.remove()


def _sift_reference(model, x, labels, delta0, weight=5.0, step=1e-4):  # noqa: PLR0913 (the step's inputs)
    """DeBERTa's AdversarialLearner.loss, written out; returns the climbed
    delta, the term's value as a KL (less the detached entropies), the loss,
    and every parameter's gradient."""
    model.zero_grad()
    clean = _run(model, x)
    task_loss = F.cross_entropy(clean, labels)
    for p in model.parameters():
        p.requires_grad_(False)
    delta = delta0.clone().requires_grad_(True)
    _deberta_symmetric_kl(_run(model, x, delta), clean.detach()).sum().backward()
    for p in model.parameters():
        p.requires_grad_(True)
    g = delta.grad
    climbed = (delta0 + step * g / (1e-6 + g.abs().max(-1, keepdim=True)[0])).detach()
    perturbed = _run(model, x, climbed)
    term = _deberta_symmetric_kl(perturbed, clean).mean()
    loss = task_loss + weight * term
    loss.backward()
    as_kl = term - (_entropy(clean) + _entropy(perturbed)).mean()
    return climbed.numpy(), float(as_kl), float(task_loss + weight * as_kl), model


def _r3f_reference(model, x, labels, noise, weight=1.0):
    """fairseq's R3F step: the loss with ``KL(p||q) + KL(q||p)`` per example."""
    model.zero_grad()
    clean = _run(model, x)
    noised = _run(model, x, noise)
    log_p, log_q = F.log_softmax(clean, -1), F.log_softmax(noised, -1)
    symm = (F.kl_div(log_q, log_p.exp(), reduction="sum")
            + F.kl_div(log_p, log_q.exp(), reduction="sum")) / clean.shape[0]
    loss = F.cross_entropy(clean, labels) + weight * symm
    loss.backward()
    return float(loss), model


def _check_gradients(ours, model):
    """Our gradients equal torch's on the embeddings, a query, the last FFN,
    the pooler and the head."""
    last = model.config.num_hidden_layers - 1
    pairs = {
        "embeddings/token_embedding/embeddings": (model.bert.embeddings.word_embeddings.weight, False),
        "embeddings/embeddings_layer_norm/gamma": (model.bert.embeddings.LayerNorm.weight, False),
        "transformer/attention_0/query/kernel": (model.bert.encoder.layer[0].attention.self.query.weight, True),
        f"transformer/ffn_{last}/ffn_output/kernel": (model.bert.encoder.layer[last].output.dense.weight, True),
        "pooler/pooler_dense/kernel": (model.bert.pooler.dense.weight, True),
        "classifier/kernel": (model.classifier.weight, True),
    }
    for path, (param, transposed) in pairs.items():
        ref = param.grad.numpy()
        np.testing.assert_allclose(ours[path], ref.T if transposed else ref, atol=1e-5,
                                   rtol=1e-4, err_msg=path)


def test_sift_is_debertas_step(hf_classifier, monkeypatch):
    folder, model = hf_classifier
    # sizes far above the defaults (1e-2, 1e-4), so that the term is large
    # enough for a wrong one to show in the loss and the gradients
    noise, step = 0.3, 0.1
    task, x, y = _ours(folder, model, adversarial="sift", adversarial_noise=noise,
                       adversarial_step=step)
    shape = (*np.asarray(x["token_ids"]).shape, model.config.hidden_size)
    delta0 = np.clip(np.random.default_rng(3).normal(0, noise, shape), -2 * noise,
                     2 * noise).astype("float32")
    climbed = []
    monkeypatch.setattr(adversarial, "sift_noise", lambda shape, noise, seed: tf.constant(delta0))
    climb = adversarial.ascent_step
    monkeypatch.setattr(adversarial, "ascent_step",
                        lambda *args: climbed.append(climb(*args)) or climbed[-1])
    loss, grads = _our_step(task, x, y)
    labels = torch.tensor(np.asarray(y["logits"]), dtype=torch.long)
    ref_delta, ref_term, ref_loss, model = _sift_reference(model, x, labels,
                                                           torch.tensor(delta0), step=step)
    moved = np.abs(np.asarray(climbed[0]) - delta0).max(-1)
    # a real step, at most ``step`` an element (less where the largest
    # gradient is not far above the 1e-6 in the denominator; 0 at padding)
    assert 0.5 * step < moved.max() <= step * 1.0001
    # the step is ``step * g / max|g|`` of a float32 gradient of a small
    # divergence: its rounding (about 1e-4 of the step, more on some oneDNN
    # paths: CI saw 1.6e-4 x step) shows; a wrong step is off by ~``step``
    np.testing.assert_allclose(np.asarray(climbed[0]), ref_delta, atol=1e-3 * step)
    assert ref_term > 1e-4  # the perturbation moves the outputs (5 x this in the loss)
    assert loss == pytest.approx(ref_loss, abs=1e-5)
    _check_gradients(grads, model)


def test_r3f_is_fairseqs_step(hf_classifier, monkeypatch):
    folder, model = hf_classifier
    # far above the defaults (1e-5, weight 1), as for SiFT
    task, x, y = _ours(folder, model, adversarial="r3f", adversarial_noise=1.0,
                       adversarial_weight=20.0)
    shape = (*np.asarray(x["token_ids"]).shape, model.config.hidden_size)
    noise = np.random.default_rng(4).uniform(-1.0, 1.0, shape).astype("float32")
    monkeypatch.setattr(adversarial, "r3f_noise", lambda shape, size, seed: tf.constant(noise))
    loss, grads = _our_step(task, x, y)
    labels = torch.tensor(np.asarray(y["logits"]), dtype=torch.long)
    ref_loss, model = _r3f_reference(model, x, labels, torch.tensor(noise), weight=20.0)
    assert loss == pytest.approx(ref_loss, abs=1e-5)
    _check_gradients(grads, model)
    clean_only, _ = _our_step(_ours(folder, model)[0], x, y)
    assert loss - clean_only > 1e-3  # the term is there


def _np_kl_rows(p_logits, q_logits):
    """``KL(q||p) + KL(p||q)`` per row, in numpy."""
    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))
    lp, lq = log_softmax(p_logits), log_softmax(q_logits)
    return (np.exp(lq) * (lq - lp)).sum(-1) + (np.exp(lp) * (lp - lq)).sum(-1)


@pytest.mark.parametrize("kl", [adversarial.symmetric_kl, adversarial.full_symmetric_kl])
def test_divergence_reads_each_task_models_rows(kl):
    rng = np.random.default_rng(0)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], "int32")
    a, b = rng.normal(size=(2, 4, 5)).astype("float32"), rng.normal(size=(2, 4, 5)).astype("float32")
    # a tagger: one row per real token, the padded ones left out
    tagged = adversarial.divergence(albert_keras.TokenTagger, {"logits": a}, {"logits": b}, mask, kl)
    assert float(tagged) == pytest.approx(_np_kl_rows(a, b)[mask == 1].mean(), rel=1e-5)
    # QA: the start and end rows over the real positions only
    spans = {"start_logits": a[..., 0], "end_logits": a[..., 1]}
    clean = {"start_logits": b[..., 0], "end_logits": b[..., 1]}
    expected = sum(np.mean([_np_kl_rows(s[i][mask[i] == 1], c[i][mask[i] == 1])
                            for i in range(2)])
                   for s, c in [(a[..., 0], b[..., 0]), (a[..., 1], b[..., 1])])
    got = adversarial.divergence(albert_keras.SpanExtractor, spans, clean, mask, kl)
    assert float(got) == pytest.approx(expected, rel=1e-5)
    # a classifier and multiple choice: one row per example; a regressor: MSE
    for kind in (albert_keras.SequenceClassifier, albert_keras.ChoiceScorer):
        got = adversarial.divergence(kind, {"logits": a[:, 0]}, {"logits": b[:, 0]}, mask, kl)
        assert float(got) == pytest.approx(_np_kl_rows(a[:, 0], b[:, 0]).mean(), rel=1e-5)
    got = adversarial.divergence(albert_keras.SequenceClassifier, {"logits": a[:, 0, :1]}, {"logits": b[:, 0, :1]},
                                 mask, kl)
    assert float(got) == pytest.approx(np.mean((a[:, 0, 0] - b[:, 0, 0]) ** 2), rel=1e-5)
    with pytest.raises(ValueError, match="adversarial fine-tuning is for task models"):
        adversarial.divergence(albert_keras.Backbone, {}, {}, mask, kl)


def test_settings_refuse_what_does_not_apply(monkeypatch):
    from albert_keras.tasks.finetune_config import FinetuneConfig

    with pytest.raises(ValueError, match="^adversarial_weight applies only with adversarial"):
        FinetuneConfig(adversarial_weight=3.0).validate()
    with pytest.raises(ValueError, match="^adversarial_step is SiFT's ascent step; r3f"):
        FinetuneConfig(adversarial="r3f", adversarial_step=1e-3).validate()
    setting = FinetuneConfig(adversarial="sift", adversarial_weight=3.0).adversarial_setting()
    assert (setting.weight, setting.noise, setting.step) == (3.0, 1e-2, 1e-4)  # DeBERTa's
    assert FinetuneConfig(adversarial="r3f").adversarial_setting().noise == 1e-5  # fairseq's
    monkeypatch.setattr(keras.backend, "backend", lambda: "jax")
    with pytest.raises(ValueError, match=r"^adversarial sift fine-tuning runs on the "
                                         r"TensorFlow backend \(KERAS_BACKEND=tensorflow\), not jax$"):
        adversarial.check_backend(setting)


def _task_rows(kind):
    """Eight rows of each task, in its Python form."""
    words = [["the", "fox", "runs"], ["a", "dog", "sits"]] * 4
    if kind == "TokenClassifier":
        return words, [["O", "B-ANIMAL", "O"]] * 8
    if kind == "QuestionAnswerer":
        return (["who runs"] * 8, ["the fox runs and then ada wrote it"] * 8), ["fox"] * 8
    if kind == "MultipleChoice":
        return (["the fox runs"] * 8, ["which animal"] * 8, [["fox", "dog"]] * 8), [0, 1] * 4
    return [" ".join(w) for w in words], [0, 1] * 4


@pytest.mark.parametrize("kind", ["TextClassifier", "TokenClassifier", "QuestionAnswerer",
                                  "MultipleChoice"])
@pytest.mark.sampled(keep=2)  # CI: 2 of the 4 per commit
def test_every_task_adds_the_term_in_its_training_step(hf_classifier, kind):
    """One step of fit, with and without SiFT, from the same weights: the
    loss Keras reports is the task loss plus the weighted term."""
    folder, _ = hf_classifier
    x, y = _task_rows(kind)
    # converted once before the two runs (the process keeps it), so that both
    # draw their new head from the same random state: building the converted
    # model draws from it too, in whichever run converts first
    ModelSource(folder).model  # noqa: B018 (read for its side effect)
    losses = {}
    for method in ("none", "sift"):
        extra = {"adversarial_noise": 0.3, "adversarial_step": 0.1} if method == "sift" else {}
        keras.utils.set_random_seed(0)
        task = getattr(albert_keras, kind).from_preset(
            folder, sequence_length=16, batch_size=8, epochs=1, learning_rate=1e-3,
            dropout=0.0, adversarial=method, **extra)
        losses[method] = task.fit(x, y, verbose=0).history["loss"][0]
    assert np.isfinite(losses["sift"])
    assert losses["sift"] > losses["none"] + 1e-4, losses
