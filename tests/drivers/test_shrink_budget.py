"""``shrink --max-minutes`` holds with the candidate under way: files start
only where the slowest so far fits, a student only with time to train after
its files are reserved, and its distillation stops where that reserve
begins."""

import csv
import os

import keras
import numpy as np

from albert_keras.drivers import shrink as shrink_module
from albert_keras.drivers.shrink_budget import MIN_TRAINING_SECONDS
from albert_keras.drivers.shrink_budget import ShrinkBudget
from albert_keras.drivers.shrink_budget import StopAtDeadline
from albert_keras.drivers.shrink_config import ShrinkConfig


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_files_and_students_are_planned_from_the_slowest_file_so_far():
    clock = FakeClock()
    budget = ShrinkBudget(2, clock)  # 120 s
    assert budget.fits_file() and budget.file_estimate() == 0

    def slow_file():
        clock.now += 30
        return "row"

    assert budget.measure_file(slow_file) == "row"
    assert budget.file_estimate() == 30 and budget.left() == 90
    assert budget.training_seconds(2) == 30  # 90 left, two 30 s files reserved
    clock.now += 65  # 25 s left: the next 30 s file would overrun
    assert not budget.fits_file()
    assert budget.training_seconds(1) < MIN_TRAINING_SECONDS
    assert ShrinkBudget(None, clock).deadline_callback(3) is None


def test_distillation_stops_at_the_first_batch_past_the_deadline():
    clock = FakeClock()
    stop = StopAtDeadline(clock.now + 2.5, clock)
    batches = []

    def tick(batch, logs):
        clock.now += 1
        batches.append(batch)

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    ticking = keras.callbacks.LambdaCallback(on_train_batch_end=tick)
    history = model.fit(np.ones((40, 3)), np.ones((40, 1)), batch_size=4, epochs=5,
                        verbose=0, callbacks=[ticking, stop])
    assert stop.stopped and len(batches) == 3  # of 50: the third ends past the deadline
    assert len(history.history["loss"]) == 1


def test_a_spent_budget_trains_no_student_and_measures_only_what_fits(
        classifier_folder, task_files, tmp_path, monkeypatch):
    """The teacher's first file is measured (nothing is known of the cost
    before it); its time then leaves no room for another file or a student."""
    clock = FakeClock()
    real = ShrinkBudget.measure_file

    def costly(self, measure):
        return real(self, lambda: (measure(), setattr(clock, "now", clock.now + 50))[0])

    monkeypatch.setattr(ShrinkBudget, "measure_file", costly)
    monkeypatch.setattr(shrink_module, "ShrinkBudget",
                        lambda minutes: ShrinkBudget(minutes, clock))
    cfg = ShrinkConfig(students=("bert_tiny",), modes=("none", "dynamic"), runs=1,
                       max_minutes=1, baselines=False)
    result = shrink_module.shrink(classifier_folder, task_files["cls_train"],
                                  task_files["cls_eval"], str(tmp_path / "run"), cfg)
    assert [(r["candidate"], r["mode"]) for r in result["rows"]] == [("teacher", "none")]
    assert not os.path.exists(tmp_path / "run" / "students")


def test_a_student_started_late_trains_until_its_files_reserve(
        classifier_folder, task_files, tmp_path, monkeypatch):
    """A deadline already passed: the student takes one batch of its two
    epochs, and its files are still measured."""
    monkeypatch.setattr(ShrinkBudget, "training_seconds", lambda self, files: 1e9)
    monkeypatch.setattr(ShrinkBudget, "deadline_callback",
                        lambda self, files: StopAtDeadline(-1.0))
    cfg = ShrinkConfig(students=("bert_tiny",), modes=("none",), runs=1, epochs=2,
                       max_minutes=60, baselines=False,
                       student_overrides={"num_hidden_layers": 2, "hidden_size": 16,
                                          "num_attention_heads": 2,
                                          "intermediate_size": 32})
    out = tmp_path / "run"
    result = shrink_module.shrink(classifier_folder, task_files["cls_train"],
                                  task_files["cls_eval"], str(out), cfg)
    assert [(r["candidate"], r["mode"]) for r in result["rows"]] == [
        ("teacher", "none"), ("bert_tiny", "none")]
    metrics = list(csv.DictReader(open(out / "students" / "bert_tiny" / "metrics.csv")))
    assert len(metrics) == 1  # one epoch of the two, cut short
