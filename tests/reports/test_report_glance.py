"""The report's first screen: every plan against the proven reference of its
instance (exact optimum, certified bracket, adaptive optimum), feasibility
proven before estimated, claims whole and coloured, readable on a phone.

Task records are synthetic (the columns of the task record) so that each
number the glance box shows is known in advance."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest

from deplbench.reports import reference as ref_mod
from deplbench.reports.build import build_report
from deplbench.reports.data import STORE_COLUMNS, prepare
from deplbench.reports.headline import claims_glance, first_clause, headline_table
from deplbench.reports.styles import series_info
from tests.reports.test_reports import SMALL, _row, make_frame

OPT = 100.0


def _plan(alg: str, key: str, cost: float, task_key: str | None = None, **kw) -> dict:
    common = dict(sweep="s", family="realistic", instance_set="alexnet",
                  instance_name=key, instance_seed=0, instance_sha=key, loss_max=9.0,
                  omega=0.99, n_models=3, horizon=50, plan={"epochs": []})
    common.update(kw)
    return _row(key=task_key or f"{key}-{alg}-{cost}", algorithm=alg, cost=cost, **common)


def _frame() -> pd.DataFrame:
    """Instance a: an exact optimum (UB = LB = 100) and an SAA optimum 95
    whose plan misses ℓmax; instance b: only a certified bracket [96, 104];
    instance c (PACT set): an adaptive optimum [80, 84] and a policy."""
    rows = [
        _plan("milp-exact", "a", OPT, reference="exact-static", status="optimal",
              lower_bound=OPT, exact=True),
        _plan("milp", "a", 95.0, reference="saa", status="optimal", exact=True,
              params={"scenarios": 50}, quantile_oos=9.5,
              evaluation={"exact_verdict": "proven infeasible"}),
        _plan("depl", "a", 110.0, status="feasible", quantile_oos=8.0,
              evaluation={"exact_verdict": "proven feasible"}),
        # the same instance solved twice by one series: one instance, not two
        _plan("depl", "a", 110.0, status="feasible", quantile_oos=8.0, params={"eta": 50},
              evaluation={"exact_verdict": "proven feasible"}),
        _plan("milp-certified", "b", 104.0, reference="certified-static", status="feasible",
              lower_bound=96.0, certified_verdict="certified feasible",
              diagnostics={"bracket": {"confidence": 0.95,
                                       "upper_bound": {"value": 104.0}}}),
        _plan("depl", "b", 106.0, status="feasible", quantile_oos=8.5,
              certified_verdict="certified feasible"),
        _plan("best-exp", "b", 100.0, status="feasible", quantile_oos=8.9),
        _plan("adaptive-opt", "c", 84.0, reference="adaptive", status="feasible",
              lower_bound=80.0, instance_set="pact-vgg11"),
        _plan("pact", "c", 120.0, status="feasible", instance_set="pact-vgg11",
              cl_mode="policy", cl_cost_mean=88.2, cl_p_success=0.995,
              cl_p_success_low=0.991, quantile_oos=8.0),
    ]
    return pd.DataFrame(rows, columns=list(STORE_COLUMNS))


@pytest.fixture(scope="module")
def glance():
    df = prepare(_frame()).df
    plans = ref_mod.plan_ratios(df)
    return df, plans, headline_table(plans, series_info(df)).set_index(["set", "algorithm"])


def test_references_read_from_the_records(glance):
    df, _, _ = glance
    refs = ref_mod.references(df).set_index(["instance_key", "kind"])
    assert refs.loc[("a", "exact-static"), ["ub", "lb"]].tolist() == [OPT, OPT]
    assert refs.loc[("a", "saa"), "ub"] == 95.0
    assert refs.loc[("b", "certified-static"), ["ub", "lb"]].tolist() == [104.0, 96.0]
    assert refs.loc[("c", "adaptive"), ["ub", "lb"]].tolist() == [84.0, 80.0]


def test_exact_reference_first_and_saa_ratio_kept(glance):
    _, plans, head = glance
    depl_a = plans[(plans["algorithm"] == "depl") & (plans["instance_key"] == "a")]
    assert (depl_a["reference"] == "exact-static").all()
    assert depl_a["ratio_ub"].tolist() == pytest.approx([1.1, 1.1])
    assert depl_a["ratio_saa"].tolist() == pytest.approx([110 / 95] * 2)
    # the SAA optimum's plan: below the exact optimum, flagged, and proven infeasible
    milp = head.loc[("alexnet", "milp")]
    assert milp["ratio_ref_median"] == pytest.approx(0.95)
    assert milp["below_ub"] == 1 and "⚑ 1 below opt." in milp["vs_reference"]
    assert milp["missed"] == 1 and milp["verdict"].startswith("misses ℓmax")
    assert milp["ratio_saa_median"] == pytest.approx(1.0)


def test_bracket_ratio_is_a_range_and_cheaper_plans_are_not_called_infeasible(glance):
    _, plans, head = glance
    b = plans[plans["instance_key"] == "b"].set_index("algorithm")
    assert b.loc["depl", "reference"] == "certified-static"
    assert b.loc["depl", ["ratio_ub", "ratio_lb"]].tolist() == pytest.approx([106 / 104, 106 / 96])
    # best-exp below UB but above LB: cheaper than the best certified plan,
    # which proves nothing about its feasibility; only its own verdict does
    assert b.loc["best-exp", "ratio_ub"] < 1 < b.loc["best-exp", "ratio_lb"]
    best = head.loc[("alexnet", "best-exp")]
    assert "below UB" in best["vs_reference"] and "below LB" not in best["vs_reference"]
    assert best["verdict"].startswith("unproven")


def test_one_observation_per_instance(glance):
    _, _, head = glance
    depl = head.loc[("alexnet", "depl")]
    assert depl["plans"] == 3 and depl["instances"] == 2
    # the exact reference covers instance a only; b is bracketed
    assert depl["reference"] in ("exact-static", "certified-static")
    assert depl["proven_feasible"] == 2 and depl["certified_feasible"] == 1
    assert depl["verdict"] == "feasible 3/3"


def test_policy_against_the_adaptive_optimum(glance):
    _, plans, head = glance
    p = plans[plans["algorithm"] == "pact"].iloc[0]
    assert p["policy"] and p["reference"] == "adaptive"
    assert p["ratio_ub"] == pytest.approx(88.2 / 84) and p["ratio_lb"] == pytest.approx(88.2 / 80)
    row = head.loc[("pact-vgg11", "pact")]
    assert "(adaptive)" in row["vs_reference"] and row["verdict"] == "feasible 1/1"


def test_claim_lines_are_never_cut():
    text = ("violated on 1 of 36 instances (48 violated triples in total out of 48 "
            "checked; on 35 instance(s) nothing could be checked); sampled on 2")
    assert first_clause(text) == text[:text.index("; sampled")]
    assert first_clause(text).count("(") == first_clause(text).count(")")
    long = "x" * 400 + " (-1.0 " + "y" * 50 + ")"
    assert first_clause(long) == long  # no character limit, no "…"
    claims = pd.DataFrame({"claim": ["c"], "verdict": ["holds"], "measured": [text]})
    assert claims_glance(claims)["measured"].iloc[0].endswith("checked)")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("glance")
    frame = pd.concat([make_frame(bracket=True), _frame()], ignore_index=True)
    summary = build_report(frame, out, options=SMALL)
    assert summary.errors == []
    return out


@pytest.mark.slow
def test_glance_box_html_has_every_card_and_coloured_verdicts(report):
    text = html.unescape((report / "index.html").read_text(encoding="utf-8"))
    box = text[text.index('class="headline"'):text.index("<nav>")]
    for name in ("alexnet", "mobilenet", "pact_vgg11", "claims"):
        assert f'id="card-glance_{name}"' in box
    assert 'class="c-verdict v-fails"' in box and 'class="c-verdict v-holds"' in box
    assert "cost / reference" in box and "SAA ratio" in box
    assert box.index("At a glance") < text.index('class="meta"')


GLANCE_CELLS = '.headline td[data-col="vs_reference"], .headline td[data-col="verdict"]'


def _check_first_screen(index, tables) -> None:
    """At 1440×900 and 390×844 every glance row's ratio and verdict cells lie
    inside the viewport's width, and on desktop inside the first screen."""
    from deplbench.reports import browser

    rows = sum(len(pd.read_csv(p)) for p in tables.glob("glance_*.csv"))
    claims = len(pd.read_csv(tables / "glance_claims.csv"))
    for width, height, desktop in ((1440, 900, True), (390, 844, False)):
        got = browser.element_boxes(index, GLANCE_CELLS, width, height)
        assert got["w"] == width
        boxes = got["boxes"]
        assert len([b for b in boxes if b["col"] == "verdict"]) == rows
        assert len([b for b in boxes if b["col"] == "vs_reference"]) == rows - claims
        for b in boxes:
            assert 0 <= b["left"] and b["right"] <= width, (width, b)
            if desktop:
                assert b["bottom"] <= height, (width, b)
        scroll, _ = browser.page_width(index, width)
        assert scroll <= width


