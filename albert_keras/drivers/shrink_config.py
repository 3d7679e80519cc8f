"""Every knob of ``shrink``, in one value (free of TensorFlow, for ``--help``)."""

import dataclasses
import os

from albert_keras.drivers.shrink_baselines import AVG_EMBEDDING
from albert_keras.drivers.shrink_table import TEACHER
from albert_keras.options import check_options
from albert_keras.options import name_of
from albert_keras.options import option

# The quantization modes a candidate is tried in (the export's, without QAT,
# which fine-tunes again, and int4, whose kernels few app runtimes have).
SHRINK_MODES = ("none", "float16", "dynamic", "int8")
# What is tried, in order, when a candidate's int8 file loses more than the
# tolerance against its own Keras model: the layers whose int8 output strays
# most kept in float (more each time; the export's int8_float_layers), then
# quantization-aware training on the training rows.
INT8_REMEDIES = ("int8+float1", "int8+float2", "int8+float4", "int8+float8", "qat")
_FLOAT_LAYERS = "int8+float"


def student_name(student):
    """A student's name in the table: the preset's, or a folder's base name.

    Example:
    >>> student_name("bert_tiny"), student_name("checkpoints/bert_L-2_H-128/")
    ('bert_tiny', 'bert_L-2_H-128')
    """
    return os.path.basename(os.path.normpath(student)) if os.path.exists(student) or \
        os.sep in student else student


def export_fields(mode):
    """The ``ExportConfig`` fields of a table's mode.

    Example:
    >>> export_fields("int8+float4")
    {'quantize': 'int8', 'int8_float_layers': 4}
    """
    if mode.startswith(_FLOAT_LAYERS):
        return {"quantize": "int8", "int8_float_layers": int(mode[len(_FLOAT_LAYERS):])}
    return {"quantize": mode}


@dataclasses.dataclass(frozen=True)
class ShrinkConfig:
    """What ``shrink`` tries and how it chooses.

    Args:
        students: the students, each distilled from the teacher: presets
            (new weights, the teacher's vocabulary) or pretrained model
            folders (their weights, e.g. a small published BERT; their
            tokenizer must be the teacher's).
        student_overrides: config fields applied to every preset student
            (JSON on the command line), e.g. ``{"num_hidden_layers": 2}``.
        modes: the quantization modes each student (and the teacher) is
            exported in; each file is validated against its Keras model.
        tolerance: the most accuracy a recommended file may lose against
            the teacher's float file (0.01: one point).
        threads: the interpreter threads of the latency measure (the app's).
        runs: timed runs per file.
        epochs: the students' distillation epochs (None: distillation's
            default for the student's width).
        max_minutes: the whole run's time limit, the candidate under way
            included: a file or student starts only where it fits (by the
            slowest file so far) and a student's distillation stops early
            to leave time for its files; the table holds what finished.
        metadata: the recommended file carries TFLite Model Metadata for
            MediaPipe and the Task Library (and MediaPipe runs it first).
        seed: the students' seed.
        int8_remedies: when a candidate's ``int8`` file loses more than
            ``tolerance`` against its own Keras model: ``auto`` tries
            ``INT8_REMEDIES`` in order until one keeps it, ``always`` tries
            every one (to measure what each recovers), ``never`` none.
        baselines: also measure the non-transformer baselines
            (``shrink_baselines``): an average-word-embedding classifier's
            files, and TF-IDF + logistic regression's accuracy.

    Example:
    >>> ShrinkConfig(students=("bert_tiny",), modes=("none", "dynamic")).tolerance
    0.01
    """

    students: list[str] = option(("albert_tiny", "bert_tiny", "mobilebert_tiny"),
                                 "students, each distilled from the teacher: presets (new "
                                 "weights) or pretrained model folders with the teacher's "
                                 "tokenizer (their weights, e.g. a small published BERT)",
                                 nargs="+")
    student_overrides: dict = option(None, "config fields for every student, as JSON, e.g. "
                                           "'{\"num_hidden_layers\": 2}'")
    modes: list[str] = option(SHRINK_MODES, "quantization modes each file is tried in",
                              choices=SHRINK_MODES, nargs="+")
    tolerance: float = option(0.01, "most accuracy a recommended file may lose against "
                                    "the teacher's float file (0.01: one point)",
                              valid="[0, 1)")
    threads: int = option(2, "interpreter threads of the latency measure (the app's)",
                          valid="[1, inf)")
    runs: int = option(30, "timed runs per file", valid="[1, inf)")
    epochs: int = option(None, "distillation epochs of each student",
                         auto="distillation's default for the student's width",
                         valid="[1, inf)")
    max_minutes: float = option(None, "the whole run's time limit: files and students start only "
                                      "where they fit, distillation stops early to leave "
                                      "time for the files",
                                valid="(0, inf)")
    metadata: bool = option(False, "the recommended file carries MediaPipe's metadata "
                                   "(MediaPipe runs it before it is written)")
    seed: int = option(0, "the students' seed")
    int8_remedies: str = option("auto", "when an int8 file loses more than --tolerance "
                                        "against its own float model: keep its worst layers "
                                        "in float (1, 2, 4, 8), then quantization-aware "
                                        "training, until one keeps it (auto); every remedy, "
                                        "to measure them (always); none (never)",
                                choices=("auto", "always", "never"))
    baselines: bool = option(True, "also measure an average-word-embedding classifier of "
                                   "MediaPipe Model Maker's kind, trained on the same rows, "
                                   "and (with scikit-learn) TF-IDF + logistic regression: "
                                   "what a transformer buys (never recommended)")

    def validate(self):
        check_options(self)
        from albert_keras.presets import get_preset

        if not self.students:
            raise ValueError("students: give at least one preset")
        folders = [s for s in self.students if os.path.exists(s)]
        for name in self.students:
            if name not in folders and os.sep in name:
                raise ValueError(f"{name}: no such student folder")
            if name not in folders:
                get_preset(name)  # an unknown preset is named now, before any work
        names = [student_name(s) for s in self.students]
        taken = set(names) & {TEACHER, AVG_EMBEDDING}
        if taken:
            raise ValueError(f"students: {taken.pop()!r} names another row of the table; "
                             f"rename that folder")
        if len(set(names)) < len(names):
            raise ValueError(f"students: two are named {max(names, key=names.count)!r} in the "
                             f"table; give each a different name (folder base name)")
        if folders and self.student_overrides:
            raise ValueError(f"{name_of(ShrinkConfig, 'student_overrides')} changes presets; "
                             f"{folders[0]} is a pretrained folder, which keeps its shape")
        if self.int8_remedies == "always" and "int8" not in self.modes:
            raise ValueError(f"{name_of(ShrinkConfig, 'int8_remedies')} always remedies int8 "
                             f"files: add int8 to {name_of(ShrinkConfig, 'modes')}")
