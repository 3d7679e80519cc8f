"""The table of docs/reports/index.md, made from the results files.

    python docs/reports/code/summary_table.py

Every number is read from a results file under docs/reports/results, so the
summary cannot drift from the runs it summarizes (a test compares them).
"""

import json
import os

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")
# (label, results file): fine-tuned accuracy per objective, 1,000 training rows
BUDGETS = (
    ("1x (800 steps, 3 epochs, 3 seeds)", "objectives_two_phase.json"),
    ("3x, 2 shared layers (10 epochs, epoch chosen on validation rows)",
     "objectives_3x_2_layers.json"),
    ("6x, 2 shared layers (as 3x)", "objectives_6x_2_layers.json"),
)
ARMS = ("mlm", "mlm_sop", "rtd", "from_scratch")
TASKS = (("sotu_century", "century"), ("sotu_party", "party"))


def _cell(summary, arm):
    if arm not in summary:
        return "-"
    return f"{summary[arm]['mean']:.3f} ± {summary[arm]['std']:.3f}"


def summary_table():
    """The Markdown table: one row per budget and task, mean ± std over seeds."""
    lines = ["| budget | task | " + " | ".join(f"`{a}`" if a != "from_scratch" else "from scratch"
                                               for a in ARMS) + " | TF-IDF | majority |",
             "|---|---|" + "---:|" * (len(ARMS) + 2)]
    for label, name in BUDGETS:
        with open(os.path.join(RESULTS, name), encoding="utf-8") as f:
            results = json.load(f)
        for key, task in TASKS:
            summary, base = results["summary"][key], results["baselines"][key]
            cells = [_cell(summary, arm) for arm in ARMS]
            lines.append(f"| {label} ([results](results/{name})) | {task} | "
                         + " | ".join(cells)
                         + f" | {base['tfidf_logreg']:.3f} | {base['majority_class']:.3f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(summary_table(), end="")
