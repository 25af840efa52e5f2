"""Every figure of the report can be read: the readability check
(deplbench.reports.readability) finds planted faults (its check on the
synthetic store's full report is in test_reports.py, on the demo sweep's
real rows in test_demo_report.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from deplbench.reports import figures as figs
from deplbench.reports.readability import MAX_SERIES, figure_problems, tag
from deplbench.reports.styles import SeriesInfo


def _styles(**colours) -> dict[str, SeriesInfo]:
    return {n: SeriesInfo(n, n, n, False, c, "o", "-") for n, c in colours.items()}


def _panel():
    fig = Figure(figsize=(4, 3), layout="constrained")
    return fig, fig.subplots()


def test_a_clean_figure_has_no_problem():
    fig, ax = _panel()
    tag(ax.plot([1, 2], [1, 2], color="#1f77b4"), "milp")
    tag(ax.plot([1, 2], [2, 1], color="#2ca02c"), "depl")
    ax.set_ylabel("cost [units]")
    assert figure_problems(fig, _styles(milp="#1f77b4", depl="#2ca02c")) == []


def test_planted_clipped_label_is_found():
    fig = Figure(figsize=(4, 3))          # no layout engine: nothing makes room
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.plot([1, 2], [1, 2])
    ax.set_ylabel("a label that has no room left of the axes")
    got = figure_problems(fig)
    assert any("clipped" in p and "no room" in p for p in got), got


def test_planted_two_algorithms_in_one_colour_are_found():
    fig, ax = _panel()
    tag(ax.plot([1, 2], [1, 2], color="#2ca02c"), "depl")
    tag(ax.plot([1, 2], [2, 1], color="#2ca02c"), "best-exp")
    got = figure_problems(fig)
    assert any("depl and best-exp are drawn in one colour" in p for p in got), got


def test_palette_colour_and_series_per_panel_and_empty_panel():
    fig = Figure(figsize=(8, 3), layout="constrained")
    ax, empty = fig.subplots(1, 2)
    names = [f"a{i}" for i in range(MAX_SERIES + 1)]
    colours = [f"#{i:02x}3050" for i in range(0, 14 * len(names), 14)]
    for n, c in zip(names, colours):
        tag(ax.plot([1, 2], [1, 2], color=c), n)
    styles = _styles(**dict(zip(names, colours)))
    styles["a0"] = SeriesInfo("a0", "a0", "a0", False, "#ff0000", "o", "-")
    got = figure_problems(fig, styles)
    assert any(f"draws {MAX_SERIES + 1} algorithms" in p for p in got), got
    assert any("a0 is drawn in #003050, not its palette colour #ff0000" in p for p in got), got
    assert any("panel 2 is empty" in p for p in got), got
    # a variant (a shade of the series' colour) is not held to the palette
    fig, ax = _panel()
    tag(ax.plot([1, 2], [1, 2], color="#2ca02c"), "depl")
    tag(ax.plot([1, 2], [2, 1], color="#185818"), "depl", variant=True)
    assert figure_problems(fig, _styles(depl="#2ca02c")) == []


def test_chunks_are_even_and_never_over_the_limit():
    for n in range(0, 30):
        parts = figs.chunks([str(i) for i in range(n)])
        assert sum(len(p) for p in parts) == n
        assert all(0 < len(p) <= MAX_SERIES for p in parts)
        if parts:
            assert max(map(len, parts)) - min(map(len, parts)) <= 1


def test_trajectories_are_small_multiples_per_algorithm():
    styles = _styles(milp="#1f77b4", depl="#2ca02c", pact="#9467bd")
    rows = []
    for alg in styles:
        for lm in (5.0, 9.0):
            mean = np.linspace(20, lm - 0.5, 30)
            rows.append({"algorithm": alg, "loss_max": lm, "evaluation_d": {
                "mean": mean.tolist(), "p01": (mean - 1).tolist(), "p99": (mean + 1).tolist()}})
    fig = figs.trajectories(pd.DataFrame(rows), [5.0, 9.0], styles, scale=0.6)
    drawn = [ax for ax in fig.axes if ax.axison]
    assert [ax.get_title() for ax in drawn] == ["depl", "milp", "pact"]  # listing order
    # each panel: one line and one quantile band per target
    assert all(len(ax.collections) == 2 for ax in drawn)
    assert figure_problems(fig, styles) == []


def test_a_target_without_a_plan_is_said_on_the_bars():
    rows = [{"paper_set": "s", "algorithm": a, "loss_max": lm, "model": m, "instances": 1,
             "value": 1.0}
            for a, lms in (("milp", (5.0, 9.0)), ("depl", (9.0,))) for lm in lms for m in ("L", "S")]
    fig = figs.per_model(pd.DataFrame(rows), "s", "mean cost [cost units]",
                         _styles(milp="#1f77b4", depl="#2ca02c"))
    said = {ax.get_title(): [t.get_text() for t in ax.texts] for ax in fig.axes if ax.axison}
    assert said == {"depl": ["no plan"], "milp": []}
    assert figure_problems(fig) == []


def test_a_report_build_leaves_matplotlib_settings_as_they_were(tmp_path):
    """The report draws its labels as plain text through ``text.parse_math`` for the build only:
    the user's setting is back afterwards, after a build that ends in an error too."""
    import matplotlib as mpl
    import pytest

    from deplbench.reports.build import ReportError, ReportOptions, build_report
    from tests.reports.test_reports import make_frame

    assert mpl.rcParams["text.parse_math"] is True
    build_report(make_frame().head(6), tmp_path / "a", options=ReportOptions(formats=("png",), scale=0.4,
                                                                              dpi=40, progress=False))
    assert mpl.rcParams["text.parse_math"] is True
    (tmp_path / "file").write_text("x")
    with pytest.raises(ReportError):
        build_report(make_frame().head(6), tmp_path / "file", options=ReportOptions(progress=False))
    assert mpl.rcParams["text.parse_math"] is True
