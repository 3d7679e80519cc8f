"""Task models go out to HF as their ``...For<Task>`` classes: transformers
loads each folder with its Auto class and gives our outputs on the same
inputs, for every task kind and family HF has; ``pipeline`` gives a
fine-tuned classifier's predictions with its label names."""

import json

import numpy as np
import pytest
import torch
import transformers

from albert_keras.cli import main
from albert_keras.convert import ConversionError
from albert_keras.convert import load_hf
from albert_keras.convert import save_hf
from albert_keras.models.task_models.choice_scorer import ChoiceScorer
from albert_keras.models.task_models.sequence_classifier import SequenceClassifier
from albert_keras.models.task_models.span_extractor import SpanExtractor
from albert_keras.models.task_models.token_tagger import TokenTagger
from tests.helpers import make_hf_model
from tests.helpers import sample_inputs

# family -> (HF base class, model_type to write)
FAMILIES = {"albert": ("AlbertModel", None), "bert": ("BertModel", None),
            "electra": ("ElectraModel", "electra"), "deberta": ("DebertaV2Model", None),
            "mobilebert": ("MobileBertModel", None)}
LABELS = ["neg", "neutral", "pos"]
TASKS = {
    "SequenceClassification": lambda e: SequenceClassifier(e, 3, task_spec={"labels": LABELS}),
    "TokenClassification": lambda e: TokenTagger(e, 3, task_spec={"labels": LABELS}),
    "QuestionAnswering": SpanExtractor,
    "MultipleChoice": ChoiceScorer,
}
# ELECTRA's sentence heads put a GELU where our pooler has tanh: refused
REFUSED = {("electra", "SequenceClassification"), ("electra", "MultipleChoice")}


def _encoder(family, folder):
    make_hf_model(FAMILIES[family][0], folder)
    model, _ = load_hf(str(folder))
    return model


def _randomized_head(model):
    """The head's weights away from their initial values, so a head that
    went nowhere (or to the wrong tensor) cannot pass."""
    rng = np.random.default_rng(0)
    for name in model.head_layers.values():
        layer = model.get_layer(name)
        layer.set_weights([w + rng.normal(0, 0.3, w.shape).astype(w.dtype)
                           for w in layer.get_weights()])
    return model


def _theirs(hf_model, inputs):
    with torch.no_grad():
        return hf_model(**{name: torch.tensor(inputs[ours], dtype=torch.long)
                           for ours, name in (("token_ids", "input_ids"),
                                              ("padding_mask", "attention_mask"),
                                              ("segment_ids", "token_type_ids"))})