def _need_chromium():
    from deplbench.reports import browser

    if browser.find_chromium() is None:
        pytest.skip("no Chromium binary on PATH (Debian: apt-get install "
                    "chromium-headless-shell)")


@pytest.mark.system_packages
@pytest.mark.slow
def test_glance_cells_on_the_first_screen(report):
    """Headless Chromium, a report of three paper sets (synthetic records)."""
    _need_chromium()
    _check_first_screen(report / "index.html", report / "tables")


def browser_boxes(index, selector, width, height):
    from deplbench.reports import browser

    got = browser.element_boxes(index, selector, width, height)
    assert got["w"] == width
    return got["boxes"]


def test_reference_column_in_the_record():
    from deplbench.benchmarks.lookup import solver_info

    assert "reference" in STORE_COLUMNS
    assert solver_info("milp")["reference"] == "saa"
    assert solver_info("depl")["reference"] == ""
    json.dumps(solver_info("milp"))


# --------------------------------------------------------------------------
# figures


def _sets_frame() -> pd.DataFrame:
    """Three paper sets of one family: AlexNet runs the MILP at S = 1000 and
    PACT at loss_resolution 0 on four instances; PACT's VGG11 set runs them
    at S = 50 and loss_resolution 1000 on two (the quick sweep's layout)."""
    rows = []
    for ps, n, s_milp, res in (("alexnet", 4, 1000, 0), ("pact-vgg11", 2, 50, 1000)):
        for i in range(n):
            for lm in (5.0, 9.0):
                key = f"{ps}-{i}-{lm}"
                kw = dict(instance_set=ps, loss_max=lm, quantile_oos=lm * 0.9)
                rows.append(_plan("milp", key, 100.0, status="optimal", exact=True,
                                  reference="saa", params={"scenarios": s_milp}, **kw))
                rows.append(_plan("pact", key, 130.0, status="feasible",
                                  params={"loss_resolution": res}, **kw))
                rows.append(_plan("depl", key, 110.0, status="feasible",
                                  params={"eta": 200}, **kw))
                rows.append(_plan("depl", key, 112.0, status="feasible", label="depl-eta",
                                  params={"eta": 50}, **kw))
    return pd.DataFrame(rows, columns=list(STORE_COLUMNS))


