"""``albert-keras shrink``: the smallest phone file that keeps the teacher's accuracy.

From a fine-tuned classifier folder (the teacher), on the user's own rows:

1. the teacher is exported in each mode, as the reference row;
2. each student preset is distilled from the teacher (``distill``), then
   exported in each mode; every file is validated against its Keras model
   on the eval file, whose accuracy it reports (a mode whose accuracy falls
   more than the export's bound below its Keras model fails validation and
   is shown as such, not recommended);
   where an ``int8`` file loses more than ``tolerance`` against its own
   Keras model, the remedies (``INT8_REMEDIES``: its worst layers kept in
   float, then quantization-aware training) are tried in order until one
   keeps it, each a row of the table;
3. each file's size and median latency at batch 1 with the app's threads
   (``bench``) are measured on this CPU;
4. beside them, the baselines (``shrink_baselines``): an average-word-
   embedding classifier of MediaPipe Model Maker's kind, trained on the same
   rows and measured the same way, and TF-IDF + logistic regression's
   accuracy, so the table shows what a transformer buys;
5. the table (``shrink.md``, ``shrink.json``) lists them with the Pareto
   front (no other file is both smaller and more accurate) and recommends
   the smallest transformer file within ``tolerance`` of the teacher's float
   accuracy, copied to ``recommended.tflite`` (with metadata when asked).

Resumable: each finished step leaves its result under ``DIR/results/``; a
run started again on the same ``DIR`` skips them. ``max_minutes`` holds
for the whole run, the candidate under way included (``ShrinkBudget``): a
file or a student starts only where it fits, and a student's distillation
stops early to leave time for its files.
"""

import dataclasses
import functools
import logging
import os
import shutil

from albert_keras.drivers.shrink_baselines import baseline_rows
from albert_keras.drivers.shrink_baselines import tfidf_accuracy
from albert_keras.drivers.shrink_budget import MIN_TRAINING_SECONDS
from albert_keras.drivers.shrink_budget import ShrinkBudget
from albert_keras.drivers.shrink_config import INT8_REMEDIES
from albert_keras.drivers.shrink_config import ShrinkConfig
from albert_keras.drivers.shrink_config import export_fields
from albert_keras.drivers.shrink_config import student_name
from albert_keras.drivers.shrink_table import TEACHER
from albert_keras.drivers.shrink_table import loses_to_float
from albert_keras.drivers.shrink_table import recommend
from albert_keras.drivers.shrink_table import write_table
from albert_keras.files import read_json
from albert_keras.files import write_json
from albert_keras.sources.model_source import ModelSource
from albert_keras.tasks.registry import TASKS
from albert_keras.tasks.registry import get_task

logger = logging.getLogger(__name__)

SHRINK_FORMAT = "albert-keras-shrink/1"


class ShrinkError(ValueError):
    """A ``shrink`` request that cannot run (one line, found before the work)."""


@dataclasses.dataclass(frozen=True)
class _Run:
    """What every step of one run reads: the rows (eval, train), its folder,
    the settings and the clock."""

    paths: tuple
    out_dir: str
    cfg: ShrinkConfig
    budget: ShrinkBudget


def shrink(teacher, train_path, eval_path, out_dir, cfg=None, unlabeled=None):
    """Distils, exports and measures candidates; returns the table's rows.

    Args:
        teacher: a fine-tuned classifier folder.
        train_path: the labelled rows the students learn from.
        eval_path: the labelled rows every file is scored on.
        out_dir: the run's folder (a folder of an earlier run is resumed).
        cfg: a ``ShrinkConfig``.
        unlabeled: rows the teacher labels for the students (``distill``'s).

    Returns:
        ``{"rows": [...], "recommended": row or None}``.

    Example:
    >>> shrink("runs/reviews", "train.csv", "eval.csv", "runs/shrink",  # doctest: +SKIP
    ...        ShrinkConfig(students=("bert_tiny",), modes=("none", "dynamic")))
    """
    cfg = cfg or ShrinkConfig()
    cfg.validate()
    _check_request(teacher, (train_path, eval_path, unlabeled), out_dir)
    run = _Run((eval_path, train_path), out_dir, cfg, ShrinkBudget(cfg.max_minutes))
    os.makedirs(os.path.join(out_dir, "results"), exist_ok=True)
    write_json(os.path.join(out_dir, "shrink_run.json"),
               {"format": SHRINK_FORMAT, "teacher": os.path.abspath(teacher),
                "config": dataclasses.asdict(cfg)})
    rows = _files_of(TEACHER, teacher, run)
    references = {}
    if cfg.baselines:
        spec = ModelSource(teacher).task_spec
        rows += baseline_rows(spec, (train_path, eval_path), out_dir, cfg)
        references = _references(spec, (train_path, eval_path), out_dir)
    for student in cfg.students:
        folder = _student(student, teacher, run, unlabeled)
        if folder is None:
            break
        rows += _files_of(student_name(student), folder, run)
    best = recommend(rows, cfg.tolerance)
    if best is not None:
        _ship(best, out_dir, cfg, (eval_path, train_path))
    write_table(rows, best, out_dir, cfg, references)
    return {"rows": rows, "recommended": best, "references": references}


