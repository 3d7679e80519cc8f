"""Model selection during fine-tuning: the best epoch by the task's own score."""

import logging

import keras

logger = logging.getLogger(__name__)


class BestEpoch(keras.callbacks.Callback):
    """Scores a labelled file after every epoch and keeps the best weights.

    The score is the task's own (entity F1, SQuAD F1, accuracy, ...), not a
    Keras metric, so the epoch kept is the one the final report would pick.
    Training stops after ``patience`` epochs without a better score (0:
    never), and the best weights are put back when training ends. Of equal
    scores, the later epoch is kept.

    Args:
        task: the ``Task``.
        spec: its ``TaskSpec``.
        evaluation: labelled ``TaskData``.
        metric: a key of ``task.score`` (higher is better).
        patience: epochs without a better score before stopping.
        batch_size: for the predictions.
        name: what the scored file is called in the log (``eval`` or
            ``validation``).
        length_buckets: predict in batches cut to their rows' lengths
            (``albert_keras.data.length_buckets``).

    Example:
    >>> best = BestEpoch(task, spec, evaluation, "accuracy", patience=2)  # doctest: +SKIP
    >>> model.fit(ds, epochs=10, callbacks=[best])  # doctest: +SKIP
    """

    def __init__(self, task, spec, evaluation, metric, patience=0, batch_size=64, name="eval",  # noqa: PLR0913 (the scored file, its task and how it is run)
                 length_buckets=True):
        super().__init__()
        self.length_buckets = length_buckets
        self.name = name
        self.task, self.spec, self.evaluation = task, spec, evaluation
        self.metric, self.patience, self.batch_size = metric, patience, batch_size
        self.history, self.best, self.best_epoch, self._weights = [], None, None, None
        # the best epoch's outputs on the scored file: the final report on
        # the same file reads them instead of predicting it again
        self.best_outputs = None

    def on_epoch_end(self, epoch, logs=None):
        # a task object (``TextTask``) predicts raw text; its task model
        # takes the packed rows
        model = getattr(self.model, "task_model", self.model)
        outputs = self.task.outputs(model, self.evaluation, self.batch_size,
                                    self.length_buckets)
        scores = self.task.score(self.spec, self.evaluation, outputs)
        if self.metric not in scores:
            known = sorted(k for k, v in scores.items() if isinstance(v, float))
            raise ValueError(f"--select-metric {self.metric!r}: the {self.task.name} task "
                             f"scores {known}")
        value = float(scores[self.metric])
        self.history.append(value)
        if logs is not None:  # Keras' history (and metrics.csv) get the score: val_accuracy
            logs[f"{'val' if self.name == 'validation' else self.name}_{self.metric}"] = value
        # a tie goes to the later, longer-trained epoch (small eval files tie
        # often, and the earlier weights are the less settled ones)
        better = self.best is None or value >= self.best
        logger.info(f"epoch {epoch + 1}: {self.name} {self.metric} {value:.4f}"
                    + (" (best so far)" if better else ""))
        if better:
            self.best, self.best_epoch, self.best_outputs = value, epoch + 1, outputs
            self._weights = [w.copy() for w in self.model.get_weights()]
        elif self.patience and epoch + 1 - self.best_epoch >= self.patience:
            logger.info(f"no better {self.metric} for {self.patience} epochs; stopping")
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self._weights is not None:
            self.model.set_weights(self._weights)


def epoch_selector(task, spec, evaluation, validation, select_metric=None, patience=0,  # noqa: PLR0913 (BestEpoch's choices)
                   length_buckets=True):
    """The ``BestEpoch`` of a fine-tuning or distillation run, or None.

    Args:
        task, spec: the ``Task`` and its ``TaskSpec``.
        evaluation: the eval file's ``TaskData`` (or None).
        validation: a labelled ``TaskData`` to select on instead (or None).
        select_metric, patience, length_buckets: as ``BestEpoch``'s (metric
            default: the task's main one).

    Returns:
        A ``BestEpoch`` scoring ``validation`` when given, else a labelled
        ``evaluation``; None when neither is there.

    Example:
    >>> best = epoch_selector(task, spec, evaluation, None)  # doctest: +SKIP
    """
    if validation is not None:
        chosen, name = validation, "validation"
    elif evaluation is not None and evaluation.y is not None:
        chosen, name = evaluation, "eval"
    elif select_metric or patience:
        raise ValueError("--select-metric and --patience need a labelled --eval or "
                         "--validation file, or --validation-split")
    else:
        return None
    return BestEpoch(task, spec, chosen, select_metric or task.metric_for(spec, chosen), patience,
                     name=name, length_buckets=length_buckets)


def hold_out(task, train, validation, fraction, seed, source="the training file"):
    """``(train, validation)`` with ``fraction`` of ``train`` held out to
    choose the epoch on (``task.split``); unchanged when ``fraction`` is None.

    A validation file and a held-out share are two answers to one question,
    so asking for both is an error rather than a silent choice.

    Example:
    >>> train, validation = hold_out(task, train, None, 0.1, seed=0)  # doctest: +SKIP
    """
    if not fraction:
        return train, validation
    if validation is not None:
        raise ValueError("give --validation or --validation-split, not both")
    return task.split(train, fraction, seed, source)


def selection_report(best):
    """What ``metrics.json`` records of the selection (empty without one)."""
    if best is None:
        return {}
    return {"best_epoch": best.best_epoch, "select_metric": best.metric,
            "selected_on": best.name, f"{best.name}_history": best.history}
