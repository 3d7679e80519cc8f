"""``shrink.png``: accuracy against file size and against latency.

Candidates often score alike (a student and the teacher in two modes can sit
on one point), so no text is written at the points: each candidate has its
colour, each quantization mode its marker, and one legend below the panels
names them all; the recommended file is ringed and the Pareto front joined.
"""

# filled markers that stay apart at a glance; the modes take them in order
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "h", "p", "*")


def picture(rows, path):
    """Writes the picture of ``rows`` (the shrink table's) to ``path``.

    Args:
        rows: the table's rows (``candidate``, ``mode``, ``size_mb``,
            ``median_ms``, ``tflite_accuracy``, ``validated``, and the
            ``pareto`` and ``recommended`` flags the table sets).
        path: the ``.png`` to write.

    Returns:
        The legend's labels, or None without matplotlib (the picture is
        optional: the table says it all).

    Example:
    >>> picture([{"candidate": "teacher", "mode": "none", "validated": True,
    ...           "size_mb": 40.0, "median_ms": 9.0, "tflite_accuracy": 0.9}],
    ...         "shrink.png")  # doctest: +SKIP
    ['teacher', 'mode none', 'Pareto front (size)']
    """
    try:  # optional (the notebooks and research extras): the table says it all
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
        from matplotlib.lines import Line2D
    except ImportError:
        return None
    valid = [r for r in rows if r.get("validated")]
    colours = {name: f"C{i % 10}" for i, name in enumerate(_in_order(valid, "candidate"))}
    markers = {mode: _MARKERS[i % len(_MARKERS)]
               for i, mode in enumerate(_in_order(valid, "mode"))}
    figure, axes = plt.subplots(1, 2, figsize=(11, 5))
    for axis, key, label in ((axes[0], "size_mb", "file size (MB, log scale)"),
                             (axes[1], "median_ms", "median latency at batch 1 (ms, log scale)")):
        _panel(axis, valid, key, colours, markers, ticker)
        axis.set_xlabel(label)
        axis.set_ylabel("accuracy on the eval rows (%)")
    front = sorted((r for r in valid if r.get("pareto")), key=lambda r: r["size_mb"])
    axes[0].plot([r["size_mb"] for r in front], [100 * r["tflite_accuracy"] for r in front],
                 color="0.5", linestyle="--", linewidth=1, zorder=1)
    handles, labels = _legend(Line2D, colours, markers,
                              any(r.get("recommended") for r in valid))
    figure.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8,
                  frameon=False)
    figure.tight_layout(rect=(0, 0.06 + 0.04 * (len(labels) // 6), 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return labels


def _in_order(rows, key):
    """The distinct values of ``key``, in the rows' order."""
    return list(dict.fromkeys(r[key] for r in rows))


def _panel(axis, rows, key, colours, markers, ticker):
    for r in rows:
        x, y = r[key], 100 * r["tflite_accuracy"]
        axis.scatter(x, y, color=colours[r["candidate"]], marker=markers[r["mode"]], s=45,
                     alpha=0.85, edgecolors="white", linewidths=0.5, zorder=3)
        if r.get("recommended"):
            axis.scatter(x, y, s=260, facecolors="none", edgecolors="black", linewidths=1.5,
                         zorder=4)
    axis.set_xscale("log")
    # ticks at 1, 2 and 5 of each decade, labelled as plain numbers (the log
    # axis' own labels are powers of ten, or every minor tick)
    axis.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
    axis.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    axis.xaxis.set_minor_formatter(ticker.NullFormatter())
    axis.grid(True, which="major", color="0.9", zorder=0)


def _legend(Line2D, colours, markers, recommended):  # noqa: N803 (matplotlib's class)
    """One entry per candidate (its colour), per mode (its marker), the
    ring of the recommended file and the front's line."""
    handles = [Line2D([], [], linestyle="", marker="o", color=colour, label=name)
               for name, colour in colours.items()]
    handles += [Line2D([], [], linestyle="", marker=marker, color="0.35", label=f"mode {mode}")
                for mode, marker in markers.items()]
    if recommended:
        handles.append(Line2D([], [], linestyle="", marker="o", markersize=13,
                              markerfacecolor="none", markeredgecolor="black",
                              label="recommended"))
    handles.append(Line2D([], [], color="0.5", linestyle="--", label="Pareto front (size)"))
    return handles, [h.get_label() for h in handles]
