"""Word -> piece alignment for tagging, and decoding back to words."""

import numpy as np
import pytest

from albert_keras.tasks.tag.tag_features import decode_tags
from albert_keras.tasks.tag.tag_features import tag_features
from albert_keras.text.sentencepiece_tokenizer import SentencePiece
from albert_keras.text.special_ids import CLS_ID
from albert_keras.text.special_ids import SEP_ID


def test_first_piece_is_labelled(spm_path):
    encoder = SentencePiece(spm_path)
    words = ["Résumé", "naïve", "foxdogwindows", "😀"]
    tags = ["B-X", "I-X", "O", "B-Y"]
    index = {"B-X": 0, "B-Y": 1, "I-X": 2, "O": 3}
    features = tag_features(encoder, [words], 32, [tags], index)
    pieces = encoder.encode(words)
    ids = features.inputs["token_ids"][0]
    expected = [CLS_ID] + [p for w in pieces for p in w] + [SEP_ID]
    assert ids[:len(expected)].tolist() == expected
    assert features.inputs["padding_mask"][0].sum() == len(expected)
    firsts = np.cumsum([1] + [len(p) for p in pieces[:-1]])
    assert np.flatnonzero(features.weights[0]).tolist() == firsts.tolist()
    assert features.labels[0, firsts].tolist() == [0, 2, 3, 1]
    assert any(len(p) > 1 for p in pieces)  # the test covers multi-piece words


def test_long_sentences_are_cut_at_word_boundaries_and_decoded_back(spm_path):
    encoder = SentencePiece(spm_path)
    words = ("the quick brown fox jumps over a lazy dog café naïve " * 4).split()
    tags = ["B-A" if i % 3 == 0 else "O" for i in range(len(words))]
    names = ["B-A", "O"]
    features = tag_features(encoder, [words, ["dog"]], 12, [tags, ["O"]], {"B-A": 0, "O": 1})
    assert len(features.words) > 2  # the first sentence needed several rows
    covered = [(s, w) for row in features.words for s, w, _ in row]
    assert covered == [(0, i) for i in range(len(words))] + [(1, 0)]
    # Logits that pick each labelled position's gold tag decode back exactly.
    logits = np.zeros(features.labels.shape + (2,), np.float32)
    np.put_along_axis(logits, features.labels[..., None], 1.0, axis=-1)
    assert decode_tags(features, logits, [words, ["dog"]], names) == [tags, ["O"]]


def test_tag_loss_is_the_mean_over_labelled_pieces():
    """As torch's cross-entropy with ignore_index (HF's token classifiers):
    the padding and the later pieces of a word neither count nor dilute."""
    import keras

    from albert_keras.tasks.tag.tag_task import Tag

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 10, 4)).astype("float32")
    labels = rng.integers(0, 4, size=(3, 10))
    weights = (rng.random((3, 10)) < 0.3).astype("float32")
    weights[0, 0] = 1.0
    loss = Tag().compile_args(None)["loss"]["logits"]
    ours = float(loss(labels, logits, sample_weight=weights))
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, labels[..., None], -1)[..., 0]
    expected = -(picked * weights).sum() / weights.sum()
    assert ours == pytest.approx(expected, rel=1e-5)
    assert isinstance(loss, keras.losses.Loss)


