"""The table of a ``shrink`` run: the Pareto front, the recommendation, and
its Markdown, JSON and picture."""

import os

from albert_keras.drivers.shrink_picture import picture
from albert_keras.files import atomic_write
from albert_keras.files import write_json

TEACHER = "teacher"
# a quantized file this much slower than its own float file is said to be
# (latency medians drift by about this much between runs on one machine)
SLOWER_MARGIN = 0.2
_REFERENCE_NAMES = {"tfidf_logistic_regression":
                    "TF-IDF (word 1-2-grams) + logistic regression"}


def teacher_accuracy(rows):
    """The teacher's float file's accuracy on the eval rows (its Keras
    model's when no float file was made)."""
    mine = [r for r in rows if r["candidate"] == TEACHER]
    float_row = next((r for r in mine if r["mode"] == "none" and r.get("validated")), None)
    if float_row is not None:
        return float_row["tflite_accuracy"]
    return next((r["keras_accuracy"] for r in mine if r.get("keras_accuracy") is not None),
                None)


def pareto(rows):
    """The validated rows no other validated row beats on both size and
    accuracy (smaller or equal and more accurate or equal, one of them strictly)."""
    valid = [r for r in rows if r.get("validated")]

    def beaten(r):
        return any(o["size_mb"] <= r["size_mb"] and o["tflite_accuracy"] >= r["tflite_accuracy"]
                   and (o["size_mb"], o["tflite_accuracy"]) != (r["size_mb"], r["tflite_accuracy"])
                   for o in valid)
    return [r for r in valid if not beaten(r)]


def loses_to_float(row, tolerance):
    """Whether a file failed validation or scores more than ``tolerance``
    below its own Keras (float) model on the eval rows."""
    if not row.get("validated"):
        return True
    keras_accuracy = row.get("keras_accuracy")
    return keras_accuracy is not None and \
        row["tflite_accuracy"] < keras_accuracy - tolerance - 1e-12


def recommend(rows, tolerance):
    """The smallest validated file whose accuracy is within ``tolerance`` of
    the teacher's float file, or None; baselines are never recommended, nor
    a file that loses more than ``tolerance`` against its own float model.

    Example:
    >>> rows = [{"candidate": "teacher", "mode": "none", "validated": True,
    ...          "size_mb": 40.0, "tflite_accuracy": 0.90},
    ...         {"candidate": "bert_tiny", "mode": "dynamic", "validated": True,
    ...          "size_mb": 4.0, "tflite_accuracy": 0.895},
    ...         {"candidate": "bert_tiny", "mode": "int8", "validated": True,
    ...          "size_mb": 3.9, "tflite_accuracy": 0.85}]
    >>> recommend(rows, 0.01)["mode"]
    'dynamic'
    """
    reference = teacher_accuracy(rows)
    if reference is None:
        return None
    # a baseline's file reads its own word ids, not the teacher's tokenizer's
    kept = [r for r in rows if r.get("validated") and not r.get("baseline") and
            not loses_to_float(r, tolerance) and
            r["tflite_accuracy"] >= reference - tolerance - 1e-12]
    return min(kept, key=lambda r: (r.get("size_bytes", r["size_mb"] * 1e6),
                                    -r["tflite_accuracy"]), default=None)


def write_table(rows, best, out_dir, cfg, references=None):
    """``shrink.md``, ``shrink.json`` and (with matplotlib) ``shrink.png``;
    ``references``: accuracies with no file (``{"tfidf_logistic_regression": 0.8}``)."""
    references = {k: v for k, v in (references or {}).items() if v is not None}
    front = {(r["candidate"], r["mode"]) for r in pareto(rows)}
    reference = teacher_accuracy(rows)
    for r in rows:
        r["pareto"] = (r["candidate"], r["mode"]) in front
        r["recommended"] = best is not None and (r["candidate"], r["mode"]) == \
            (best["candidate"], best["mode"])
    mark_slower_than_float(rows)
    write_json(os.path.join(out_dir, "shrink.json"),
               {"teacher_accuracy": reference, "tolerance": cfg.tolerance,
                "threads": cfg.threads, "rows": rows, "references": references,
                "recommended": best and os.path.join(out_dir, "recommended.tflite")})
    with atomic_write(os.path.join(out_dir, "shrink.md")) as f:
        f.write(markdown(rows, best, reference, cfg, references))
    picture(rows, os.path.join(out_dir, "shrink.png"))


