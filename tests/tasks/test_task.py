"""Holding out a share of a training file (``Task.split``): whole examples to
one side, features and scoring kept in step, stratified by class."""

import numpy as np
import pytest

from albert_keras.tasks.finetune_config import FinetuneConfig
from albert_keras.tasks.registry import get_task
from albert_keras.tasks.task_run import task_spec
from albert_keras.text.sentencepiece_tokenizer import SentencePiece

# Short sequences so that QA contexts need several windows and tag
# sentences several rows: the split must keep an example's rows together.
SEQUENCE = {"classify": 32, "choice": 32, "tag": 8, "qa": 24}


def _read(name, task_files, spm_path):
    task = get_task(name)
    cfg = FinetuneConfig(task=name, sequence_length=SEQUENCE[name], stride=8)
    data, spec = task.read(task_files[f"{'cls' if name == 'classify' else name}_train"],
                           task_spec(cfg), SentencePiece(spm_path))
    return task, spec, data


def _outputs(name, spec, data, seed=0):
    """Random logits of the task model's shapes, one row per feature row."""
    rng = np.random.default_rng(seed)
    n, s = len(data), SEQUENCE[name]
    if name == "qa":
        return {"start_logits": rng.normal(size=(n, s)), "end_logits": rng.normal(size=(n, s))}
    shape = {"classify": (n, len(spec.labels)), "choice": (n, spec.num_choices),
             "tag": (n, s, len(spec.labels))}[name]
    return {"logits": rng.normal(size=shape).astype("float32")}


def _keys(name, data):
    """What identifies each example of a part, in order."""
    extra = data.extra
    if name == "classify":
        return list(extra["examples"].texts)
    if name == "choice":
        return list(extra["examples"].contexts)
    if name == "tag":
        return [" ".join(words) for words in extra["words"]]
    return [e.qid for e in extra["examples"]]


@pytest.mark.parametrize("name", ["classify", "choice", "tag", "qa"])
def test_a_split_keeps_whole_examples_and_their_scores(name, task_files, spm_path):
    task, spec, data = _read(name, task_files, spm_path)
    of_rows = task.example_of_rows(data)
    if name in ("tag", "qa"):  # the fixture does what the test is about
        assert len(data) > of_rows.max() + 1
    outputs = _outputs(name, spec, data)
    records = task.records(spec, data, outputs)
    assert len(records) == of_rows.max() + 1  # one record per example

    train, validation = task.split(data, 0.25, seed=3)
    everything, kept, held = _keys(name, data), _keys(name, train), _keys(name, validation)
    assert len(set(everything)) == len(everything)
    assert sorted(kept + held) == sorted(everything) and not set(kept) & set(held)
    assert len(held) == round(0.25 * len(everything))
    assert len(train) + len(validation) == len(data)
    correct = 0.0
    for part, keys in ((train, kept), (validation, held)):
        # each part's rows are the original rows of its examples, in order
        chosen = np.isin(of_rows, [everything.index(k) for k in keys])
        for k, v in data.x.items():
            np.testing.assert_array_equal(part.x[k], v[chosen])
        # the part's own bookkeeping decodes its rows as the whole file's did
        # (QA answers are spans of the part's contexts, tags its words)
        mine = task.records(spec, part, {k: v[chosen] for k, v in outputs.items()})
        assert mine == [records[everything.index(k)] for k in keys]
        if name in ("classify", "choice"):  # accuracy adds up over the two parts
            correct += task.score(spec, part, {k: v[chosen] for k, v in outputs.items()}
                                  )["accuracy"] * len(keys)
    if name in ("classify", "choice"):
        whole = task.score(spec, data, outputs)["accuracy"]
        assert correct == pytest.approx(whole * len(everything))

    # the same seed draws the same split, another seed another one
    again = task.split(data, 0.25, seed=3)[1]
    assert _keys(name, again) == held
    assert _keys(name, task.split(data, 0.25, seed=4)[1]) != held


def test_classes_are_held_out_in_proportion(task_files, spm_path, tmp_path):
    task, spec, data = _read("classify", task_files, spm_path)
    # 40 of one class, 4 of the other: a plain draw of 5 often has no "b"
    rows = ["text,label"] + [f"a text number {i},a" for i in range(40)] + [
        f"b text number {i},b" for i in range(4)]
    path = tmp_path / "skewed.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    data, spec = task.read(str(path), spec.replace(labels=None), SentencePiece(spm_path))
    for seed in range(5):
        train, validation = task.split(data, 0.1, seed=seed)
        labels = validation.y["logits"]
        assert sorted(labels.tolist()) == [0, 0, 0, 0, 1]  # 4 of 40 and 1 of 4 (at least one)
        assert (train.y["logits"] == 1).sum() == 3
        assert train.extra["lengths"].shape == (39,)


def test_a_split_that_leaves_a_side_empty_is_refused(task_files, spm_path):
    task, spec, data = _read("classify", task_files, spm_path)
    single = task.subset(data, np.array([0]))
    with pytest.raises(ValueError, match=r"^tiny\.csv: validation_split 0\.1 of 1 examples "
                                         "leaves 1 to train on and 0 to validate on"):
        task.split(single, 0.1, source="tiny.csv")
    with pytest.raises(ValueError, match=r"validation_split must be in \(0, 1\)"):
        task.split(data, 1.0)


@pytest.mark.parametrize("task, setting, words", [
    ("classify", {"stride": 64}, "stride is for task qa, not classify"),
    ("tag", {"regression": True}, "regression is for task classify, not tag"),
    ("qa", {"choices_column": "answers"}, "choices_column is for task choice, not qa"),
])
def test_a_setting_of_another_task_is_refused_not_dropped(task, setting, words):
    """Each task's own settings are declared in its folder (``QaFields``...);
    one given to a run of another task is an error naming it, in Python and
    on the command line (as its flag)."""
    from albert_keras.options import command_line_names
    from albert_keras.tasks.finetune_config import finetune_settings

    with pytest.raises(ValueError, match=words):
        finetune_settings(task, setting, "test")
    with command_line_names(), pytest.raises(ValueError, match="--" + words.replace("_", "-")
                                             .split(" ")[0]):
        finetune_settings(task, setting, "test")
    own = {"classify": {"regression": True}, "tag": {}, "qa": {"stride": 64},
           "choice": {"choices_column": "answers"}}[task]
    assert all(getattr(finetune_settings(task, own, "test"), k) == v for k, v in own.items())