def _check_request(teacher, paths, out_dir):
    # ours (task.json), or one fine-tuned with transformers (...ForSequenceClassification)
    spec = ModelSource(teacher).task_spec if os.path.isdir(teacher) else None
    if not spec or spec.get("task") not in TASKS or not get_task(spec["task"]).shrinks:
        raise ShrinkError(f"{teacher}: shrink takes a fine-tuned classifier folder "
                          f"(task.json with task classify, or an HF "
                          f"...ForSequenceClassification folder)")
    for path in paths:
        if path is not None and path != "corpus" and not os.path.isfile(path):
            raise ShrinkError(f"{path}: no such file")
    if os.path.isdir(out_dir) and os.listdir(out_dir):
        run = os.path.join(out_dir, "shrink_run.json")
        if not os.path.isfile(run) or read_json(run).get("format") != SHRINK_FORMAT:
            raise ShrinkError(f"{out_dir}: a folder with other files in it; name a new or "
                              f"empty folder (a folder of an earlier shrink run is resumed)")
        if read_json(run).get("teacher") != os.path.abspath(teacher):
            raise ShrinkError(f"{out_dir}: an earlier shrink run of another teacher "
                              f"({read_json(run).get('teacher')}); name a new folder")


def _references(spec, paths, out_dir):
    """Accuracies with no file (TF-IDF + logistic regression), kept for a resumed run."""
    path = os.path.join(out_dir, "results", "references.json")
    if not os.path.isfile(path):
        write_json(path, {"tfidf_logistic_regression": tfidf_accuracy(spec, paths)})
    return read_json(path)


def _student(student, teacher, run, unlabeled):
    """The student's folder, distilled now or by an earlier run (None when
    the time left cannot train it and measure its files); ``student`` is a
    preset (new weights) or a pretrained model folder (its weights)."""
    from albert_keras.drivers.distill import distill
    from albert_keras.drivers.distill_config import DistillConfig

    cfg, name = run.cfg, student_name(student)
    folder = os.path.join(run.out_dir, "students", name)
    if os.path.isfile(os.path.join(folder, "task.json")):
        logger.info(f"{name}: distilled by an earlier run")
        return folder
    if run.budget.training_seconds(len(cfg.modes)) < MIN_TRAINING_SECONDS:
        logger.info(f"--max-minutes {cfg.max_minutes:g}: too little time left for {name} "
                    f"and its files; it and later students not tried")
        return None
    logger.info(f"distilling {name} ...")
    fields = {"seed": cfg.seed}
    if os.path.exists(student):
        fields["student_init"] = student
    else:
        fields.update(student=student, student_overrides=cfg.student_overrides)
    if cfg.epochs is not None:
        fields["epochs"] = cfg.epochs
    stop = run.budget.deadline_callback(len(cfg.modes))
    distill(teacher, run.paths[1], run.paths[0], folder, DistillConfig(**fields),
            unlabeled=unlabeled, callbacks=() if stop is None else (stop,))
    return folder


def _files_of(name, folder, run):
    """One row per mode: the file's size, latency and accuracy (or why it
    failed validation); then int8's remedies where they apply. A file the
    time left cannot hold is left out (a later run on the folder measures it)."""
    params = functools.cache(lambda: _parameters(folder))
    cfg = run.cfg
    rows = [_row(name, folder, mode, run, params) for mode in cfg.modes]
    last = next((r for r in rows if r is not None and r["mode"] == "int8"), None)
    for mode in INT8_REMEDIES if last is not None and cfg.int8_remedies != "never" else ():
        if cfg.int8_remedies == "auto" and not loses_to_float(last, cfg.tolerance):
            break
        last = _row(name, folder, mode, run, params)
        if last is None:
            break
        rows.append(last)
    return [row for row in rows if row is not None]