@pytest.mark.slow
def test_every_figure_lists_every_algorithm_of_its_set(tmp_path):
    """The PACT Fig. 6 regression: the reference configuration is chosen per
    paper set, so the VGG rows (other S, other loss resolution) are drawn."""
    from deplbench.reports import figures as figs
    from deplbench.reports import tables as tabs
    from deplbench.reports.stats import with_ratios

    df = prepare(_sets_frame()).df
    ratios = with_ratios(df)
    cvt = tabs.cost_vs_target(ratios)
    styles = series_info(df)
    for ps in ("alexnet", "pact-vgg11"):
        ran = set(df.loc[(df["paper_set"] == ps) & df["has_plan"], "algorithm"])
        assert set(cvt.loc[cvt["paper_set"] == ps, "algorithm"]) == ran, ps
        fig = figs.cost_vs_target(cvt, ps, styles)
        labels = {t.get_text().split(" (")[0] for leg in fig.legends for t in leg.get_texts()}
        assert labels == ran, ps
    # the ratio panel divides by the instance's own reference
    milp = cvt[(cvt["algorithm"] == "depl")]
    assert milp["ratio_ref_mean"].to_numpy() == pytest.approx(1.1)
    assert set(milp["reference_kind"]) == {"saa"}
    summary = build_report(_sets_frame(), tmp_path, options=SMALL)
    assert summary.errors == [] and "cost_vs_target_pact_vgg11" in summary.figures
    csv = pd.read_csv(tmp_path / "tables" / "fig5_cost_vs_target.csv")
    assert set(csv.loc[csv["paper_set"] == "pact-vgg11", "algorithm"]) == {
        "milp", "pact", "depl", "depl-eta"}


