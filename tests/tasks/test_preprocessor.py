"""The task preprocessors: the reading step of the task classes, on its own."""

import numpy as np
import pytest

import albert_keras
from albert_keras.tasks.task import softmax
from tests.helpers import hf_bert_tokenizer


def test_classifier_preprocessor_packs_as_transformers_tokenizer_does(bert_folder):
    import os

    pre = albert_keras.TextClassifierPreprocessor.from_preset(bert_folder, sequence_length=16)
    reference = hf_bert_tokenizer(os.path.join(bert_folder, "vocab.txt"), lowercase=True)
    texts = ["The quick fox jumps over a sleeping dog", "a dog", "naïve café fox " * 6]
    pairs = ["it runs", "the fox sleeps over there", "a"]
    want = reference(texts, pairs, max_length=16, truncation="longest_first",
                     padding="max_length", return_tensors="np")
    x, y, weights = pre((texts, pairs))
    assert y is None and weights is None
    np.testing.assert_array_equal(x["token_ids"], want["input_ids"])
    np.testing.assert_array_equal(x["segment_ids"], want["token_type_ids"])
    np.testing.assert_array_equal(x["padding_mask"], want["attention_mask"])

    # a new preprocessor names the classes from the first labels and keeps them
    _, y, _ = pre(texts, ["fox", "dog", "fox"])
    assert pre.labels == ("dog", "fox")
    np.testing.assert_array_equal(y["logits"], [1, 0, 1])
    _, y, _ = pre(texts[:1], ["dog"])
    np.testing.assert_array_equal(y["logits"], [0])
    with pytest.raises(ValueError, match=r"^y: 1 labels for 2 texts$"):
        pre(texts[:2], ["dog"])


def test_the_task_objects_preprocessor_feeds_its_model(bert_folder, tmp_path):
    model = albert_keras.TextClassifier.from_preset(bert_folder, labels=["neg", "pos"],
                                                    sequence_length=24)
    texts = ["a fox", "the quick fox jumps over a sleeping dog", "dog"]
    x, _, _ = model.preprocessor(texts)
    assert x["token_ids"].shape == (3, 24)
    # the padded arrays give the probabilities predict gives on its length buckets
    logits = model.task_model.predict(x, verbose=0)["logits"]
    np.testing.assert_allclose(softmax(np.asarray(logits, np.float32)), model.predict(texts),
                               atol=1e-5)

    folder = model.save_to_preset(str(tmp_path / "reviews"))
    saved = albert_keras.TextClassifierPreprocessor.from_preset(folder)
    assert saved.labels == ("neg", "pos") and saved.sequence_length == 24
    np.testing.assert_array_equal(saved(texts)[0]["token_ids"], x["token_ids"])
    with pytest.raises(ValueError, match="a fine-tuned folder keeps its own settings; "
                                         "sequence_length does not apply"):
        albert_keras.TextClassifierPreprocessor.from_preset(folder, sequence_length=8)
    with pytest.raises(ValueError, match="a fine-tuned classify folder, not tag"):
        albert_keras.TokenClassifierPreprocessor.from_preset(folder)


def test_each_tasks_preprocessor_reads_its_inputs(bert_folder):
    tagger = albert_keras.TokenClassifierPreprocessor.from_preset(bert_folder,
                                                                  sequence_length=16)
    x, y, weights = tagger([["Ada", "lives", "in", "London"]], [["B-PER", "O", "O", "B-LOC"]])
    assert tagger.labels == ("B-LOC", "B-PER", "O")
    # each word's first piece carries its tag (weight 1), the rest weigh 0
    assert weights["logits"].sum() == 4 and x["token_ids"].shape == (1, 16)
    assert sorted(y["logits"][weights["logits"] > 0].tolist()) == [0, 1, 2, 2]

    reader = albert_keras.QuestionAnswererPreprocessor.from_preset(
        bert_folder, sequence_length=24, stride=8)
    context = " ".join(["the fox runs over the hill"] * 6) + " and ada wrote it"
    x, y, _ = reader((["who wrote it?"], [context]), ["ada"])
    assert x["token_ids"].shape[0] > 1  # a long context: one row per window
    assert x["token_ids"].shape[1] == 24

    chooser = albert_keras.MultipleChoicePreprocessor.from_preset(bert_folder,
                                                                  sequence_length=16)
    x, y, _ = chooser((["A fox ran."], ["What did it do?"], [["ran", "sat", "slept"]]), [0])
    assert x["token_ids"].shape == (1, 3, 16) and y["logits"].tolist() == [0]
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        albert_keras.TaskPreprocessor.for_task("nope")


def test_a_preprocessor_reads_the_config_alone(bert_folder, init_folder, tmp_path, monkeypatch):
    """The default length is cut to the model's 64 positions from its config
    files: no model is loaded or converted (a weightless step), and a longer
    length asked for is named."""
    from albert_keras.sources import model_source

    def no_model(self):
        raise AssertionError("the preprocessor loaded the model")

    monkeypatch.setattr(model_source.ModelSource, "model", property(no_model))
    for source in (bert_folder, init_folder):  # an HF folder, our pretraining folder
        assert albert_keras.TextClassifierPreprocessor.from_preset(source).sequence_length == 64
        with pytest.raises(ValueError, match="sequence_length 100 exceeds .*64"):
            albert_keras.TextClassifierPreprocessor.from_preset(source, sequence_length=100)