def _row(name, folder, mode, run, params):
    """A file's row, measured now or read from an earlier run's result;
    None when it is not on record and does not fit in the time left."""
    result_path = os.path.join(run.out_dir, "results", f"{name}_{mode}.json")
    if not os.path.isfile(result_path):
        if not run.budget.fits_file():
            logger.info(f"--max-minutes {run.cfg.max_minutes:g}: no time left for "
                        f"{name} ({mode})")
            return None
        measured = run.budget.measure_file(lambda: _measure_file(name, folder, mode, run))
        write_json(result_path, {"candidate": name, "mode": mode, "params": params(),
                                 **measured})
    return read_json(result_path)


def _measure_file(name, folder, mode, run):
    path = os.path.join(run.out_dir, "files", f"{name}_{mode}.tflite")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    logger.info(f"exporting {name} ({mode}) ...")
    row = measure_export(folder, path, _export_config(mode, *run.paths, overwrite=True),
                         run.cfg)
    return {"file": os.path.relpath(path, run.out_dir), **row}


def measure_export(folder, path, export_cfg, cfg):
    """Exports ``folder`` to ``path`` and measures the file as ``shrink``
    does: validated against its Keras model (accuracy on the validation
    rows), size, median latency at batch 1 with ``cfg.threads``.

    Args:
        folder: a fine-tuned classifier folder.
        path: the ``.tflite`` to write.
        export_cfg: an ``ExportConfig``.
        cfg: a ``ShrinkConfig`` (its ``runs`` and ``threads``).

    Returns:
        the row: ``validated`` and the numbers, or ``failure`` (why not).
    """
    from albert_keras.export import ExportError
    from albert_keras.export import ValidationError
    from albert_keras.export import export_tflite
    from albert_keras.export.bench import bench

    try:
        sidecar = export_tflite(folder, path, export_cfg)
    except ValidationError as e:
        return {"validated": False, "failure": str(e),
                **{k: e.report.get(k) for k in ("keras_accuracy", "tflite_accuracy")}}
    except ExportError as e:  # a remedy that cannot apply (more float layers than int8 ones)
        return {"validated": False, "failure": str(e)}
    report = sidecar["validation"]
    timing = bench(path, runs=cfg.runs, threads=cfg.threads)
    return {"validated": True, "size_bytes": sidecar["size_bytes"],
            "size_mb": round(sidecar["size_bytes"] / 1e6, 3),
            "median_ms": round(timing["median_ms"], 2),
            "keras_accuracy": report.get("keras_accuracy"),
            "tflite_accuracy": report.get("tflite_accuracy"),
            "examples": report["examples"], "int8": sidecar.get("int8")}


def _export_config(mode, eval_path, train_path, **fields):
    from albert_keras.export import ExportConfig

    # every eval row: the accuracy is the file's on the user's data; int8
    # calibrates on the training rows, and QAT fine-tunes on them
    fields = {**export_fields(mode), **fields}
    if fields["quantize"] in ("int8", "qat"):
        fields["representative"] = train_path
    if fields["quantize"] == "qat":
        fields["qat_data"] = train_path
    return ExportConfig(validation_data=eval_path, examples=10**9, **fields)


def _parameters(folder):
    encoder = ModelSource(folder).encoder()
    return int(sum(int(w.numpy().size) for w in encoder.weights))


def _ship(best, out_dir, cfg, paths):
    """``recommended.tflite`` (and its sidecar): the file itself, or with
    ``metadata`` that candidate exported again with MediaPipe's metadata."""
    from albert_keras.export import export_tflite

    target = os.path.join(out_dir, "recommended.tflite")
    folder = os.path.join(out_dir, "students", best["candidate"]) \
        if best["candidate"] != TEACHER else read_json(
            os.path.join(out_dir, "shrink_run.json"))["teacher"]
    if cfg.metadata:
        export_tflite(folder, target, _export_config(best["mode"], *paths, metadata=True,
                                                     overwrite=True))
        return
    source = os.path.join(out_dir, best["file"])
    for ext in (".tflite", ".json", ".md"):
        shutil.copyfile(source[: -len(".tflite")] + ext, target[: -len(".tflite")] + ext)
