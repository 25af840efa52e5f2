"""Ratios against the certified bracket, and the Figs. 5–6 claims re-judged on it.

The SAA optimum (the MILP on S scenarios) is not a plan anyone could use:
its plan may miss ℓmax out of sample. The ``milp-certified`` rows of a store
carry a certified bracket LB ≤ z* ≤ UB on the true chance-constrained
optimum z* (``solvers/certify/certified.py``; Luedtke & Ahmed 2008, Sec. 4;
Pagnoncelli, Ahmed & Shapiro 2009, Sec. 4). This section states, per
instance with a bracket and for every algorithm whose plan the evaluator
*certified feasible* (Clopper–Pearson upper bound on P(ℓ(K) > ℓmax) ≤ 1 − ω,
column ``certified_verdict``):

* ``cost / UB`` — how far the plan is from the best certified plan found
  (< 1 means the algorithm found a cheaper certified plan than the bracket's);
* ``cost / LB`` — an upper bound on the plan's true competitive ratio
  cost / z*, valid with the LB's confidence;
* ``cost / SAA opt`` — the old yardstick, kept and labelled as such.

and re-judges the claims "DepL virtually matches the optimum" and "DepL
beats best-exp by over 27 %" with the thresholds of ``reports/claims.py``,
saying which yardstick each verdict uses.

Entry points (each takes the prepared frame ``reports.data.prepare(...).df``
and never raises for missing data; empty tables say "not measured"):
:func:`bracket_table`, :func:`bracket_ratio_table`, :func:`rejudged_claims`,
and :func:`bracket_section` returning all three.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.jsonio import number_text
from deplbench.reports.claims import (
    BEST_EXP,
    BEST_EXP_SAVING,
    FIG56_SETS,
    MATCH_MEDIAN_GAP,
    UNMEASURED,
    paper_depl,
)
from deplbench.reports.claims_common import MEDIAN_STATISTIC, NOT_DECIDED, median_verdict
from deplbench.reports.data import finite_or
from deplbench.reports.median import level_caveat, median_interval, undecided_text, with_bracket_failures

#: Registry name of the bracket algorithm.
CERTIFIED = "milp-certified"
#: Verdict when the bracket is too wide to decide a claim.
UNDECIDED = "not decided by the bracket (too wide)"
CERTIFIED_FEASIBLE = "certified feasible"

BRACKET_COLUMNS = ("set", "loss_max", "instance_key", "lb", "ub", "width", "confidence",
                   "lb_confidence", "lb_method", "ub_method", "status")
RATIO_COLUMNS = ("set", "loss_max", "instance_key", "algorithm", "cost", "certified_verdict",
                 "cost_over_ub", "cost_over_lb", "lb_confidence", "cost_over_saa_opt", "saa_scenarios")
CLAIM_COLUMNS = ("claim", "yardstick", "measured", "verdict")


def _set_of(row) -> str:
    for key in ("paper_set", "instance_set", "family"):
        v = row.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def bracket_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per instance with a ``milp-certified`` row: LB, UB, width, confidences.

    Parameters
    ----------
    df : pandas.DataFrame
        Prepared store frame (columns ``solver``, ``instance_key``, ``cost``,
        ``lower_bound``, ``diagnostics_d``, ``loss_max``, ...).

    Returns
    -------
    pandas.DataFrame
        :data:`BRACKET_COLUMNS`; ``ub`` NaN when no plan was certified, ``lb``
        NaN when M replications were too few. When an instance has several
        bracket rows, the narrowest one is kept (each is valid on its own).
    """
    if df.empty or "solver" not in df:
        return pd.DataFrame(columns=list(BRACKET_COLUMNS))
    rows = []
    for _, r in df[df["solver"] == CERTIFIED].iterrows():
        diag: dict = r["diagnostics_d"] if isinstance(r.get("diagnostics_d"), dict) else {}
        b: dict = diag["bracket"] if isinstance(diag.get("bracket"), dict) else {}
        lower = b.get("lower_bound") or {}
        upper = b.get("upper_bound") or {}
        lb, ub = finite_or(r.get("lower_bound")), finite_or(upper.get("value", r.get("cost")))
        if not upper:
            ub = math.nan
        rows.append({
            "set": _set_of(r), "loss_max": finite_or(r.get("loss_max")), "instance_key": r.get("instance_key"),
            "lb": lb, "ub": ub, "width": (ub - lb) / ub if ub > 0 and math.isfinite(lb) else math.nan,
            "confidence": finite_or(b.get("confidence")), "lb_confidence": finite_or(lower.get("confidence")),
            "lb_method": str(lower.get("method", "")), "ub_method": str(upper.get("method", "")),
            "status": str(b.get("status", r.get("status", ""))),
        })
    if not rows:
        return pd.DataFrame(columns=list(BRACKET_COLUMNS))
    out = pd.DataFrame(rows)
    out["_w"] = out["width"].fillna(np.inf)
    out = out.sort_values(["instance_key", "_w"]).drop_duplicates("instance_key").drop(columns="_w")
    return out.sort_values(["set", "loss_max"]).reset_index(drop=True)[list(BRACKET_COLUMNS)]