def test_series_of_one_family_get_distinct_colours():
    rows = [_plan(a, "k", 100.0, label=lbl, status="feasible",
                  style={"colour": c, "marker": "o", "linestyle": "-"})
            for a, lbl, c in (("milp", "milp", "#1f77b4"),
                              ("milp-certified", "milp-certified", "#1f77b4"),
                              ("milp-exact", "milp-exact", "#1f77b4"),
                              ("depl", "depl", "#2ca02c"), ("depl", "depl-eta", "#2ca02c"),
                              ("depl", "depl-calibrated", "#2ca02c"),
                              ("depl-proven", "depl-proven", "#2ca02c"),
                              ("adaptive-opt", "adaptive-opt", "#1f77b4"))]
    styles = series_info(prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df)
    names = ["milp", "milp-certified", "milp-exact", "depl", "depl-eta", "depl-calibrated",
             "depl-proven", "adaptive-opt"]
    colours = [styles[n].colour.lower() for n in names]
    assert len(set(colours)) == len(colours), colours
    # the solver's own series keeps its declared colour
    assert styles["milp"].colour.lower() == "#1f77b4"
    assert styles["depl"].colour.lower() == "#2ca02c"


@pytest.mark.slow
def test_legends_readable_at_1440_px():
    """Every legend's font is ≥ 9 px when the figure is shown on a 1440 px
    screen (the page is at most 1400 px wide; a wider figure is shrunk)."""
    from deplbench.reports import figures as figs
    from deplbench.reports import tables as tabs
    from deplbench.reports.stats import with_ratios

    df = prepare(make_frame(work=True, plugin=True, bracket=True)).df
    ratios = with_ratios(df)
    styles = series_info(df)
    cvt = tabs.cost_vs_target(ratios)
    drawn = [figs.cost_vs_target(cvt, "alexnet", styles),
             figs.profiles(tabs.profile_matrices(df), styles),
             figs.ratio_vs(tabs.ratio_vs(ratios), "eta", styles),
             figs.eta_effect(tabs.eta_effect(ratios), "alexnet", styles),
             figs.per_model(tabs.per_model(ratios, "cost_per_model"), "alexnet", "cost", styles)]
    dpi, page = 110, 1400 - 32
    for fig in drawn:
        assert fig is not None and fig.legends
        shown = min(1.0, page / (fig.get_figwidth() * dpi))
        for leg in fig.legends:
            # below the plot: its anchor lies under the axes
            for t in leg.get_texts():
                assert t.get_fontsize() / 72 * dpi * shown >= 9, (t.get_text(), shown)


# --------------------------------------------------------------------------
# claims


def test_claim_instance_count_counts_distinct_instances():
    """Three runs of DepL on one AlexNet instance and one on another are two
    observations: the median gap is over instances (10 %, 20 % → 15 %), not
    over rows (10, 10, 10, 20 → 10 %)."""
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.stats import with_ratios

    rows = []
    for key, cost, repeats in (("a1", 110.0, 3), ("a2", 120.0, 1)):
        rows.append(_plan("milp", key, 100.0, status="optimal", exact=True, reference="saa",
                          params={"scenarios": 1000}, quantile_oos=8.0))
        for seed in range(repeats):
            rows.append(_plan("depl", f"{key}", cost, status="feasible", quantile_oos=8.0,
                              task_key=f"{key}-depl-{seed}", params={"eta": 200, "seed": seed}))
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    row = claims_mod.matches_optimum(with_ratios(df), df)
    assert row["instances"] == 2
    assert "2 distinct instances" in row["measured"] and "median 15.00 %" in row["measured"]
    # two instances have no 95 % interval on the median: never decided
    assert row["verdict"] == claims_mod.NOT_DECIDED
    assert "[−∞ %, ∞ %]" in row["measured"] and "distinct instances would decide it" in row["measured"]
    assert "virtually matches the optimum" in row["paper_says"]


def _gap_store(gaps, configs: int = 1):
    """DepL at cost 100·(1 + gap) against an exact optimum of 100, one
    instance per gap, each solved by ``configs`` DepL configurations."""
    rows = []
    for i, gap in enumerate(gaps):
        key = f"inst{i}"
        rows.append(_plan("milp-exact", key, 100.0, status="optimal", exact=True,
                          reference="exact-static", lower_bound=100.0, quantile_oos=8.0))
        for c in range(configs):
            rows.append(_plan("depl", key, 100.0 * (1 + gap), status="feasible", quantile_oos=8.0,
                              task_key=f"{key}-depl-{c}", params={"eta": 200, "seed": c}))
    return prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df