def test_a_tagger_trains_step_for_step_as_transformers_with_torch(tmp_path):
    """The fine-tuning loop on the same batches, no dropout: our tagger with
    the run's optimizer (AdamW, 10% warmup then linear decay, decay 0.01
    off LayerNorms and biases, clipping at 1.0) and the task's loss, against
    transformers' BertForTokenClassification with torch's AdamW,
    ``get_linear_schedule_with_warmup`` and ``clip_grad_norm_``: the same
    loss at every step and the same head after them."""
    import keras
    import torch
    import transformers

    from albert_keras.sources.model_source import ModelSource
    from albert_keras.tasks.finetune_config import FinetuneConfig
    from albert_keras.tasks.tag.tag_task import Tag
    from albert_keras.tasks.task_run import task_optimizer
    from tests.helpers import make_hf_model

    steps, batch, seq, lr = 12, 8, 16, 1e-3
    make_hf_model("BertModel", str(tmp_path), hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    keras.utils.set_random_seed(0)
    encoder = ModelSource(str(tmp_path)).encoder(dtype="float32", dropout=0.0)
    model = Tag().build_model(tag_spec(3), encoder, dropout=0.0)
    cfg = FinetuneConfig(task="tag", learning_rate=lr, batch_size=batch, epochs=1)
    model.compile(optimizer=task_optimizer(cfg, encoder, steps),
                  **Tag().compile_args(tag_spec(3)))
    rng = np.random.default_rng(0)
    lengths = rng.integers(4, seq + 1, steps * batch)
    mask = (np.arange(seq) < lengths[:, None]).astype("int32")
    x = {"token_ids": rng.integers(5, 99, mask.shape).astype("int32") * mask,
         "segment_ids": np.zeros_like(mask), "padding_mask": mask}
    y = x["token_ids"] % 3  # learnable: the tag follows the piece
    w = (mask * (rng.random(mask.shape) < 0.6)).astype("float32")
    hf = transformers.BertForTokenClassification.from_pretrained(
        str(tmp_path), num_labels=3, classifier_dropout=0.0)
    kernel, bias = (np.asarray(v) for v in model.get_layer("tagger").weights)
    with torch.no_grad():
        hf.classifier.weight.copy_(torch.tensor(kernel.T))
        hf.classifier.bias.copy_(torch.tensor(bias))

    running = []
    logged = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda step, logs: running.append(logs["loss"]))
    model.fit(x, {"logits": y}, sample_weight={"logits": w}, batch_size=batch, shuffle=False,
              verbose=0, callbacks=[logged])
    # Keras logs the mean so far; each step's own loss from it
    ours = [running[0]] + [(i + 1) * running[i] - i * running[i - 1]
                           for i in range(1, steps)]

    no_decay = [p for n, p in hf.named_parameters() if "bias" in n or "LayerNorm" in n]
    decay = [p for n, p in hf.named_parameters() if not ("bias" in n or "LayerNorm" in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, eps=1e-6)
    schedule = transformers.get_linear_schedule_with_warmup(opt, int(0.1 * steps), steps)
    labels = torch.tensor(np.where(w > 0, y, -100)).long()
    theirs = []
    for step in range(steps):
        rows = slice(step * batch, (step + 1) * batch)
        loss = hf(input_ids=torch.tensor(x["token_ids"][rows]).long(),
                  token_type_ids=torch.tensor(x["segment_ids"][rows]).long(),
                  attention_mask=torch.tensor(mask[rows]).long(), labels=labels[rows]).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(hf.parameters(), 1.0)
        opt.step()
        schedule.step()
        opt.zero_grad()
        theirs.append(float(loss))
    np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-5)
    after = hf.classifier.weight.detach().numpy().T
    moved = np.abs(after - kernel).max()
    assert moved > 2e-3  # the steps moved the head: the comparison is not of still weights
    np.testing.assert_allclose(np.asarray(model.get_layer("tagger").weights[0]), after,
                               atol=moved * 1e-2)


def tag_spec(n):
    """A tag spec of ``n`` labels."""
    from albert_keras.tasks.task import TaskSpec

    return TaskSpec(task="tag", sequence_length=16, labels=tuple(f"L{i}" for i in range(n)))


def test_a_word_the_tokenizer_drops_is_read_as_unknown(tmp_path):
    """A zero-width joiner alone (tweets have them) gives no WordPiece
    piece; its position holds [UNK], not [PAD]'s id."""
    import transformers

    from albert_keras.sources.registry import read_tokenizer
    from tests.helpers import make_wordpiece_vocab

    vocab = make_wordpiece_vocab(str(tmp_path), lowercase=True, vocab_size=200)
    transformers.BertTokenizerFast(vocab, do_lower_case=True).save_pretrained(str(tmp_path))
    tokenizer = read_tokenizer(str(tmp_path))
    assert tokenizer.encode(["\u200d"]) == [[]]
    features = tag_features(tokenizer, [["the", "\u200d", "fox"]], 16, [["O", "O", "B-X"]],
                            {"O": 0, "B-X": 1})
    ids = features.inputs["token_ids"][0]
    assert ids[2] == tokenizer.special_ids["unk"] != tokenizer.special_ids["pad"]
    assert features.weights[0, 2] == 1.0 and features.labels[0, 3] == 1
