"""Every interval the report writes says its level and method (reports/*):
the CSV exports carry level and method columns, the slopes of exact work
counters are called a fit-residual band, the glance's exact reference says
how close it was proven, and the PACT comparison names its optimum."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from deplbench.reports.data import STORE_COLUMNS, prepare


def test_headline_csv_states_the_intervals_level_and_method():
    from deplbench.reports import reference as ref_mod
    from deplbench.reports.headline import headline_table
    from deplbench.reports.styles import series_info
    from tests.reports.test_report_glance import _plan

    rows = []
    for i in range(8):
        key = f"i{i}"
        rows += [_plan("milp-exact", key, 100.0, reference="exact-static", status="optimal", lower_bound=100.0,
                       exact=True),
                 _plan("depl", key, 100.0 + i, status="feasible")]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    head = headline_table(ref_mod.plan_ratios(df), series_info(df)).set_index("algorithm")
    # 8 instances: [x(1), x(8)], coverage 1 − 2/2⁸
    assert head.loc["depl", "ratio_ci_level"] == pytest.approx(1 - 2 / 256)
    assert "order-statistic interval" in head.loc["depl", "ratio_ci_method"]
    assert "95 %" in head.loc["depl", "ratio_ci_method"]


def test_exact_reference_states_its_largest_gap():
    from deplbench.reports import reference as ref_mod
    from deplbench.reports.headline import _reference_line
    from tests.reports.test_report_glance import _plan

    rows = [_plan("milp-exact", "a", 100.0, reference="exact-static", status="optimal", lower_bound=100.0),
            _plan("milp-exact", "b", 100.0, reference="exact-static", status="optimal",
                  lower_bound=100.0 * (1 - 2.3e-5)),
            _plan("depl", "a", 101.0, status="feasible"), _plan("depl", "b", 101.0, status="feasible")]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    plans = ref_mod.plan_ratios(df)
    line = _reference_line("alexnet", plans, ref_mod.references(df))
    assert "on 2/2 instances" in line
    assert "1 of them proven only within a relative gap (UB − LB)/UB, the largest 2.3e-05" in line
    closed = [r for r in rows if r["key"] != "milp-exact-b"]
    df = prepare(pd.DataFrame([r for r in closed if r["instance_sha"] == "a"], columns=list(STORE_COLUMNS))).df
    assert "relative gap" not in _reference_line("alexnet", ref_mod.plan_ratios(df), ref_mod.references(df))


def test_counter_slopes_are_a_fit_residual_band_and_runtime_slopes_a_t_interval():
    from deplbench.reports import complexity as cx
    from deplbench.reports.claims_common import fmt_fit

    fits = cx.complexity_fits(prepare(_scaling_frame()).df)
    assert {"ci_level", "ci_kind"} <= set(fits.columns)
    t = fits[fits["measure"] == cx.TIME].iloc[0]
    w = fits[fits["measure"] != cx.TIME].iloc[0]
    assert t["ci_kind"] == cx.CI_KIND_TIME and w["ci_kind"] == cx.CI_KIND_COUNTER
    assert (fits["ci_level"] == 0.95).all()
    row = next(fits[fits["measure"] != cx.TIME].itertuples(index=False))
    assert "(95 % fit-residual band" in fmt_fit(row) and "not a confidence interval" in fmt_fit(row)
    row = next(fits[fits["measure"] == cx.TIME].itertuples(index=False))
    assert "(95 % t confidence interval" in fmt_fit(row)


def _scaling_frame() -> pd.DataFrame:
    """DepL over four |M| with a runtime and an exact work counter (a little noise in the runtime)."""
    from tests.reports.test_report_glance import _plan

    rng = np.random.default_rng(0)
    rows = []
    for m in (2, 4, 8, 16):
        for rep in range(2):
            rows.append(_plan("depl", f"m{m}", 10.0 * m, task_key=f"m{m}-{rep}", family="scaling",
                              instance_set="", n_models=m, status="feasible",
                              runtime_s=0.01 * m ** 2 * float(np.exp(rng.normal(0, 0.05))),
                              params={"eta": 200, "seed": rep},
                              diagnostics={"work": {"graph_vertices": 100 * m}}))
    return pd.DataFrame(rows, columns=list(STORE_COLUMNS))


def test_closed_loop_and_replay_tables_carry_level_and_method():
    from deplbench.reports.closed_loop import CLOSED_LOOP_COLUMNS, closed_loop_table, pact_comparison
    from tests.reports.test_pact_population import frame

    f = frame()
    for cl in f["closed_loop"]:          # as the simulator writes them
        for s in cl.values():
            if isinstance(s, dict):
                s.update(confidence=0.95, p_success_method="Clopper–Pearson, two-sided, level 0.95")
    df = prepare(f).df
    t = closed_loop_table(df)
    assert {"p_success_level", "p_success_method"} <= set(CLOSED_LOOP_COLUMNS)
    assert len(t) and (t["p_success_level"] == 0.95).all()
    assert t["p_success_method"].str.startswith("Clopper–Pearson, two-sided").all()
    # the PACT comparison names its optimum: the exact static optimum here, never "SAA"
    comp = pact_comparison(df)
    assert (comp["optimum_source"] == "milp-exact (exact static optimum, proven)").all()

    from deplbench.reports.measured import REPLAY_COLUMNS
    assert {"ci_level", "ci_method"} <= set(REPLAY_COLUMNS)


def test_pact_comparison_caption_names_the_exact_static_optimum():
    import inspect

    from deplbench.reports import closed_loop

    src = inspect.getsource(closed_loop)
    assert "optimum = the exact solver's plan (SAA)" not in src
    assert "optimum = the exact static optimum of the instance" in src


def test_adaptive_tables_carry_level_and_method():
    from deplbench.reports.adaptive import (
        PACT_MATCHED_COLUMNS,
        matched_risk_table,
        pact_matched_table,
        price_of_adaptivity,
    )
    from tests.reports.test_pact_population import frame

    df = prepare(frame()).df
    m = matched_risk_table(df)
    assert (m["ratio_omega_level"] == 0.95).all() and m["ratio_omega_method"].str.contains("empirical-Bernstein").all()
    t = pact_matched_table(df)
    assert {"bracket_level", "method"} <= set(PACT_MATCHED_COLUMNS)
    assert t["bracket_level"].tolist() == pytest.approx((1 - t["pact_alpha"] - t["ub_alpha"]).tolist())
    assert all(0 < b < 1 for b in t["bracket_level"])
    p = price_of_adaptivity(df)
    assert len(p) and (p["price_level"] == 0.95).all() and p["price_method"].str.contains("UB").all()
    assert not math.isnan(float(p["price_low"].iloc[0]))


def test_headline_interval_against_certified_brackets_states_the_union_bound():
    from deplbench.reports import reference as ref_mod
    from deplbench.reports.headline import headline_table
    from deplbench.reports.styles import series_info
    from tests.reports.test_report_glance import _plan

    rows = []
    for i in range(8):
        key = f"c{i}"
        rows += [_plan("milp-certified", key, 0.0, reference="certified-static", status="feasible",
                       lower_bound=95.0, diagnostics={"bracket": {"confidence": 0.99,
                                                                  "upper_bound": {"value": 100.0}}}),
                 _plan("depl", key, 101.0 + i, status="feasible")]
    df = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df
    plans = ref_mod.plan_ratios(df)
    head = headline_table(plans, series_info(df), ref_mod.references(df)).set_index("algorithm")
    # 8 brackets at 99 % each beside the order-statistic event's 1 − 2/2⁸
    assert head.loc["depl", "ratio_ci_level"] == pytest.approx(1 - 2 / 256 - 8 * 0.01)
    assert "union bound" in head.loc["depl", "ratio_ci_method"]
    plain = headline_table(plans, series_info(df)).set_index("algorithm")
    assert plain.loc["depl", "ratio_ci_level"] == pytest.approx(1 - 2 / 256)


def test_a_certified_bracket_without_its_confidence_leaves_the_level_not_computable():
    """Eight tight certified brackets, one of which states no confidence: the union
    bound cannot be computed, so the claim is not decided and the glance's level is
    NaN with the reason, never the level of the seven others."""
    from deplbench.reports import claims as claims_mod
    from deplbench.reports import reference as ref_mod
    from deplbench.reports.claims_common import NO_LEVEL
    from deplbench.reports.headline import headline_table
    from deplbench.reports.stats import with_ratios
    from deplbench.reports.styles import series_info
    from tests.reports.test_report_glance import _plan

    def frame(missing: tuple[int, ...]) -> pd.DataFrame:
        rows = []
        for i in range(8):
            b = {"upper_bound": {"value": 100.0}} | ({} if i in missing else {"confidence": 0.99})
            rows += [_plan("milp-certified", f"c{i}", 0.0, reference="certified-static", status="feasible",
                           lower_bound=99.5, diagnostics={"bracket": b}),
                     _plan("depl", f"c{i}", 100.0 + 0.1 * i, status="feasible",
                           certified_verdict="certified feasible")]
        return prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS))).df

    for missing, verdict in (((), claims_mod.HOLDS), ((3,), NO_LEVEL)):
        df = frame(missing)
        row = claims_mod.matches_optimum(with_ratios(df), df)
        assert row["verdict"] == verdict, row["measured"]
        plans = ref_mod.plan_ratios(df)
        head = headline_table(plans, series_info(df), ref_mod.references(df)).set_index("algorithm")
        level, method = head.loc["depl", ["ratio_ci_level", "ratio_ci_method"]]
        if missing:
            assert "level not computable: 1 of its 8 bracket(s)" in row["measured"]
            assert "decides nothing" in row["measured"]
            assert math.isnan(level) and method.startswith("level not computable")
            assert "[1.000, 1.012] (level not computable)" in head.loc["depl", "vs_reference"]
        else:
            assert level == pytest.approx(1 - 2 / 256 - 8 * 0.01)


def test_the_glance_prints_a_one_sided_interval_as_such():
    """Ten instances, three brackets without a positive LB: the interval [2, ∞] exists (not "n < 6")."""
    from deplbench.reports.headline import _ci_text
    from deplbench.reports.median import median_interval

    lo = np.arange(1.0, 11.0)
    assert _ci_text(median_interval(lo, np.where(lo > 7, math.inf, lo + 0.5))) == " [2.000, ∞]"
    assert _ci_text(median_interval([1.0, 2.0])) == " [n < 6]"


def test_a_label_shared_by_two_algorithms_is_split_never_averaged():
    """Two sweeps into one store gave the MILP's rows the label "depl": the report drew one
    series "depl" (4 runs, DepL's style) out of both algorithms' costs."""
    from tests.reports.test_report_glance import _plan

    rows = [_plan("depl", "a", 110.0, label="depl"), _plan("milp", "a", 100.0, label="depl", exact=True),
            _plan("depl", "b", 120.0, label="depl-eta"), _plan("depl", "c", 130.0)]
    data = prepare(pd.DataFrame(rows, columns=list(STORE_COLUMNS)))
    # the unlabelled DepL row is series "depl" too (a label defaults to the registry name)
    assert data.df["algorithm"].tolist() == ["depl (depl)", "depl (milp)", "depl-eta", "depl (depl)"]
    assert data.df.groupby("algorithm")["solver"].nunique().max() == 1
    assert any("label 'depl' holds rows of 2 algorithms (depl, milp" in n for n in data.notes), data.notes