def _inputs(task):
    inputs = sample_inputs()
    if task != "MultipleChoice":
        return inputs
    # [batch, choices, length]: the three rows as one question's two choices
    # and a second question
    return {k: np.stack([v, v[::-1]], axis=1) for k, v in inputs.items()}


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_task_model_loads_in_transformers_with_our_outputs(family, task, tmp_path):
    model = _randomized_head(TASKS[task](_encoder(family, tmp_path / "base")))
    out = str(tmp_path / "hf")
    if (family, task) in REFUSED:
        with pytest.raises(ConversionError, match="GELU.*--model-type bert"):
            save_hf(model, out, model_type=FAMILIES[family][1])
        return
    save_hf(model, out, model_type=FAMILIES[family][1])
    config = json.load(open(f"{out}/config.json"))
    assert config["architectures"][0].endswith(f"For{task}")
    auto = getattr(transformers, f"AutoModelFor{task}")
    # every tensor has its place: transformers would otherwise initialise it
    hf_model, info = auto.from_pretrained(out, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    inputs = _inputs(task)
    ours = model(inputs)
    theirs = _theirs(hf_model.eval(), inputs)
    mask = inputs["padding_mask"].astype(bool)
    for name in ("start_logits", "end_logits") if task == "QuestionAnswering" else ("logits",):
        a, b = np.asarray(ours[name]), getattr(theirs, name).numpy()
        if task in ("TokenClassification", "QuestionAnswering"):
            a, b = a[mask], b[mask]  # padded positions are nobody's output
        np.testing.assert_allclose(a, b, atol=2e-4, rtol=0)
    if task in ("SequenceClassification", "TokenClassification"):
        assert hf_model.config.id2label == dict(enumerate(LABELS))


# HF's class prefix of each family
PREFIX = {"albert": "Albert", "bert": "Bert", "electra": "Electra", "deberta": "DebertaV2",
          "mobilebert": "MobileBert"}
OURS = {"SequenceClassification": SequenceClassifier, "TokenClassification": TokenTagger,
        "QuestionAnswering": SpanExtractor, "MultipleChoice": ChoiceScorer}


@pytest.mark.parametrize("task", sorted(TASKS))
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_an_hf_task_folder_reads_back_as_our_task_model(family, task, tmp_path):
    """A model fine-tuned with transformers (any family, any task class HF
    has) reads as our task model with its labels and transformers' outputs;
    where HF computes the head otherwise (ELECTRA's sentence heads) the
    folder gives its encoder and names the head left out."""
    labelled = task in ("SequenceClassification", "TokenClassification")
    fields = dict(id2label=dict(enumerate(LABELS)),
                  label2id={n: i for i, n in enumerate(LABELS)}) if labelled else {}
    hf_model = make_hf_model(f"{PREFIX[family]}For{task}", tmp_path, **fields)
    if (family, task) in REFUSED:
        model, report = load_hf(str(tmp_path), strict=False)
        assert not hasattr(model, "hf_task") and report["unused"]
        return
    model, report = load_hf(str(tmp_path))
    assert type(model) is OURS[task] and not report["unused"], report
    spec = model.task_spec
    assert spec["task"] == {"SequenceClassification": "classify", "TokenClassification": "tag",
                            "QuestionAnswering": "qa", "MultipleChoice": "choice"}[task]
    assert list(model.labels) == (LABELS if labelled else [])
    inputs = _inputs(task)
    ours, theirs = model(inputs), _theirs(hf_model, inputs)
    mask = inputs["padding_mask"].astype(bool)
    for name in ("start_logits", "end_logits") if task == "QuestionAnswering" else ("logits",):
        a, b = np.asarray(ours[name]), getattr(theirs, name).numpy()
        if task in ("TokenClassification", "QuestionAnswering"):
            a, b = a[mask], b[mask]
        np.testing.assert_allclose(a, b, atol=2e-4, rtol=0)


def test_an_hf_regressor_and_default_labels_read_back(tmp_path):
    make_hf_model("BertForSequenceClassification", tmp_path / "reg", num_labels=1,
                  problem_type="regression")
    model, _ = load_hf(str(tmp_path / "reg"))
    assert model.task_spec["regression"] is True and model.num_classes == 1
    make_hf_model("BertForSequenceClassification", tmp_path / "plain")  # HF's LABEL_0, LABEL_1
    model, _ = load_hf(str(tmp_path / "plain"))
    assert model.labels == ("0", "1")  # placeholders: named by id
    make_hf_model("AlbertForSequenceClassification", tmp_path / "albert",
                  classifier_dropout_prob=0.3)
    assert load_hf(str(tmp_path / "albert"))[0].dropout == 0.3  # the head's own dropout
    config = json.loads((tmp_path / "plain" / "config.json").read_text())
    config["id2label"] = {"0": "a", "1": "b", "2": "c"}
    (tmp_path / "plain" / "config.json").write_text(json.dumps(config))
    with pytest.raises(ConversionError, match="the head has 2 outputs and config.json names 3"):
        load_hf(str(tmp_path / "plain"))


def test_a_regressor_and_a_mean_pooled_classifier(tmp_path):
    encoder = _encoder("bert", tmp_path / "base")
    save_hf(_randomized_head(SequenceClassifier(encoder, 1)), str(tmp_path / "reg"))
    config = transformers.AutoConfig.from_pretrained(str(tmp_path / "reg"))
    assert config.problem_type == "regression" and config.num_labels == 1
    with pytest.raises(ConversionError, match="pooling 'mean' has no HF class"):
        save_hf(SequenceClassifier(encoder, 2, pooling="mean"), str(tmp_path / "mean"))
    assert not (tmp_path / "mean").exists()


def test_a_fine_tuned_classifier_goes_to_hfs_pipeline(bert_folder, tmp_path, capsys):
    """Fine-tuned here (``TextClassifier``), written by ``convert --to hf``,
    read by transformers' ``pipeline`` with the tokenizer we wrote: the same
    label names and probabilities as ours."""
    import albert_keras

    texts = ["the quick brown fox", "a lazy dog sleeps", "weather markets congress"] * 4
    labels = ["fox", "dog", "news"] * 4
    model = albert_keras.TextClassifier.from_preset(bert_folder, sequence_length=16,
                                                    epochs=1, batch_size=4)
    model.fit(texts, labels)
    model.save_to_preset(str(tmp_path / "ours"))
    capsys.readouterr()
    assert main(["convert", str(tmp_path / "ours"), "--to", "hf", "--out",
                 str(tmp_path / "hf")]) == 0
    assert "vocab.txt" in capsys.readouterr().out
    classify = transformers.pipeline("text-classification", model=str(tmp_path / "hf"),
                                     top_k=None)
    theirs = classify(texts[:3])
    ours = model.predict(texts[:3])
    for row, scores in zip(ours, theirs):
        by_name = {s["label"]: s["score"] for s in scores}
        assert set(by_name) == set(model.labels)
        np.testing.assert_allclose([by_name[n] for n in model.labels], row, atol=1e-5)
