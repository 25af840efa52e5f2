"""What the report says about an adaptive-opt bracket (reports/adaptive.py, reports/closed_loop.py).

The record's cost is the one-sided empirical-Bernstein upper confidence bound on the
certified policy's mean cost at 1 − (1 − c)/2 (97.5 % at c = 0.95), jointly at c with the
P(success) certificate: every caption that names UB says so, with the level; a
closed-loop series' interval says its level; ``lb_own`` is taken at the series' certified
lower bound on P(success), so that ``ratio_own`` ≥ cost / the optimum at its true level.
"""

from __future__ import annotations

import pandas as pd
import pytest

from deplbench.reports.adaptive import ci_level_text, matched_risk_table, ub_statement
from deplbench.reports.data import prepare

OPT = 1000.0
#: The adaptive frontier: a bound at the point estimate 1.0 that is no bound at 0.9996.
FRONTIER = [(0.99, 0.8 * OPT), (0.999, 0.85 * OPT), (1.0, 0.95 * OPT)]


def _summary(cost, p=1.0, low=0.9996, confidence=0.95):
    return {"runs": 10000, "p_success": p, "p_success_ci": [low, 1.0], "confidence": confidence,
            "cost": {"mean": cost, "q50": cost, "q99": cost}, "cost_sem": 0.5, "epochs": {"mean": 30.0},
            "time": {"mean": 900.0}, "loss_quantile": 0.1, "deadline_missed": 0, "policy_calls": 40,
            "wall_s": 0.1, "policy_info": {}}


def frame(confidences=(0.95,)) -> pd.DataFrame:
    """One PACT-set instance: the exact static optimum, closed-loop PACT (P(success) 1.0,
    certified ≥ 0.9996) and one adaptive-opt record per joint confidence."""
    from deplbench.benchmarks.record import COLUMNS

    base = dict(sweep="t", family="realistic", instance_set="pact-vgg11", instance_sha="v-0.15-0",
                instance_name="vgg", loss_max=0.15, omega=0.99, n_models=3, horizon=100, code_version="0",
                plan={"epochs": []}, status="feasible", quantile_oos=0.14, verdict="feasible")
    rows = [{**base, "key": "milp", "algorithm": "milp-exact", "exact": True, "cost": 1.2 * OPT, "status": "optimal",
             "reference": "exact-static", "closed_loop": {"plan": _summary(1.2 * OPT), "plan_stopped": None,
                                                         "policy": None}},
            {**base, "key": "pact", "algorithm": "pact", "exact": False, "cost": 1.8 * OPT, "reference": "",
             "closed_loop": {"plan": _summary(1.8 * OPT), "plan_stopped": None, "policy": _summary(1.1 * OPT)}}]
    for i, c in enumerate(confidences):
        diag = {"omega": 0.99, "p_success_lo": 0.991, "p_success": 0.995, "certified": True, "confidence": c,
                "cost_mean": 0.9 * OPT, "frontier": [{"omega": w, "lower_bound": b} for w, b in FRONTIER]}
        rows.append({**base, "key": f"adaptive-{i}", "algorithm": "adaptive-opt", "exact": False,
                     "cost": 0.92 * OPT, "lower_bound": 0.8 * OPT, "status": "feasible", "plan": None,
                     "reference": "adaptive", "diagnostics": diag,
                     "closed_loop": {"plan": None, "plan_stopped": None, "policy": _summary(0.92 * OPT)}})
    return pd.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], columns=list(COLUMNS))


def test_lb_own_is_taken_at_the_certified_lower_bound_on_p_success():
    m = matched_risk_table(prepare(frame()).df)
    pact = m[(m["algorithm"] == "pact") & (m["series"] == "policy")].iloc[0]
    assert pact["p_success"] == 1.0 and pact["p_success_low"] == pytest.approx(0.9996)
    assert pact["ci_level"] == pytest.approx(0.95)
    # the frontier's bound at 0.999 ≤ 0.9996, not the one at the estimate 1.0
    assert pact["lb_own"] == pytest.approx(0.85 * OPT)
    assert pact["ratio_own"] == pytest.approx(1.1 / 0.85)


def test_ub_statement_gives_method_and_level():
    one = ub_statement(prepare(frame()).df)
    assert "one-sided empirical-Bernstein upper confidence bound" in one and "mean cost" in one
    assert "level 97.5 %, 95 % jointly" in one and "Clopper–Pearson" in one and "union bound" in one
    two = ub_statement(prepare(frame((0.95, 0.99))).df)
    assert "1 − (1 − c)/2" in two and "c = 0.95, 0.99" in two
    # a level is read from the records, never assumed: without records none is named
    assert "0.95" not in ub_statement(None) and "97.5" not in ub_statement(None)


def test_a_record_without_its_confidence_has_no_level():
    """An adaptive-opt record that states no confidence has an unknown level (NaN, "not
    computable"), never an assumed 0.95: in the caption and in the tables' level columns."""
    from deplbench.reports.adaptive import adaptive_rows, price_of_adaptivity

    df = prepare(frame((None,))).df
    text = ub_statement(df)
    assert "1 record(s) state no c: level not computable" in text and "97.5" not in text
    assert "c = 0.95; 1 record(s) state no c" in ub_statement(prepare(frame((0.95, None))).df)
    assert pd.isna(adaptive_rows(df)["v-0.15-0"]["confidence"])
    m = matched_risk_table(df)
    assert not m.empty and m["ratio_omega_level"].isna().all()
    price = price_of_adaptivity(df)
    assert len(price) == 1 and pd.isna(price["price_level"].iloc[0])
    # stated: the level is the record's, in its diagnostics or else in its parameters
    assert adaptive_rows(prepare(frame((0.99,))).df)["v-0.15-0"]["confidence"] == 0.99
    by_param = frame((None,))
    by_param["params"] = [{"confidence": 0.99} if a == "adaptive-opt" else {} for a in by_param["algorithm"]]
    df = prepare(by_param).df
    assert adaptive_rows(df)["v-0.15-0"]["confidence"] == 0.99
    assert "level 99.5 %, 99 % jointly" in ub_statement(df) and "state no c" not in ub_statement(df)
    assert ci_level_text([0.95, 0.95]) == "level 0.95 (its lower end a one-sided 97.5 % lower bound)"


