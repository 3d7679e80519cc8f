"""The setting of adversarial fine-tuning (``albert_keras.training.adversarial``):
a module free of TensorFlow, so that the command line builds its flags
without importing it."""

import dataclasses

METHODS = ("none", "sift", "r3f")
# DeBERTa's base-size SiFT recipe (experiments/glue/mnli.sh: vat_lambda 5,
# learning rate 1e-4, init perturbation 1e-2) and fairseq's R3F defaults
# (r3f_lambda 1, eps 1e-5, uniform noise)
DEFAULTS = {"sift": {"weight": 5.0, "noise": 1e-2, "step": 1e-4},
            "r3f": {"weight": 1.0, "noise": 1e-5, "step": None}}


@dataclasses.dataclass(frozen=True)
class Adversarial:
    """One adversarial fine-tuning setting, its defaults filled in.

    Args:
        method: ``sift`` or ``r3f``.
        weight: the term's weight in the loss (DeBERTa's ``vat_lambda``,
            fairseq's ``r3f_lambda``).
        noise: SiFT: the initial perturbation's standard deviation
            (clamped to twice it); R3F: the uniform noise's half-width.
            In the units of the normalised embeddings.
        step: SiFT's ascent step (the largest change of an element of
            ``delta``); None for R3F.

    Example:
    >>> Adversarial.of("sift")
    Adversarial(method='sift', weight=5.0, noise=0.01, step=0.0001)
    """

    method: str
    weight: float
    noise: float
    step: float = None

    @classmethod
    def of(cls, method, weight=None, noise=None, step=None):
        """The setting of ``method`` with the given values, the method's
        defaults for the others; None for ``none``."""
        if method not in METHODS:
            raise ValueError(f"adversarial must be one of {METHODS}, got {method!r}")
        if method == "none":
            return None
        defaults = DEFAULTS[method]
        if step is not None and defaults["step"] is None:
            raise ValueError(f"adversarial_step is SiFT's ascent step; {method} takes none")
        return cls(method, float(defaults["weight"] if weight is None else weight),
                   float(defaults["noise"] if noise is None else noise),
                   None if defaults["step"] is None else float(
                       defaults["step"] if step is None else step))