def test_three_configurations_of_one_instance_are_one_instance():
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.headline import headline_table
    from deplbench.reports.reference import plan_ratios
    from deplbench.reports.stats import with_ratios

    df = _gap_store([0.01], configs=3)
    assert (df["solver"] == "depl").sum() == 3
    row = claims_mod.matches_optimum(with_ratios(df), df)
    assert row["instances"] == 1 and "1 distinct instances" in row["measured"]
    head = headline_table(plan_ratios(df), series_info(df)).set_index("algorithm")
    assert head.loc["depl", "instances"] == 1 and head.loc["depl", "plans"] == 3


@pytest.mark.parametrize("gaps, verdict", [
    # eight instances: the interval is [min, max] (coverage 0.992)
    ([0.001, 0.002, 0.004, 0.005, 0.006, 0.008, 0.01, 0.015], "HOLDS"),
    ([0.03, 0.04, 0.05, 0.05, 0.06, 0.07, 0.08, 0.09], "FAILS"),
    # median 1.9 % below the 2 % threshold, but the interval straddles it
    ([0.001, 0.005, 0.01, 0.018, 0.02, 0.03, 0.04, 0.05], "NOT_DECIDED"),
])
def test_claim_verdict_needs_the_whole_interval_on_one_side(gaps, verdict):
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.headline import headline_table
    from deplbench.reports.reference import plan_ratios
    from deplbench.reports.stats import with_ratios

    df = _gap_store(gaps)
    row = claims_mod.matches_optimum(with_ratios(df), df)
    assert row["instances"] == len(gaps)
    assert row["verdict"] == getattr(claims_mod, verdict), row["measured"]
    lo, hi = 100 * min(gaps), 100 * max(gaps)
    assert f"[{lo:.2f} %, {hi:.2f} %]" in row["measured"]
    if verdict == "NOT_DECIDED":
        assert "would decide it at the observed spread" in row["measured"]
    # the glance cell shows the same interval on the ratio, over 8/8 instances
    head = headline_table(plan_ratios(df), series_info(df)).set_index("algorithm")
    assert head.loc["depl", "ratio_ci_low"] == pytest.approx(1 + min(gaps))
    assert head.loc["depl", "ratio_ci_high"] == pytest.approx(1 + max(gaps))
    assert f"[{1 + min(gaps):.3f}, {1 + max(gaps):.3f}]" in head.loc["depl", "vs_reference"]


def test_property3_judged_against_cost_over_lb():
    """The true ratio lies in [cost/UB, cost/LB]: the claim holds when every
    cost/LB is within (1/η)(1+ε) (η = 0.5: bound 2.2 ≥ 106/96), fails when
    even cost/UB exceeds it, and is not decided in between."""
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.stats import with_ratios

    rows = [_plan("milp-certified", "b", 104.0, reference="certified-static",
                  status="feasible", lower_bound=96.0),
            _plan("depl", "b", 106.0, status="feasible", params={"eta": 0.5, "epsilon": 0.1},
                  eta=0.5, epsilon=0.1)]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    row = claims_mod.property3(with_ratios(df), df)
    assert row["verdict"] == claims_mod.HOLDS and row["instances"] == 1
    assert "cost/LB" in row["measured"] and f"{106 / 96:.4f}" in row["measured"]
    # at η = 200 the bound is 0.0055: even cost/UB = 1.019 exceeds it
    df.loc[df["solver"] == "depl", "eta"] = 200.0
    assert claims_mod.property3(with_ratios(df), df)["verdict"] == claims_mod.FAILS
    # a bound between cost/UB and cost/LB: not decided
    df.loc[df["solver"] == "depl", ["eta", "epsilon"]] = [1 / 1.05, 0.0]
    assert claims_mod.property3(with_ratios(df), df)["verdict"] == claims_mod.UNDECIDED


def test_best_exp_compared_on_like_guarantees():
    from deplbench.reports import claims as claims_mod
    from deplbench.reports.stats import with_ratios

    rows = []
    for i in range(2):
        k = f"a{i}"
        rows += [_plan("depl", k, 110.0, status="feasible", params={"eta": 200}),
                 _plan("depl", k, 90.0, status="feasible", label="depl-calibrated",
                       params={"eta": 200, "calibrate": True}),
                 _plan("best-exp", k, 100.0, status="feasible")]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    row = claims_mod.beats_best_exp(with_ratios(df), df)
    assert "like guarantees (calibrated DepL vs best-exp): 2 paired instances" in row["measured"]
    assert "largest target-mean saving 10.0 %" in row["measured"]   # 1 − 90/100
    assert "largest target-mean saving -10.0 %" in row["measured"]  # the paper's DepL
    assert row["instances"] == 2


