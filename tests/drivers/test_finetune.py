"""Fine-tuning end to end on tiny files: every task, its folder, evaluate,
predict, and the errors users hit."""

import csv
import json
import os
import shutil
import warnings

import keras
import numpy as np
import pytest

from albert_keras.drivers import inference
from albert_keras.drivers.finetune import finetune
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.readers import TaskDataError
from tests.helpers import assert_layer_decay_slows
from tests.helpers import stored_values

QUICK = dict(epochs=2, batch_size=8, sequence_length=32, learning_rate=1e-3)


def test_load_encoder_copies_weights_under_the_asked_policy(init_folder):
    from albert_keras.saving import load_model

    saved = load_model(os.path.join(init_folder, "encoder.keras"))
    assert saved.dtype_policy.name == "mixed_bfloat16"
    encoder = ModelSource(init_folder).encoder(dtype="float32")
    assert encoder.dtype_policy.name == "float32"
    for a, b in zip(encoder.get_weights(), saved.get_weights()):
        np.testing.assert_array_equal(a, b)
    scratch = ModelSource(init_folder).encoder(dtype="float32", from_scratch=True)
    assert not np.array_equal(scratch.get_weights()[0], saved.get_weights()[0])


def test_encoder_dropout_changes_the_config_and_no_weight(init_folder):
    import keras

    plain = ModelSource(init_folder).encoder(dtype="float32")
    dropped = ModelSource(init_folder).encoder(dtype="float32", dropout=0.3)
    assert plain.config.hidden_dropout_prob == 0.0
    assert dropped.config.hidden_dropout_prob == 0.3
    assert dropped.config.attention_probs_dropout_prob == 0.3
    for a, b in zip(plain.get_weights(), dropped.get_weights()):
        np.testing.assert_array_equal(a, b)
    ids = np.array([[2, 10, 11, 12, 13, 14, 3, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    # the same outputs at inference; training draws differ only with dropout
    np.testing.assert_allclose(plain(inputs)["sequence_output"],
                               dropped(inputs)["sequence_output"], atol=1e-6)
    keras.utils.set_random_seed(0)
    first = keras.ops.convert_to_numpy(dropped(inputs, training=True)["sequence_output"])
    second = keras.ops.convert_to_numpy(dropped(inputs, training=True)["sequence_output"])
    assert not np.allclose(first, second)
    np.testing.assert_array_equal(plain(inputs, training=True)["sequence_output"],
                                  plain(inputs, training=True)["sequence_output"])
    with pytest.raises(ValueError, match="encoder_dropout"):
        FinetuneConfig(encoder_dropout=1.0).validate()


def test_classify_folder_evaluate_predict(init_folder, task_files, out_dir, tmp_path):
    cfg = FinetuneConfig(task="classify", **QUICK)
    metrics = finetune(init_folder, task_files["cls_train"], task_files["cls_eval"], out_dir, cfg)
    assert sorted(os.listdir(out_dir)) == [
        "metrics.csv", "metrics.json", "model.keras", "spm.model", "task.json", "tokenizer_kind.json",
        "train_config.json"]
    spec = json.load(open(os.path.join(out_dir, "task.json")))
    assert spec["labels"] == ["dog", "fox"]
    assert metrics["examples"] == 16
    # the reported numbers are the saved model's predictions against the
    # file's own labels, counted here
    truth = [r["label"] for r in csv.DictReader(open(task_files["cls_eval"], encoding="utf-8"))]
    guessed = [r["label"] for r in inference.predict(out_dir, task_files["cls_eval"])]
    assert metrics["accuracy"] == pytest.approx(np.mean([g == t for g, t in zip(guessed, truth)]))
    labels = spec["labels"]
    assert metrics["confusion_matrix"] == [[sum(t == a and g == b for t, g in zip(truth, guessed))
                                            for b in labels] for a in labels]
    # Evaluating the saved folder reproduces the run's own numbers.
    again = inference.evaluate(out_dir, task_files["cls_eval"])
    assert again["accuracy"] == pytest.approx(metrics["accuracy"])
    predictions = inference.predict(out_dir, task_files["cls_eval"])
    assert len(predictions) == 16
    assert {p["label"] for p in predictions} <= {"dog", "fox"}
    assert all(sum(p["probabilities"].values()) == pytest.approx(1.0, abs=1e-5)
               for p in predictions)
    # each prediction names its row and text, so none is lined up by order
    with open(task_files["cls_eval"], encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(p["row"], p["text"]) for p in predictions] == [
        (i, r["text"]) for i, r in enumerate(rows)]
    # the model file holds the weights alone, no optimizer state
    assert stored_values(os.path.join(out_dir, "model.keras")) == \
        keras.saving.load_model(os.path.join(out_dir, "model.keras")).count_params()
    # An output that exists is not replaced without overwrite.
    with pytest.raises(FileExistsError):
        finetune(init_folder, task_files["cls_train"], None, out_dir, cfg)
    # An eval file with a label the model never saw names its row.
    bad = tmp_path / "bad.csv"
    bad.write_text("text,label\nthe fox,fox\nthe cat,cat\n", encoding="utf-8")
    with pytest.raises(TaskDataError, match=r"bad\.csv:3: unknown label 'cat'"):
        inference.evaluate(out_dir, str(bad))


def test_the_best_epoch_is_kept_and_a_seed_repeats_the_run(init_folder, task_files, tmp_path):
    cfg = FinetuneConfig(task="classify", **{**QUICK, "epochs": 3})
    runs = [finetune(init_folder, task_files["cls_train"], task_files["cls_eval"],
                     str(tmp_path / f"run{i}"), cfg) for i in range(2)]
    first = runs[0]
    assert first["select_metric"] == "accuracy" and len(first["eval_history"]) == 3
    # the reported score is the best epoch's: its weights were put back
    history = first["eval_history"]
    # the last of the best scores (a tie goes to the later epoch)
    assert first["best_epoch"] == len(history) - int(np.argmax(history[::-1]))
    assert first["accuracy"] == max(first["eval_history"])
    timing = ("train_seconds", "step_seconds_median")  # the clock's, not the run's
    assert [{k: v for k, v in r.items() if k not in timing} for r in runs] == [
        {k: v for k, v in runs[0].items() if k not in timing}] * 2
    assert runs[0]["train_steps"] == runs[1]["train_steps"] > 0


def test_a_validation_file_chooses_the_epoch_and_eval_is_scored_once(
        init_folder, task_files, tmp_path):
    cfg = FinetuneConfig(task="classify", **{**QUICK, "epochs": 3})
    out = str(tmp_path / "run")
    metrics = finetune(init_folder, task_files["cls_train"], task_files["cls_eval"], out, cfg,
                       validation_path=task_files["cls_train"])
    assert metrics["selected_on"] == "validation" and "eval_history" not in metrics
    history = metrics["validation_history"]
    assert len(history) == 3
    assert metrics["best_epoch"] == len(history) - int(np.argmax(history[::-1]))
    # the reported accuracy is the eval file's, with the chosen epoch's weights
    again = inference.evaluate(out, task_files["cls_eval"])
    assert metrics["accuracy"] == pytest.approx(again["accuracy"])
    recorded = json.load(open(os.path.join(out, "train_config.json")))
    assert recorded["validation"] == os.path.abspath(task_files["cls_train"])
    # a validation file without labels cannot choose anything; the error names it
    unlabelled = tmp_path / "unlabelled.csv"
    unlabelled.write_text("text\nthe quick fox\nthe lazy dog\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"unlabelled\.csv: no column 'label'"):
        finetune(init_folder, task_files["cls_train"], None, str(tmp_path / "run2"), cfg,
                 validation_path=str(unlabelled))
    assert not os.path.exists(tmp_path / "run2")


def test_a_held_out_share_of_the_training_file_chooses_the_epoch(
        init_folder, task_files, tmp_path, capsys):
    from albert_keras.cli import main

    out = str(tmp_path / "run")
    code = main(["finetune", "--init", init_folder, "--train", task_files["cls_train"],
                 "--eval", task_files["cls_eval"], "--out", out, "--epochs", "3",
                 "--batch-size", "8", "--seq-length", "32", "--validation-split", "0.25"])
    assert code == 0
    metrics = json.load(open(os.path.join(out, "metrics.json")))
    # 48 training rows, two classes of 24: 6 of each held out
    assert (metrics["train_examples"], metrics["validation_examples"]) == (36, 12)
    assert metrics["selected_on"] == "validation" and len(metrics["validation_history"]) == 3
    assert "eval_history" not in metrics and metrics["examples"] == 16
    again = inference.evaluate(out, task_files["cls_eval"])
    assert metrics["accuracy"] == pytest.approx(again["accuracy"])
    assert json.load(open(os.path.join(out, "train_config.json")))["validation_split"] == 0.25
    # a validation file and a held-out share are one choice too many
    capsys.readouterr()
    code = main(["finetune", "--init", init_folder, "--train", task_files["cls_train"],
                 "--validation", task_files["cls_eval"], "--out", str(tmp_path / "both"),
                 "--validation-split", "0.25"])
    assert code != 0 and "--validation or --validation-split, not both" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "both")
    # a file too small to hold anything out: one line naming it, nothing written
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("text,label\nthe quick fox,fox\nthe lazy dog,dog\n", encoding="utf-8")
    code = main(["finetune", "--init", init_folder, "--train", str(tiny), "--out",
                 str(tmp_path / "tiny"), "--validation-split", "0.1"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and err.count("\n") == 0
    assert f"{tiny}: validation_split 0.1 of 2 examples leaves 2 to train on" in err
    assert not os.path.exists(tmp_path / "tiny")
    with pytest.raises(ValueError, match=r"validation_split must be in \(0, 1\), got 1.5"):
        FinetuneConfig(validation_split=1.5).validate()


def test_layer_decay_slows_the_lower_layers(init_folder, task_files, tmp_path):
    tuned = {}
    for decay in (1.0, 0.01):
        out = str(tmp_path / f"decay{decay}")
        cfg = FinetuneConfig(layer_decay=decay, **{**QUICK, "epochs": 1})
        finetune(init_folder, task_files["cls_train"], None, out, cfg)
        tuned[decay] = ModelSource(out).encoder(dtype="float32")
        assert json.load(open(os.path.join(out, "train_config.json")))["layer_decay"] == decay
    assert_layer_decay_slows(ModelSource(init_folder).encoder(dtype="float32"), tuned)
    with pytest.raises(ValueError, match=r"layer_decay must be in \(0, 1\]"):
        FinetuneConfig(layer_decay=1.5).validate()


class _StepWeights(keras.callbacks.Callback):
    """Records the raw trainable weights after every step, how many steps
    each epoch ended at, and the weights fit leaves behind."""

    def __init__(self):
        super().__init__()
        self.steps, self.epoch_ends, self.final = [], [], None

    def on_train_batch_end(self, batch, logs=None):
        self.steps.append([v.numpy().copy() for v in self.model.trainable_variables])

    def on_epoch_end(self, epoch, logs=None):
        self.epoch_ends.append(len(self.steps))

    def on_train_end(self, logs=None):
        self.final = [v.numpy().copy() for v in self.model.trainable_variables]


def _moving_average(steps, momentum):
    """Polyak averaging in numpy: the first step's weights, then
    ``momentum * average + (1 - momentum) * weights`` at every later step."""
    average = [w.copy() for w in steps[0]]
    for weights in steps[1:]:
        average = [momentum * a + (1 - momentum) * w for a, w in zip(average, weights)]
    return average


def test_ema_scores_and_keeps_the_moving_average(init_folder, task_files, tmp_path):
    momentum = 0.8
    cfg = FinetuneConfig(ema=momentum, **{**QUICK, "epochs": 3, "learning_rate": 3e-3})
    # with an eval file: every epoch scores the average, and the best
    # epoch's average is what the run keeps
    seen = _StepWeights()
    metrics = finetune(init_folder, task_files["cls_train"], task_files["cls_eval"],
                       str(tmp_path / "eval"), cfg, callbacks=[seen])
    assert len(seen.epoch_ends) == 3
    end = seen.epoch_ends[metrics["best_epoch"] - 1]
    expected = _moving_average(seen.steps[:end], momentum)
    for got, want, raw in zip(seen.final, expected, seen.steps[end - 1]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(got, raw, atol=1e-4)
               for got, raw in zip(seen.final, seen.steps[end - 1]))
    # the saved model is that average: its eval score is the one reported
    again = inference.evaluate(str(tmp_path / "eval"), task_files["cls_eval"])
    assert metrics["accuracy"] == pytest.approx(again["accuracy"])
    assert metrics["accuracy"] == metrics["eval_history"][metrics["best_epoch"] - 1]
    # without one: the average over every step
    seen = _StepWeights()
    finetune(init_folder, task_files["cls_train"], None, str(tmp_path / "plain"), cfg,
             callbacks=[seen])
    for got, want in zip(seen.final, _moving_average(seen.steps, momentum)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for bad in (1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"ema must be in \[0, 1\)"):
            FinetuneConfig(ema=bad).validate()


def test_best_epoch_stops_after_patience_and_restores_the_best_weights():
    import keras

    from albert_keras.tasks.best_epoch import BestEpoch
    from albert_keras.tasks.task import Task

    class Scripted(Task):  # a task whose eval scores follow a script
        name = "scripted"
        scores = iter([0.5, 0.7, 0.6, 0.65, 0.9])

        def score(self, spec, data, outputs):
            return {"accuracy": next(self.scores)}

    class Data:
        x = np.ones((4, 2), "float32")

    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    seen = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: seen.append(model.get_weights()[0].copy()))
    best = BestEpoch(Scripted(), None, Data(), "accuracy", patience=2)
    model.fit(Data.x, np.zeros((4, 1)), epochs=5, verbose=0, callbacks=[record, best])
    assert best.history == [0.5, 0.7, 0.6, 0.65] and best.best_epoch == 2  # stopped at 4
    np.testing.assert_array_equal(model.get_weights()[0], seen[1])


def test_a_failed_run_leaves_nothing(init_folder, task_files, out_dir):
    cfg = FinetuneConfig(task="classify", label_column="missing", **QUICK)
    with pytest.raises(TaskDataError, match=r"cls_train\.csv: no column 'missing'"):
        finetune(init_folder, task_files["cls_train"], None, out_dir, cfg)
    assert not os.path.exists(out_dir)
    assert not [n for n in os.listdir(os.path.dirname(out_dir)) if n.startswith(".model")]


@pytest.mark.parametrize("trained, expected", [
    (None, "pooled"),  # a published checkpoint or a hand-made folder
    ({"objective": "mlm_sop"}, "pooled"),
    ({"objective": "mlm"}, "mean"),
    ({"objective": "rtd", "rtd_sop": False}, "mean"),
    ({"objective": "rtd", "rtd_sop": True}, "pooled"),
    ({"task": "classify", "pooling": "mean"}, "mean"),  # a fine-tuned folder
])
def test_auto_pooling_follows_how_the_folder_was_trained(tmp_path, init_folder, trained,
                                                         expected):
    from albert_keras.tasks.classify.classify_task import resolve_pooling

    shutil.copyfile(os.path.join(init_folder, "encoder.keras"), tmp_path / "encoder.keras")
    if trained is not None:
        (tmp_path / "train_config.json").write_text(json.dumps(trained))
    assert resolve_pooling("auto", str(tmp_path)) == expected
    assert resolve_pooling("auto", str(tmp_path / "encoder.keras")) == expected
    assert resolve_pooling("pooled", str(tmp_path)) == "pooled"  # a choice is kept


def test_auto_pooling_reads_a_modernbert_pooler_the_masked_lm_trained(tmp_path):
    """ModernBERT's pooled output is its masked LM's transform (over the first
    row or the mean): read from our folders as from HF's, so the classifier
    goes to transformers' class."""
    from albert_keras.models.modernbert.modernbert_config import ModernBertConfig
    from albert_keras.models.modernbert.modernbert_encoder import ModernBertEncoder
    from albert_keras.tasks.classify.classify_task import resolve_pooling

    encoder = ModernBertEncoder(ModernBertConfig(
        vocab_size=99, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, local_attention=8, classifier_pooling="mean"))
    encoder.save(str(tmp_path / "encoder.keras"))
    (tmp_path / "train_config.json").write_text(json.dumps({"objective": "mlm"}))
    assert resolve_pooling("auto", str(tmp_path)) == "pooled"


def test_mean_pooling_for_an_mlm_folder_is_saved_and_read_back(init_folder, task_files,
                                                                out_dir, tmp_path):
    from albert_keras.saving import load_model

    mlm_folder = tmp_path / "mlm"
    shutil.copytree(init_folder, mlm_folder)
    (mlm_folder / "train_config.json").write_text(json.dumps({"objective": "mlm"}))
    cfg = FinetuneConfig(task="classify", **QUICK)  # pooling left at auto
    metrics = finetune(str(mlm_folder), task_files["cls_train"], task_files["cls_eval"],
                       out_dir, cfg)
    model = load_model(os.path.join(out_dir, "model.keras"))
    assert model.pooling == "mean"
    assert json.load(open(os.path.join(out_dir, "train_config.json")))["pooling"] == "mean"
    # the saved folder scores as the run did
    again = inference.evaluate(out_dir, task_files["cls_eval"])
    assert again["accuracy"] == pytest.approx(metrics["accuracy"])
    with pytest.raises(ValueError, match="pooling 'mean' is for sentence heads; tag"):
        FinetuneConfig(task="tag", pooling="mean").validate()


def test_regression(init_folder, task_files, out_dir, tmp_path):
    path = tmp_path / "reg.csv"
    rows = [f"{'fox ' * (i % 4 + 1)}runs,{i % 4}" for i in range(24)]
    path.write_text("text,score\n" + "\n".join(rows) + "\n", encoding="utf-8")
    cfg = FinetuneConfig(task="classify", regression=True, label_column="score", **QUICK)
    metrics = finetune(init_folder, str(path), str(path), out_dir, cfg)
    assert set(metrics) >= {"pearson", "spearman", "mse"}
    assert "score" in inference.predict(out_dir, str(path))[0]


def test_tag(init_folder, task_files, out_dir):
    cfg = FinetuneConfig(task="tag", **QUICK)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = finetune(init_folder, task_files["tag_train"], task_files["tag_eval"],
                           out_dir, cfg)
    # a tagger reads no pooler: Keras' warning about its missing gradients is noise
    assert not [w for w in caught if "Gradients do not exist" in str(w.message)]
    assert set(metrics) >= {"entity_f1", "entity_precision", "entity_recall", "token_accuracy"}
    predictions = inference.predict(out_dir, task_files["tag_eval"])
    assert len(predictions) == 24
    first = predictions[0]
    assert len(first["tags"]) == len(first["tokens"])
    for entity in first["entities"]:
        assert entity["text"] == " ".join(first["tokens"][entity["start"]:entity["end"]])


def test_qa(init_folder, task_files, out_dir):
    cfg = FinetuneConfig(task="qa", stride=8, **{**QUICK, "sequence_length": 48})
    metrics = finetune(init_folder, task_files["qa_train"], task_files["qa_eval"], out_dir, cfg)
    assert set(metrics) >= {"exact_match", "f1"} and metrics["total"] == 12
    predictions = inference.predict(out_dir, task_files["qa_eval"])
    contexts = {qa["id"]: p["context"]
                for p in json.load(open(task_files["qa_eval"]))["data"][0]["paragraphs"]
                for qa in p["qas"]}
    for p in predictions:
        assert contexts[p["id"]][p["start"]:p["end"]] == p["answer"]


def test_choice(init_folder, task_files, out_dir):
    """The answer is always "the fox", at alternating positions: a model that
    reads the choices learns it (one that scores by position stays at 0.5)."""
    cfg = FinetuneConfig(task="choice", **{**QUICK, "epochs": 10})
    metrics = finetune(init_folder, task_files["choice_train"], task_files["choice_eval"], out_dir,
                       cfg)
    assert metrics["accuracy"] >= 0.9 and metrics["examples"] == 16
    predictions = inference.predict(out_dir, task_files["choice_eval"])
    assert all(len(p["probabilities"]) == 2 for p in predictions)
    rows = [json.loads(line) for line in open(task_files["choice_eval"], encoding="utf-8")]
    right = [row["choices"].index(row["label"]) == max(range(2), key=p["probabilities"].__getitem__)
             for row, p in zip(rows, predictions)]
    assert sum(right) / len(right) == metrics["accuracy"]  # the score is the predictions'


def test_fill_mask(init_folder):
    results = inference.fill_mask(init_folder, ["the quick [MASK] fox", "[MASK] dog [MASK]"],
                                  top_k=3)
    assert [len(r) for r in results] == [1, 2]
    for candidates in results[1]:
        probs = [c["probability"] for c in candidates]
        assert probs == sorted(probs, reverse=True) and sum(probs) <= 1.0 + 1e-6
    with pytest.raises(ValueError, match=r"no \[MASK\]"):
        inference.fill_mask(init_folder, ["no mask here"])


def test_embed(init_folder):
    texts = ["the quick brown fox", "a lazy dog", "the quick brown fox"]
    vectors = inference.embed(init_folder, texts, layers=(0, -1), normalize=True)
    assert vectors.shape == (3, 64)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(vectors[0], vectors[2], atol=1e-6)
    assert not np.allclose(vectors[0], vectors[1])
    with pytest.raises(ValueError, match=r"^texts\[1\]: the text is empty$"):
        inference.embed(init_folder, ["fine", "  "])


def test_choice_count_must_match_the_model(init_folder, task_files, out_dir, tmp_path):
    cfg = FinetuneConfig(task="choice", **{**QUICK, "epochs": 1})
    finetune(init_folder, task_files["choice_train"], None, out_dir, cfg)
    three = tmp_path / "three.jsonl"
    three.write_text(json.dumps({"context": "a fox", "choices": ["x", "y", "z"], "label": 0})
                     + "\n", encoding="utf-8")
    with pytest.raises(TaskDataError, match=r"three\.jsonl: 3 choices per question, but the "
                                            r"model was trained with 2"):
        inference.evaluate(out_dir, str(three))


def test_epochs_and_learning_rate_default_by_model_width(init_folder, task_files, tmp_path):
    from albert_keras.tasks.finetune_config import size_defaults

    assert size_defaults(256) == {"epochs": 10, "learning_rate": 3e-4}
    assert size_defaults(768) == {"epochs": 3, "learning_rate": 3e-5}
    cfg = FinetuneConfig(task="classify", batch_size=8, sequence_length=32, epochs=1)
    finetune(init_folder, task_files["cls_train"], None, str(tmp_path / "run"), cfg)
    saved = json.load(open(tmp_path / "run" / "train_config.json"))
    # the tiny test model is narrow: the measured narrow rate; epochs as given
    assert saved["learning_rate"] == 3e-4 and saved["epochs"] == 1


def test_classify_warns_how_many_training_inputs_are_cut(init_folder, tmp_path, caplog):
    import logging

    from albert_keras.sources.registry import read_tokenizer
    from albert_keras.text.packer import pack_texts

    texts = ["the fox", "the dog", "the quick brown fox jumps over the lazy dog " * 4,
             "a dog and a fox " * 6] * 4
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"{t},{'ab'[i % 2]}\n" for i, t in enumerate(texts)))
    cfg = FinetuneConfig(task="classify", **{**QUICK, "epochs": 1, "sequence_length": 16})
    with caplog.at_level(logging.WARNING, logger="albert_keras.drivers.finetune"):
        metrics = finetune(init_folder, str(train), None, str(tmp_path / "out"), cfg)
    whole = pack_texts(read_tokenizer(init_folder, None), texts, None, 512)["padding_mask"].sum(1)
    expected = int((whole > 16).sum())
    assert expected == 8 and metrics["train_inputs_cut"] == expected
    assert metrics["train_length_p95"] == int(np.ceil(np.percentile(whole, 95)))
    assert f"{expected} of {len(texts)} training inputs (50%) are longer than sequence_length " \
        "16" in caplog.text
    # predict and evaluate say it too (a 1,000-piece text was cut silently)
    from albert_keras.drivers.inference import evaluate
    from albert_keras.drivers.inference import predict

    caplog.clear()
    with caplog.at_level(logging.WARNING):
        predict(str(tmp_path / "out"), str(train))
        evaluate(str(tmp_path / "out"), str(train))
    for what in ("predicted", "evaluated"):
        assert f"{expected} of {len(texts)} {what} inputs (50%) are longer than " \
            "sequence_length 16" in caplog.text, caplog.text
    # nothing cut, nothing said
    caplog.clear()
    assert whole.max() <= 64
    cfg = FinetuneConfig(task="classify", **{**QUICK, "epochs": 1, "sequence_length": 64})
    with caplog.at_level(logging.WARNING, logger="albert_keras.drivers.finetune"):
        metrics = finetune(init_folder, str(train), None, str(tmp_path / "out2"), cfg)
    assert metrics["train_inputs_cut"] == 0 and "are longer than" not in caplog.text


def test_truncation_warning_does_not_suggest_a_length_the_model_refuses(caplog):
    import logging
    import types

    from albert_keras.tasks.task_run import truncation_report

    lengths = np.array([100] * 10 + [700] * 10)
    data = types.SimpleNamespace(extra={"lengths": lengths})
    with caplog.at_level(logging.WARNING, logger="albert_keras.drivers.finetune"):
        report = truncation_report(data, 128, max_length=512)
    p95 = int(np.ceil(np.percentile(lengths, 95)))
    assert report == {"train_inputs_cut": 10, "train_length_p95": p95}
    assert f"{p95} pieces keep 95% of the inputs whole, more than the model's 512 " \
        "(max_position_embeddings)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="albert_keras.drivers.finetune"):
        truncation_report(data, 128, max_length=1024)
    assert f"{p95} pieces keep 95% of the inputs whole" in caplog.text
    assert "max_position_embeddings" not in caplog.text
