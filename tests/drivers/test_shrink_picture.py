"""``shrink.png``: readable where candidates score alike (the century run's
teacher and bert_tiny modes sat on one another, each labelled at its point):
a colour per candidate, a marker per mode, one legend, the recommended file
ringed, no text at the points."""

import matplotlib.pyplot as plt
import pytest
from PIL import Image

from albert_keras.drivers.shrink_picture import picture


def _rows():
    """The teacher and a student in four modes each, at nearly the same
    accuracy and size (what made the labels overlap), and a baseline."""
    rows = []
    for candidate, size, ms in (("teacher", 40.0, 9.0), ("bert_tiny", 4.4, 1.1),
                                ("bert_mini", 11.0, 2.5), ("avg_embedding", 0.4, 0.1)):
        for i, mode in enumerate(("none", "float16", "dynamic", "int8")):
            rows.append({"candidate": candidate, "mode": mode, "validated": True,
                         "size_mb": size / (1 + i), "median_ms": ms / (1 + 0.3 * i),
                         "tflite_accuracy": 0.851 - 0.0005 * i, "pareto": i == 3,
                         "recommended": (candidate, mode) == ("bert_tiny", "dynamic")})
    rows.append({"candidate": "bert_small", "mode": "int8", "validated": False,
                 "failure": "top-1 agreement 0.6"})
    return rows


def test_the_legend_names_every_candidate_and_mode_and_no_point_is_labelled(tmp_path,
                                                                           monkeypatch):
    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # keep the figure to read it
    path = tmp_path / "shrink.png"
    labels = picture(_rows(), str(path))
    assert Image.open(path).size[0] > 1000  # written, at a size that can be read
    assert labels == ["teacher", "bert_tiny", "bert_mini", "avg_embedding", "mode none",
                      "mode float16", "mode dynamic", "mode int8", "recommended",
                      "Pareto front (size)"]
    (figure,) = figures
    (legend,) = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == labels
    for axis in figure.axes:
        assert len(axis.texts) == 0  # no text at the points, which overlapped
        assert "(MB" in axis.get_xlabel() or "(ms" in axis.get_xlabel()
        assert axis.get_ylabel() == "accuracy on the eval rows (%)"
    # one colour per candidate, one marker per mode, over both panels
    points = [c for c in figure.axes[0].collections if len(c.get_offsets()) == 1]
    colours = {tuple(c.get_facecolor()[0]) for c in points if c.get_facecolor().size}
    assert len(colours) == 4


@pytest.mark.parametrize("rows", [[], [{"candidate": "teacher", "mode": "none",
                                        "validated": False, "failure": "x"}]])
def test_a_run_with_nothing_validated_still_writes_a_picture(tmp_path, rows):
    assert picture(rows, str(tmp_path / "p.png")) == ["Pareto front (size)"]
    assert (tmp_path / "p.png").is_file()


def test_the_table_says_where_a_quantized_file_is_slower_than_its_float_one():
    """A QAT file once ran 12x slower than the float one (17.9 against
    1.5 ms) with nothing said; the table says so now, recommended or not."""
    from albert_keras.drivers.shrink_config import ShrinkConfig
    from albert_keras.drivers.shrink_table import mark_slower_than_float
    from albert_keras.drivers.shrink_table import markdown

    rows = [{"candidate": "teacher", "mode": mode, "validated": True, "params": 10,
             "size_mb": size, "median_ms": ms, "tflite_accuracy": 0.85,
             "keras_accuracy": 0.85, "pareto": True, "recommended": mode == "qat"}
            for mode, size, ms in (("none", 40.0, 1.5), ("dynamic", 11.0, 1.6),
                                   ("qat", 10.0, 17.9))]
    mark_slower_than_float(rows)
    assert ["slower_than_float_ms" in r for r in rows] == [False, False, True]  # 1.6: noise
    table = markdown(rows, rows[2], 0.85, ShrinkConfig())
    assert "| **recommended**; slower than its float file (17.9 against 1.5 ms) |" in table
    assert table.count("slower than") == 1
