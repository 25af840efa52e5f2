"""The report of the demo sweep's real rows (tests/demo_store.py), built once
for this module: every figure readable, the glance box on the first screen,
and the page on a phone (headless Chromium; where `make demo` wrote
reports/demo, that report is checked in the browser too)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from deplbench.reports.build import ReportOptions, build_report
from tests.demo_store import unpack
from tests.reports.test_report_glance import _check_first_screen, _need_chromium, browser_boxes


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The committed store's report at the report's own options (PNG figures):
    what CI's fresh clone checks, built once for the figure and browser checks."""
    out = tmp_path_factory.mktemp("demo")
    summary = build_report(unpack(out), out / "report", options=ReportOptions(formats=("png",)))
    assert summary.errors == []
    return out / "report", summary


@pytest.fixture(scope="module", params=["fixture", "make-demo"])
def demo_report(request):
    """The committed store's report, and the one `make demo` wrote to
    reports/demo when it exists (checked for Chromium first: without it,
    nothing is built)."""
    _need_chromium()
    if request.param == "make-demo":
        made = Path(__file__).resolve().parents[2] / "reports" / "demo"
        if not (made / "index.html").is_file():
            pytest.skip("no demo report at reports/demo (make demo writes it); the "
                        "committed demo store is checked instead")
        return made
    return request.getfixturevalue("demo")[0]


@pytest.mark.slow
def test_every_figure_of_the_demo_report_is_readable(demo):
    """Drawn at the report's own scale: no text clipped, one colour per
    algorithm (its palette colour), at most six algorithms per panel, no
    empty panel; Fig. 9 per algorithm; every empty table said in one line."""
    out, summary = demo
    assert summary.figure_problems == []
    assert {"fig9_trajectories_alexnet", "anytime_gap", "complexity_work_eta",
            "complexity_knapsack"} <= set(summary.figures)
    text = (out / "index.html").read_text(encoding="utf-8")
    assert "This table is empty" not in text
    for name in ("milp_time_limit", "solver_comparison", "price_of_adaptivity"):
        if pd.read_csv(out / "tables" / f"{name}.csv").empty:
            assert f'<p class="omitted" id="table-{name}">' in text, name


@pytest.mark.system_packages
@pytest.mark.slow
def test_demo_report_glance_on_the_first_screen(demo_report):
    """The glance check of test_report_glance.py on the demo sweep's report."""
    _check_first_screen(demo_report / "index.html", demo_report / "tables")
    legend = browser_boxes(demo_report / "index.html", "#glance-legend", 1440, 900)
    assert legend and legend[0]["bottom"] <= 900


@pytest.mark.system_packages
@pytest.mark.slow
def test_demo_report_on_a_phone(demo_report):
    """At 390 px the claims audit stacks (each row's verdict first, inside
    the screen), a figure is no wider than the screen and links to itself
    at full size, and nothing scrolls sideways."""
    from deplbench.reports import browser

    index = demo_report / "index.html"
    boxes = browser_boxes(index, "#table-claims_audit td, figure a.full > img", 390, 844)
    cells = [b for b in boxes if b["tag"] == "td"]
    verdicts = [b for b in cells if "c-verdict" in b["cls"].split()]
    claim_cells = [b for b in cells if "c-claim" in b["cls"].split()]
    claims = len(pd.read_csv(demo_report / "tables" / "claims_audit.csv"))
    assert len(verdicts) == len(claim_cells) == claims > 0
    for b in cells:
        assert 0 <= b["left"] and b["right"] <= 390, b
    # stacked: each row's verdict is its first line, above its claim
    for v, c in zip(verdicts, claim_cells):
        assert v["row"] == c["row"] and v["bottom"] <= c["top"] + 1, (v, c)
    figs = [b for b in boxes if b["tag"] == "img"]
    assert figs, "no figure in the demo report"
    for b in figs:
        assert 0 <= b["left"] and b["right"] <= 390, b
    html_text = index.read_text(encoding="utf-8")
    first = re.search(r'<a class="full" href="(figures/[^"]+\.png)"[^>]*><img src="\1"', html_text)
    assert first and (demo_report / first.group(1)).is_file()
    scroll, viewport = browser.page_width(index, 390)
    assert viewport == 390 and scroll <= 390