def markdown(rows, best, reference, cfg, references=None):
    """The table as Markdown, smallest file first."""
    points = f"{100 * cfg.tolerance:g} point{'' if 100 * cfg.tolerance == 1 else 's'}"
    lines = [f"Teacher's float accuracy: {_pct(reference)}; recommended: the smallest file "
             f"within {points} of it. Latency: median at batch 1, "
             f"{cfg.threads} threads, this CPU.", "",
             "| candidate | mode | parameters | file MB | ms | accuracy | vs teacher | "
             "Pareto | |", "|---|---|---:|---:|---:|---:|---:|:-:|---|"]
    for r in sorted(rows, key=lambda r: (not r.get("validated"), r.get("size_mb") or 0)):
        if not r.get("validated"):
            lines.append(f"| {r['candidate']} | {r['mode']} | {r['params']:,} | | | "
                         f"{_pct(r.get('tflite_accuracy'))} | | | failed validation: "
                         f"{r['failure'][:120]} |")
            continue
        delta = 100 * (r["tflite_accuracy"] - reference) if reference is not None else None
        name = f"{r['candidate']} (baseline)" if r.get("baseline") else r["candidate"]
        lines.append(f"| {name} | {r['mode']} | {r['params']:,} | "
                     f"{r['size_mb']:.2f} | {r['median_ms']:.1f} | "
                     f"{_pct(r['tflite_accuracy'])} | "
                     f"{'' if delta is None else f'{delta:+.1f}'} | "
                     f"{'yes' if r['pareto'] else ''} | {_remark(r, cfg.tolerance)} |")
    for name, accuracy in (references or {}).items():
        lines += ["", f"{_REFERENCE_NAMES.get(name, name)} on the same rows: {_pct(accuracy)} "
                      "(no file)."]
    if any(r.get("baseline") for r in rows):
        lines += ["", "Baselines show what a transformer buys; they are never recommended "
                      "(their files read word ids of their own vocabulary)."]
    if best is None:
        lines += ["", "No file kept the teacher's accuracy within the tolerance: try larger "
                      "students, more epochs, unlabelled rows (--unlabeled) or a larger "
                      "--tolerance."]
    return "\n".join(lines) + "\n"


def mark_slower_than_float(rows, margin=SLOWER_MARGIN):
    """Sets ``slower_than_float_ms`` on each quantized row whose median
    latency is more than ``margin`` above its own float file's (the float
    file's median), so the table says so wherever a smaller file costs time.

    Example:
    >>> rows = [{"candidate": "t", "mode": "none", "validated": True, "median_ms": 1.5},
    ...         {"candidate": "t", "mode": "qat", "validated": True, "median_ms": 17.9}]
    >>> mark_slower_than_float(rows); rows[1]["slower_than_float_ms"]
    1.5
    """
    floats = {r["candidate"]: r["median_ms"] for r in rows
              if r.get("validated") and r["mode"] == "none"}
    for r in rows:
        base = floats.get(r["candidate"])
        if r.get("validated") and r["mode"] != "none" and base is not None and \
                r["median_ms"] > base * (1 + margin):
            r["slower_than_float_ms"] = base


def _remark(row, tolerance):
    said = ["**recommended**"] if row["recommended"] else []
    if loses_to_float(row, tolerance):
        said.append(f"{100 * (row['tflite_accuracy'] - row['keras_accuracy']):+.1f} against "
                    f"its float model")
    if "slower_than_float_ms" in row:
        said.append(f"slower than its float file ({row['median_ms']:.1f} against "
                    f"{row['slower_than_float_ms']:.1f} ms)")
    return "; ".join(said)


def _pct(x):
    return "" if x is None else f"{100 * x:.1f}%"