def _saa_optima(df: pd.DataFrame) -> dict:
    """instance_key → (SAA optimum, S): a proven optimum of the sample-average
    problem, chosen from the record, never by algorithm name.

    Candidates are the ``optimal`` rows of exact solvers (record column
    ``exact``) that ran on S in-sample scenarios (``scenarios`` set: a
    scenario-free exact solver solves another problem); where the record
    says which optimum a row is a reference for (column ``reference``), only
    ``"saa"`` rows. The row with the most scenarios wins (fewer loosen the
    SAA and lower the cost), then the lowest ``reference_priority``.
    """
    scen = pd.to_numeric(df["scenarios"], errors="coerce") if "scenarios" in df else pd.Series(np.nan, df.index)
    keep = df["is_exact"] & (df["status"] == "optimal") & df["cost"].notna() & scen.notna()
    if "reference" in df:
        keep &= df["reference"] == "saa"
    rows = df[keep].assign(_scen=scen[keep])
    prio = (pd.to_numeric(rows["reference_priority"], errors="coerce") if "reference_priority" in rows
            else pd.Series(np.nan, index=rows.index))
    rows = rows.assign(_prio=prio.fillna(np.inf)).sort_values(["_scen", "_prio"], ascending=[False, True],
                                                              kind="stable")
    return {key: (float(grp["cost"].iloc[0]), finite_or(grp["_scen"].iloc[0]))
            for key, grp in rows.groupby("instance_key", sort=False)}


def bracket_ratio_table(df: pd.DataFrame, brackets: pd.DataFrame | None = None) -> pd.DataFrame:
    """cost/UB and cost/LB of every certified-feasible plan on an instance with a bracket.

    Returns
    -------
    pandas.DataFrame
        :data:`RATIO_COLUMNS`, one row per (instance, algorithm series) plan.
        Plans not certified feasible are listed with NaN ratios (the verdict
        column says why they are not compared); ``cost_over_saa_opt`` is the
        SAA yardstick, kept and labelled.
    """
    brackets = bracket_table(df) if brackets is None else brackets
    if brackets.empty:
        return pd.DataFrame(columns=list(RATIO_COLUMNS))
    saa = _saa_optima(df)
    by_key = brackets.set_index("instance_key")
    plans = df[df["has_plan"] & df["instance_key"].isin(by_key.index) & (df["solver"] != CERTIFIED)]
    rows = []
    for _, r in plans.iterrows():
        b = by_key.loc[r["instance_key"]]
        cost = finite_or(r["cost"])
        verdict = r.get("certified_verdict") or "not evaluated"
        ok = verdict == CERTIFIED_FEASIBLE
        opt, s = saa.get(r["instance_key"], (math.nan, math.nan))
        rows.append({
            "set": b["set"], "loss_max": b["loss_max"], "instance_key": r["instance_key"],
            "algorithm": r["algorithm"], "cost": cost, "certified_verdict": verdict,
            "cost_over_ub": cost / b["ub"] if ok and b["ub"] > 0 else math.nan,
            "cost_over_lb": cost / b["lb"] if ok and b["lb"] > 0 else math.nan,
            "lb_confidence": b["lb_confidence"],
            "cost_over_saa_opt": cost / opt if opt > 0 else math.nan, "saa_scenarios": s,
        })
    if not rows:
        return pd.DataFrame(columns=list(RATIO_COLUMNS))
    return pd.DataFrame(rows).sort_values(["set", "loss_max", "algorithm"]).reset_index(drop=True)