@pytest.mark.slow
def test_built_report_labels_the_adaptive_upper_bound_with_its_level(tmp_path):
    from deplbench.reports.build import ReportOptions, build_report

    summary = build_report(frame(), tmp_path, options=ReportOptions(scale=0.4, dpi=40, formats=("png",)))
    assert not summary.errors
    md = {name: (tmp_path / "tables" / f"{name}.md").read_text(encoding="utf-8")
          for name in ("matched_risk", "pact_matched", "price_of_adaptivity")}
    for name, text in md.items():
        caption = text.split("\n\n")[1]
        assert "one-sided empirical-Bernstein upper confidence bound" in caption, name
        assert "level 97.5 %, 95 % jointly" in caption, name
    risk = md["matched_risk"].split("\n\n")[1]
    assert "two-sided Clopper–Pearson interval at level 0.95" in risk
    assert "≥ the true ratio" not in risk and "policy's mean cost UB" not in risk
    assert "an estimate" in risk
    pact = md["pact_matched"].split("\n\n")[1]
    assert "sample mean cost (an estimate)" in pact and "normal-approximation (CLT) interval on its mean" in pact
    assert "one-sided Clopper–Pearson lower bound on PACT's P(success)" in pact
    assert "two-sided interval at level 0.95" in pact and "bracket_level = 1 − pact_alpha − ub_alpha" in pact
    html = (tmp_path / "index.html").read_text(encoding="utf-8")
    assert "empirical-Bernstein upper confidence bound" in html
    claims = summary.claims
    row = claims[claims["reference"].astype(str).str.contains("PACT's certified level")].iloc[0]
    assert "upper confidence bound" in row["reference"] and "97.5 %" in row["reference"]


def test_the_glance_reference_states_the_adaptive_bracket_s_confidence():
    from deplbench.reports.headline import _reference_line
    from deplbench.reports.reference import plan_ratios, references

    df = prepare(frame()).df
    refs = references(df)
    assert refs.loc[refs["kind"] == "adaptive", "confidence"].tolist() == [0.95]
    line = _reference_line("pact-vgg11", plan_ratios(df), refs)
    assert "adaptive optimum (adaptive-opt) on 1/1 instances, confidence ≥ 0.95" in line


def test_the_closed_loop_captions_give_the_level_the_records_state():
    """A sweep run at closed_loop.confidence = 0.9: no caption names the 0.95 default."""
    from deplbench.reports.adaptive import levels_text
    from deplbench.reports.closed_loop import closed_loop_table

    assert ci_level_text([0.9, 0.9]) == "level 0.9 (its lower end a one-sided 95 % lower bound)"
    assert ci_level_text([0.9, 0.99]).startswith("levels differ (ci_level: 0.9, 0.99)")
    assert "0.95" not in ci_level_text([]) and "default" not in ci_level_text([])
    assert levels_text([0.9, None]) == "level 0.9 (1 record(s) state no level)"
    df = prepare(frame()).df
    df["closed_loop_d"] = [{k: (dict(v, confidence=0.9) if isinstance(v, dict) else v) for k, v in cl.items()}
                           for cl in df["closed_loop_d"]]
    assert set(closed_loop_table(df)["p_success_level"]) == {0.9}
    assert set(matched_risk_table(df)["ci_level"]) == {0.9}
    # a series that states no level of its own takes its simulation's (closed_loop()'s "confidence")
    df["closed_loop_d"] = [{"confidence": 0.9, **{k: ({x: y for x, y in v.items() if x != "confidence"}
                                                       if isinstance(v, dict) else v) for k, v in cl.items()}}
                           for cl in df["closed_loop_d"]]
    assert set(matched_risk_table(df)["ci_level"]) == {0.9}


def test_the_closed_loop_table_caption_states_the_records_level(monkeypatch):
    from types import SimpleNamespace

    from deplbench.reports import adaptive, closed_loop

    for module, name in ((closed_loop, "fig6_left"), (adaptive, "frontier_figure")):   # captions only
        monkeypatch.setattr(module, name, lambda *a, **k: None)
    df = prepare(frame()).df
    df["closed_loop_d"] = [{k: (dict(v, confidence=0.9) if isinstance(v, dict) else v) for k, v in cl.items()}
                           for cl in df["closed_loop_d"]]
    s = closed_loop.section_closed_loop(SimpleNamespace(df=df, styles={}, scale=0.4))
    captions = {e.name: e.caption for e in s.elements if hasattr(e, "caption") and hasattr(e, "name")}
    assert "Clopper–Pearson interval at level 0.9;" in captions["closed_loop"]
    assert "at level 0.9 (its lower end a one-sided 95 % lower bound)" in captions["matched_risk"]
    assert "default 0.95" not in captions["closed_loop"] + captions["matched_risk"]
