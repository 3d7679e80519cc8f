"""The setting of adversarial fine-tuning (``albert_keras.training.adversarial``):
a module free of TensorFlow, so that the command line builds its flags
without importing it."""

import dataclasses

from albert_keras.options import option

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


def _by_method(knob):
    """``--help``'s default of an adversarial knob left unset."""
    return ", ".join(f"{values[knob]:g} for {method}" for method, values in DEFAULTS.items()
                     if values[knob] is not None)


@dataclasses.dataclass
class AdversarialFields:
    """The adversarial knobs of a run's config (fine-tuning's, and
    distillation's for its student).

    Args:
        adversarial: ``sift``, ``r3f`` or ``none``.
        adversarial_weight, adversarial_noise, adversarial_step: the term's
            weight, the noise's size and SiFT's ascent step; None takes the
            method's default (``DEFAULTS``).
    """

    adversarial: str = option("none", "adversarial fine-tuning: sift (DeBERTa's: perturb the "
                                      "normalised embeddings, one ascent step, symmetric KL; "
                                      "3 passes a step), r3f (uniform noise, symmetric KL; "
                                      "2 passes) or none", choices=METHODS)
    adversarial_weight: float = option(None, "the adversarial term's weight in the loss",
                                       auto=_by_method("weight"), valid="[0, inf)")
    adversarial_noise: float = option(None, "the perturbation's size in normalised units "
                                            "(sift: normal's std, clamped to twice it; r3f: "
                                            "uniform's half-width)",
                                      auto=_by_method("noise"), valid="(0, inf)")
    adversarial_step: float = option(None, "sift: the ascent step (the largest change of "
                                           "one element)", auto=_by_method("step"),
                                     valid="(0, inf)")

    def check_adversarial(self):
        """A knob given without a method, or one its method does not take, is an error."""
        knobs = ("adversarial_weight", "adversarial_noise", "adversarial_step")
        given = [k for k in knobs if getattr(self, k) is not None]
        if self.adversarial == "none" and given:
            raise ValueError(f"{given[0]} applies only with adversarial sift or r3f")
        self.adversarial_setting()

    def adversarial_setting(self):
        """The ``Adversarial`` setting (defaults filled in), or None."""
        return Adversarial.of(self.adversarial, self.adversarial_weight,
                              self.adversarial_noise, self.adversarial_step)