def _claim(claim, yardstick, measured, verdict) -> dict:
    return {"claim": claim, "yardstick": yardstick, "measured": measured, "verdict": verdict}


def _fig56(ratios: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Ratio rows on Figs. 5–6's sets, else on every family (and say so),
    as ``claims.py`` scopes the original verdicts."""
    sub = ratios[ratios["set"].isin(FIG56_SETS)]
    if sub.empty:
        return ratios, "all families (no bracketed AlexNet/MobileNet instance)"
    return sub, "AlexNet/MobileNet sets"


def _depl_rows(df: pd.DataFrame, ratios: pd.DataFrame) -> pd.DataFrame:
    """Ratio rows of the paper's DepL (solver ``depl`` without ``calibrate``)."""
    depl_series = set(df.loc[paper_depl(df), "algorithm"]) if not df.empty else set()
    return ratios[ratios["algorithm"].isin(depl_series)]


def matches_optimum_bracket(df: pd.DataFrame, ratios: pd.DataFrame) -> dict:
    """"DepL virtually matches the optimum", judged on the bracket.

    DepL's true gap g = cost/z* − 1 lies in [cost/UB − 1, cost/LB − 1] (at
    the bracket's confidence; without a UB the lower end is 0, since DepL's
    own plan is certified feasible). ``holds`` when the upper ends meet the
    thresholds of ``claims.py`` (median ≤ 2 %, 90th pct ≤ 5 %), ``does not
    hold`` when even the lower ends miss them, otherwise undecided.
    """
    claim = "Figs. 5–6: DepL virtually matches the optimum"
    yard = ("certified bracket: DepL's certified-feasible plans, gap to z* between cost/UB − 1 "
            "and cost/LB − 1")
    scoped, scope = _fig56(ratios)
    sub = _depl_rows(df, scoped)
    n_all = len(sub)
    sub = sub[sub["cost_over_lb"].notna()]
    if sub.empty:
        why = (f"{n_all} DepL plan(s) on bracketed instances, none certified feasible" if n_all
               else "no DepL plan on an instance with a bracket")
        return _claim(claim, yard, why, UNMEASURED)
    # one observation per distinct instance (its configurations' median)
    per = sub.assign(_hi=sub["cost_over_lb"] - 1.0,
                     _lo=(sub["cost_over_ub"] - 1.0).fillna(0.0)).groupby("instance_key")[["_lo", "_hi"]].median()
    lo, hi = per["_lo"].to_numpy(float), per["_hi"].to_numpy(float)
    # each instance's bracket holds at its confidence: the interval at the union bound
    conf = sub.groupby("instance_key")["lb_confidence"].min().reindex(per.index)
    ci = with_bracket_failures(median_interval(lo, hi), 1.0 - conf.to_numpy(float))
    verdict = median_verdict(ci, MATCH_MEDIAN_GAP)
    conf = float(np.nanmin(sub["lb_confidence"])) if sub["lb_confidence"].notna().any() else math.nan
    txt = (f"{scope}, {len(sub)}/{n_all} DepL plans certified feasible on {ci.n} distinct instances; gap "
           f"to the true optimum: median {ci.text(100, ' %')} ({MEDIAN_STATISTIC}; upper ends valid at "
           f"confidence ≥ {number_text(conf)}; threshold: median ≤ {100 * MATCH_MEDIAN_GAP:g} %); 90th pct "
           f"{100 * float(np.quantile(hi, 0.9)):.2f} % (not judged)")
    if verdict == NOT_DECIDED:
        txt += "; " + undecided_text(ci, MATCH_MEDIAN_GAP)
    else:
        txt += level_caveat(ci)
    return _claim(claim, yard, txt, verdict)


def beats_best_exp_bracket(df: pd.DataFrame, ratios: pd.DataFrame) -> dict:
    """"DepL beats best-exp by over 27 %", on certified-feasible plans only.

    The saving 1 − cost_DepL / cost_best-exp compares two plans directly (no
    optimum needed); the re-judgement keeps only instances where *both* plans
    are certified feasible, and states each one's cost/UB.
    """
    claim = "Figs. 5–6: DepL beats best-exp by over 27 %"
    yard = "paired costs of certified-feasible DepL and best-exp plans (bracket UB for scale)"
    scoped, scope = _fig56(ratios)
    depl = _depl_rows(df, scoped)
    best = scoped[scoped["algorithm"].isin(set(df.loc[df["solver"] == BEST_EXP, "algorithm"]))]
    keys = ["set", "loss_max", "instance_key"]
    a = depl[depl["certified_verdict"] == CERTIFIED_FEASIBLE].groupby(keys)[["cost", "cost_over_ub"]].min()
    b = best[best["certified_verdict"] == CERTIFIED_FEASIBLE].groupby(keys)[["cost", "cost_over_ub"]].min()
    j = a.add_suffix("_depl").join(b.add_suffix("_best"), how="inner")
    if j.empty:
        return _claim(claim, yard, "no instance with a bracket where both DepL and best-exp plans are "
                      "certified feasible", UNMEASURED)
    j["saving"] = 1.0 - j["cost_depl"] / j["cost_best"]
    by_target = j.groupby(level=["set", "loss_max"])["saving"].mean()
    key, best_saving = by_target.idxmax(), float(by_target.max())
    ub_d, ub_b = j["cost_over_ub_depl"].dropna(), j["cost_over_ub_best"].dropna()
    scale = (f"median cost/UB DepL {float(ub_d.median()):.3f}, best-exp {float(ub_b.median()):.3f}"
             if len(ub_d) and len(ub_b) else "no bracket UB on these instances")
    ci = median_interval(j.groupby(level="instance_key")["saving"].median().to_numpy(float))
    txt = (f"{scope}, {ci.n} paired instances: median saving {ci.text(100, ' %', 1)} "
           f"({MEDIAN_STATISTIC}); largest target-mean saving {100 * best_saving:.1f} % "
           f"({key[0]}, ℓmax = {key[1]:g}); {scale} (threshold: median saving ≥ "
           f"{100 * BEST_EXP_SAVING:g} %)")
    neg = ci.negated()
    verdict = median_verdict(neg, -BEST_EXP_SAVING)
    if verdict == NOT_DECIDED:
        txt += "; " + undecided_text(ci, BEST_EXP_SAVING)
    return _claim(claim, yard, txt, verdict)


def rejudged_claims(df: pd.DataFrame, ratios: pd.DataFrame | None = None) -> pd.DataFrame:
    """The two Figs. 5–6 claims re-judged on the bracket (:data:`CLAIM_COLUMNS`)."""
    ratios = bracket_ratio_table(df) if ratios is None else ratios
    if ratios.empty:
        ratios = pd.DataFrame(columns=list(RATIO_COLUMNS))
    return pd.DataFrame([matches_optimum_bracket(df, ratios), beats_best_exp_bracket(df, ratios)],
                        columns=list(CLAIM_COLUMNS))


def bracket_section(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Everything the report's bracket section shows.

    Returns
    -------
    dict
        ``{"brackets": bracket_table, "ratios": bracket_ratio_table,
        "claims": rejudged_claims}``.
    """
    brackets = bracket_table(df)
    ratios = bracket_ratio_table(df, brackets)
    return {"brackets": brackets, "ratios": ratios, "claims": rejudged_claims(df, ratios)}


__all__ = ["bracket_table", "bracket_ratio_table", "rejudged_claims", "bracket_section",
           "matches_optimum_bracket", "beats_best_exp_bracket", "BRACKET_COLUMNS", "RATIO_COLUMNS",
           "CLAIM_COLUMNS", "UNDECIDED", "CERTIFIED", "CERTIFIED_FEASIBLE"]