# --------------------------------------------------------------------------
# README and docs


@pytest.mark.slow
def test_readme_and_docs_match_the_report():
    import re
    from pathlib import Path

    from deplbench.reports import claims as claims_mod
    from deplbench.reports import complexity as cx
    from deplbench.reports.stats import with_ratios

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text(encoding="utf-8")
    docs = (root / "docs" / "reports.md").read_text(encoding="utf-8")
    for text in (readme, docs):
        for word in (r"\bissues?\b", r"\bsessions?\b", r"\bthe brief\b"):
            assert not re.search(word, text, re.IGNORECASE), word
    # the number of claims the README announces is the audit's row count
    df = prepare(make_frame()).df
    n = len(claims_mod.audit(df, with_ratios(df), cx.complexity_fits(df)))
    words = {7: "seven", 8: "eight", 6: "six"}
    assert f"{words[n]} rows" in readme and f"{words[n].capitalize()} rows" in docs
    # make targets: the README's time is the Makefile's
    make = (root / "Makefile").read_text(encoding="utf-8")
    took = re.search(r"(~\d+ minutes|over an hour) on 2 free\s+#?\s*cores", make)
    assert took is not None, "the Makefile states make targets' time"
    assert re.search(re.escape(took.group(1)) + r" on 2 free\s+cores", readme)
    assert "~10 minutes" not in readme
    # the papers, with their identifiers; the licence and citation files
    assert "arXiv:2402.14346" in readme and "10.1109/INFOCOM53939.2023.10229076" in readme
    assert (root / "LICENSE").read_text().startswith("MIT License")
    cff = (root / "CITATION.cff").read_text()
    assert "cff-version: 1.2.0" in cff and "2402.14346" in cff and "10229076" in cff


def test_exact_reference_with_a_gap_is_a_range_and_a_bracket_without_ub_is_no_ub():
    rows = [_plan("milp-exact", "e", 102.0, reference="exact-static", status="time_limit",
                  lower_bound=98.0),
            _plan("depl", "e", 100.0, status="feasible"),
            _plan("milp-certified", "f", 0.0, reference="certified-static", status="feasible",
                  lower_bound=96.0, diagnostics={"bracket": {"confidence": 0.95}}),
            _plan("depl", "f", 106.0, status="feasible")]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    refs = ref_mod.references(df).set_index(["instance_key", "kind"])
    assert refs.loc[("e", "exact-static"), ["ub", "lb"]].tolist() == [102.0, 98.0]
    assert np.isnan(refs.loc[("f", "certified-static"), "ub"])
    head = headline_table(ref_mod.plan_ratios(df), series_info(df)).set_index("algorithm")
    # 100/102 below UB, 100/98 above LB: a range, flagged below UB only
    assert head.loc["depl", "vs_reference"].startswith(f"{100 / 102:.3f}–")
    assert "below UB" in head.loc["depl", "vs_reference"]
    assert "below opt." not in head.loc["depl", "vs_reference"]


def test_static_plans_on_the_pact_set_against_the_static_and_the_adaptive_optimum():
    """A static plan of the PACT set is judged against the exact static
    optimum (not "no reference"), and shown beside the adaptive optimum."""
    from deplbench.reports.headline import headline_table
    from deplbench.reports.reference import plan_ratios

    pact = dict(instance_set="pact-vgg11", loss_max=0.3)
    rows = [_plan("milp-exact", "p", 500.0, reference="exact-static", status="optimal",
                  lower_bound=500.0, exact=True, **pact),
            _plan("adaptive-opt", "p", 400.0, reference="adaptive", status="feasible",
                  lower_bound=380.0, **pact),
            _plan("static-learn", "p", 550.0, status="feasible", quantile_oos=0.2, **pact)]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    plans = plan_ratios(df)
    sl = plans[plans["algorithm"] == "static-learn"].iloc[0]
    assert sl["reference"] == "exact-static" and sl["ratio_ub"] == pytest.approx(1.1)
    assert sl["ratio_adaptive"] == pytest.approx(550 / 400)
    head = headline_table(plans, series_info(df)).set_index("algorithm")
    cell = head.loc["static-learn", "vs_reference"]
    assert cell.startswith("1.100") and "on 1/1" in cell
    assert head.loc["static-learn", "ratio_adaptive_median"] == pytest.approx(550 / 400)


