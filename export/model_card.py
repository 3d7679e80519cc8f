"""The model card written beside every export (``MODEL.md``).

In the style of Hugging Face model cards: YAML front matter, then what the
model does, its labels and tokenizer, where it came from, how it was
validated, its size and latency, and how to run it. Made from the sidecar
alone, so it says nothing the sidecar does not, and names no path of the
exporting machine.
"""

from albert_keras.cpu import cpu_name
from albert_keras.export.app_runtime import MEDIAPIPE_TASKS


def _front_matter(sidecar, kind):
    tags = ["albert-keras", "tflite", f"quantize-{sidecar['quantize']}"]
    if sidecar.get("metadata"):
        tags.append("mediapipe")
    base = [f"base_model: {sidecar['base_model']}"] if sidecar.get("base_model") else []
    return "\n".join(["---", "library_name: litert", f"pipeline_tag: {kind.pipeline_tag}",
                      *base, "tags:", *[f"- {t}" for t in tags], "---", ""])


def _validation(report):
    lines = [f"- validated on {report['examples']} examples ({report.get('data')}) against the "
             f"Keras model: {'passed' if report.get('passed') else 'failed'}"]
    for name, entry in report.get("outputs", {}).items():
        shown = {k: entry[k] for k in ("max_abs_diff", "top1_agreement", "mean_cosine",
                                       "mean_probability_diff") if k in entry}
        lines.append(f"- `{name}`: " + ", ".join(f"{k} {v:.4g}" for k, v in shown.items()))
    for key in ("keras_accuracy", "tflite_accuracy"):
        if key in report:
            lines.append(f"- {key.replace('_', ' ')}: {report[key]:.4f}")
    mediapipe = report.get("mediapipe")
    if mediapipe:
        if mediapipe.get("ran"):
            shown = {k: v for k, v in mediapipe.items() if isinstance(v, float)}
            lines.append("- run in MediaPipe Tasks (its own tokenizer) on the same texts, "
                         "against LiteRT on the model's own ids: "
                         + ", ".join(f"{k} {v:.4g}" for k, v in shown.items()))
        else:
            lines.append(f"- not run in MediaPipe: {mediapipe.get('why')}")
    return "\n".join(lines)


def _how_to_run(sidecar, file_name, kind):
    if sidecar.get("metadata") and kind.app_task in MEDIAPIPE_TASKS:
        module = kind.app_task
        task, call = MEDIAPIPE_TASKS[module]
        return (f"MediaPipe Tasks ({task}; the same on Android, iOS and the web):\n\n"
                "```python\nfrom mediapipe.tasks.python.core.base_options import BaseOptions\n"
                f"from mediapipe.tasks.python.text import {module}\n\n"
                f"task = {module}.{task}.create_from_options({module}.{task}Options(\n"
                f"    base_options=BaseOptions(model_asset_path=\"{file_name}\")))\n"
                f"print(task.{call}(\"your text\"))\n```\n")
    feeds = ", ".join(f"`{n}`" for n in sidecar["inputs"])
    return (f"LiteRT, with inputs {feeds} and outputs "
            f"{', '.join(f'`{n}`' for n in sidecar['outputs'])}:\n\n"
            "```python\nfrom albert_keras.export.runtime import TFLiteRunner\n\n"
            f"runner = TFLiteRunner(\"{file_name}\")\n```\n")


def model_card(sidecar, file_name, kind):
    """The Markdown model card of an export described by ``sidecar``.

    Args:
        sidecar: the export's sidecar dict.
        file_name: the ``.tflite`` file's name.
        kind: the model's ``ExportKind``.

    Example:
    >>> card = model_card(sidecar, "century.tflite", model.export_kind)  # doctest: +SKIP
    """
    report = sidecar["validation"]
    labels = ", ".join(f"`{label}`" for label in sidecar.get("labels") or []) or "none"
    latency = report.get("median_ms")
    parts = [
        _front_matter(sidecar, kind),
        f"# {sidecar['source']} ({sidecar['kind']}, {sidecar['quantize']})", "",
        f"A {sidecar['kind']} of the {sidecar.get('family', 'albert')} family, exported to "
        "TFLite by albert-keras from "
        f"`{sidecar['source']}`"
        + (f", fine-tuned from `{sidecar['base_model']}`." if sidecar.get("base_model")
           else "."), "",
        "## Model", "",
        f"- task: {sidecar.get('task') or sidecar['kind']}",
        f"- labels: {labels}",
        f"- tokenizer: {sidecar.get('tokenizer') or 'none given'}; special ids "
        f"{sidecar['special_ids']}",
        f"- inputs: {', '.join(sidecar['inputs'])}; sequence length "
        f"{sidecar['sequence_length']}; truncation {sidecar['truncate']}",
        f"- outputs: {', '.join(sidecar['outputs'])}",
        f"- app-runtime metadata: {'yes' if sidecar.get('metadata') else 'no'}", "",
        "## Validation", "", _validation(report), "",
        "## Size and latency", "",
        f"- {sidecar['size_bytes'] / 1e6:.2f} MB",
        (f"- about {latency:.2g} ms per example in LiteRT on a {cpu_name()} (2 threads; "
         "`albert-keras bench` measures it properly)") if latency else "- latency not measured",
        "", "## How to run it", "", _how_to_run(sidecar, file_name, kind),
    ]
    return "\n".join(parts)
