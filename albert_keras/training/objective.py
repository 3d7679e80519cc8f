"""What a pretraining objective provides to the driver.

An objective (``mlm_sop``, ``mlm``, ``rtd``) says which features it reads, which
model (encoder plus heads) it trains, how it scores a held-out split and
what to keep when training continues from another model. The driver
(``albert_keras.training.pretrain``) only talks to this interface, so a new
objective is one module plus one line in
``albert_keras.training.objectives``.
"""


class Objective:
    """One pretraining objective."""

    # The registry name, recorded in ``train_config.json``.
    name = None

    def __init__(self, train_config=None):
        # the run's ``PretrainConfig`` (objectives with knobs of their own read it)
        self.train_config = train_config

    @property
    def needs_sentence_labels(self):
        """Does it train on the pairs' sentence-order (or NSP) labels?"""
        return False

    def split_features(self, features):
        """A data-folder feature dict -> ``(x, y)`` for ``fit``."""
        raise NotImplementedError

    def monitor_for(self, has_eval):
        """The Keras log name checkpoints keep the best of."""
        raise NotImplementedError

    def build_model(self, encoder, optimizer, steps_per_execution):
        """The compiled model that trains ``encoder`` with this objective."""
        raise NotImplementedError

    def continue_from(self, source, model):
        """Copies heads of ``source`` (a loaded model) that ``model`` shares."""

    def stages(self, model):
        """``[(stage, steps)]`` when the run trains in stages with a model (and
        optimizer) of their own (``distill``), else None: one model throughout."""
        return None

    def model_for_stage(self, model, stage, steps_before, steps_per_execution):
        """The compiled model of ``stage``, made from the one before it."""
        return model

    def saved_model(self, model):
        """What the run's folder keeps of ``model`` (``pretrainer.keras``)."""
        return model
    def evaluate(self, model, data_dir, split="eval", batch_size=64):
        """Held-out metrics over a whole split (every example once)."""
        raise NotImplementedError

    def baselines(self, data_dir):
        """What a trivial predictor scores on the held-out split."""
        return {}

    def summary(self, metrics):
        """One line for the command line."""
        raise NotImplementedError