def test_a_bracket_whose_ends_print_alike_shows_one_number():
    """cost/UB and cost/LB that agree to three decimals print once ("1.783",
    never "1.783–1.783"); ends that differ there still print both."""
    import numpy as np

    from deplbench.reports.headline import _vs_reference

    same = _vs_reference("certified-static", np.array([1.78301]), np.array([1.78349]), 1, 1, 0, 0)
    assert same.startswith("1.783 on 1/1")
    apart = _vs_reference("certified-static", np.array([1.0]), np.array([1.1]), 1, 1, 0, 0)
    assert apart.startswith("1.000–1.100 on 1/1")


def test_below_ub_is_not_flagged_against_the_adaptive_optimum():
    """Against the adaptive bracket the UB is a confidence bound on one policy's mean: a simulated
    mean below it (the reference's own policy always is) is no warning; below the LB still is."""
    import numpy as np

    from deplbench.reports.headline import _vs_reference
    from deplbench.reports.reference import ADAPTIVE, CERTIFIED

    ub, lb = np.array([0.99]), np.array([1.05])
    assert "below UB" not in _vs_reference(ADAPTIVE, ub, lb, 1, 1, 1, 0)
    assert "below UB" in _vs_reference(CERTIFIED, ub, lb, 1, 1, 1, 0)
    assert "below LB" in _vs_reference(ADAPTIVE, np.array([0.9]), np.array([0.95]), 1, 1, 1, 1)


def _adaptive_set_frame(n: int, confidence=0.95) -> pd.DataFrame:
    """``n`` PACT-set instances, each with an exact static optimum 500, an adaptive bracket
    [380, 400] at ``confidence`` and a OneSwitch plan at 550."""
    pact = dict(instance_set="pact-vgg11", loss_max=0.3)
    rows = []
    for i in range(n):
        key = f"p{i}"
        rows += [_plan("milp-exact", key, 500.0, reference="exact-static", status="optimal",
                       lower_bound=500.0, exact=True, **pact),
                 _plan("adaptive-opt", key, 400.0, reference="adaptive", status="feasible",
                       lower_bound=380.0, diagnostics={"confidence": confidence}, **pact),
                 _plan("one-switch", key, 550.0, status="feasible", quantile_oos=0.2, **pact)]
    return pd.DataFrame(rows, columns=list(STORE_COLUMNS))


@pytest.mark.parametrize("n, level", [(3, 0.85), (10, 0.5), (25, 0.0)])
def test_the_ratio_to_the_adaptive_optimum_states_its_joint_level(n, level):
    """The median of cost / adaptive UB is a lower end of the median ratio when every bracket
    holds: 1 − Σ (1 − 0.95) jointly (union bound), not each bracket's 95 %."""
    from deplbench.reports.headline import headline
    from deplbench.reports.reference import plan_ratios, references

    df = prepare(_adaptive_set_frame(n)).df
    head = headline_table(plan_ratios(df), series_info(df), references(df)).set_index("algorithm")
    assert head.loc["one-switch", "ratio_adaptive_median"] == pytest.approx(550 / 400)
    assert head.loc["one-switch", "ratio_adaptive_level"] == pytest.approx(level)
    assert head.loc["milp-exact", "ratio_adaptive_level"] == pytest.approx(level)
    caption = next(t.caption for t in headline(df, None, series_info(df)).elements
                   if getattr(t, "name", "") == "headline")
    assert "at the bracket's confidence" not in caption and "ratio_adaptive_level" in caption
    assert f"Here: ≥ {100 * level:.1f} %." in caption


def test_an_adaptive_level_without_a_stated_confidence_is_not_computable():
    from deplbench.reports.reference import plan_ratios, references

    df = prepare(_adaptive_set_frame(2, confidence=None)).df
    head = headline_table(plan_ratios(df), series_info(df), references(df)).set_index("algorithm")
    assert head.loc["one-switch", "ratio_adaptive_median"] == pytest.approx(550 / 400)
    assert np.isnan(head.loc["one-switch", "ratio_adaptive_level"])


# --------------------------------------------------------------------------
# runs without a plan


def _runs_frame() -> pd.DataFrame:
    """Three PACT-set instances with an exact optimum 500; StaticLearn returns a plan on two and
    no plan on the third (and is skipped, not run, on a fourth); a series that never found a plan."""
    pact = dict(instance_set="pact-vgg11", loss_max=0.3)
    proven = {"exact_verdict": "proven feasible"}
    rows = []
    for i in range(3):
        key = f"r{i}"
        rows.append(_plan("milp-exact", key, 500.0, reference="exact-static", status="optimal",
                          lower_bound=500.0, exact=True, evaluation=proven, **pact))
        rows.append(_plan("static-learn", key, 550.0, status="feasible", quantile_oos=0.2,
                          evaluation=proven, **pact) if i < 2 else
                    _plan("static-learn", key, None, status="no_solution", **pact))
    rows.append(_plan("static-learn", "r3", None, status="skipped", **pact))
    rows.append(_plan("one-switch", "r0", None, status="no_solution", **pact))
    return pd.DataFrame(rows, columns=list(STORE_COLUMNS))


def test_a_run_without_a_plan_stays_in_every_count():
    """"feasible 2/2 … on 2/2" hid StaticLearn's third run, which returned no plan: N counts
    every run of the series and the card says how many had none."""
    from deplbench.reports.html import _glance_class
    from deplbench.reports.reference import plan_ratios, references, series_runs

    df = prepare(_runs_frame()).df
    runs = series_runs(df)
    assert len(runs[runs["algorithm"] == "static-learn"]) == 3          # the skipped one is not a run
    head = headline_table(plan_ratios(df), series_info(df), references(df), runs).set_index("algorithm")
    sl = head.loc["static-learn"]
    assert (sl["plans"], sl["runs"], sl["no_plan"], sl["instances"], sl["with_reference"]) == (2, 3, 1, 3, 2)
    assert sl["vs_reference"] == "1.100 [n < 6] on 2/3 (1 no plan)"
    assert sl["verdict"] == "feasible 2/3" and sl["feasible"].startswith("2 proven/3")
    assert _glance_class("verdict", sl["verdict"]) == "v-unmeasured"    # not green: a run found nothing
    ex = head.loc["milp-exact"]
    assert ex["verdict"] == "feasible 3/3" and _glance_class("verdict", ex["verdict"]) == "v-holds"
    assert ex["vs_reference"] == "1.000 [n < 6] on 3/3"
    # a series with runs and no plan at all still has its row
    one = head.loc["one-switch"]
    assert (one["plans"], one["runs"], one["no_plan"]) == (0, 1, 1)
    assert one["verdict"] == "no plan 1/1" and one["vs_reference"] == "no reference on 0/1 (1 no plan)"
    # without the runs, the plans are taken as all of them (the old count)
    old = headline_table(plan_ratios(df), series_info(df)).set_index("algorithm")
    assert old.loc["static-learn", "verdict"] == "feasible 2/2" and "one-switch" not in old.index


@pytest.mark.slow
def test_readme_and_usage_glance_tables_are_the_demo_store_report():
    """README's and docs/usage.md's glance table: each cell is the demo report's card cell
    (tests/demo_store.py), with "on N/N" left out only where nothing is missing."""
    import tempfile
    from pathlib import Path

    from deplbench.reports.data import load_store
    from deplbench.reports.reference import plan_ratios, references, series_runs
    from tests.demo_store import unpack

    with tempfile.TemporaryDirectory() as tmp:
        df = prepare(load_store(unpack(Path(tmp)))).df
    head = headline_table(plan_ratios(df), series_info(df), references(df), series_runs(df))
    cells = {(s, a): v for s, a, v in zip(head["set"], head["algorithm"], head["vs_reference"])}
    sets = {"AlexNet": "alexnet", "MobileNet": "mobilenet", "PACT-VGG11": "pact-vgg11"}
    series = {"DepL": "depl", "best-exp": "best-exp", "OneSwitch": "one-switch",
              "StaticLearn": "static-learn", "PACT (static plan)": "pact"}
    root = Path(__file__).resolve().parents[2]
    for doc in (root / "README.md", root / "docs" / "usage.md"):
        lines = doc.read_text(encoding="utf-8").splitlines()
        top = lines.index("| set | DepL | best-exp | OneSwitch | StaticLearn | PACT (static plan) |")
        header = [c.strip() for c in lines[top].strip("|").split("|")]
        checked = 0
        for line in lines[top + 2:top + 5]:
            row = [c.strip() for c in line.strip("|").split("|")]
            for name, cell in zip(header[1:], row[1:]):
                if cell == "—" or cell.startswith("closed loop"):
                    continue
                want = cells[(sets[row[0]], series[name])]
                m = re.search(r" on (\d+)/(\d+)$", want)
                if m and m.group(1) == m.group(2):
                    want = want[:m.start()]
                assert cell == want, (doc.name, row[0], name)
                checked += 1
        assert checked == 12, doc.name
