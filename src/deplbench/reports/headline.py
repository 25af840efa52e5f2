"""The report at a glance: the box above the table of contents.

Per paper set (else per family), one card: every algorithm's cost ratio to
the *proven* reference of its instances (:mod:`deplbench.reports.reference`:
the exact chance-constrained optimum where ``milp-exact`` ran, else the
certified bracket as cost/UB–cost/LB; a closed-loop policy against the
adaptive optimum), the share of its plans proven or certified feasible
(exact verdict first, then the certified verdict; the Monte Carlo estimate
as cross-check), a colour-coded verdict, and the ratio to the SAA optimum in
a column labelled as such. Ratios below 1 and plans that miss ℓmax are
flagged. Below the cards, every claim with its colour-coded verdict and the
first statement of what was measured, never cut. Every number is also in
``tables/headline.csv`` and in the sections below.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from deplbench.jsonio import level_percent, number_text
from deplbench.reports.data import PAPER_SETS
from deplbench.reports.elements import Section, Table
from deplbench.reports.median import (
    MEDIAN_LEVEL,
    MEDIAN_METHOD_SHORT,
    MedianInterval,
    median_interval,
    with_bracket_failures,
)
from deplbench.reports.reference import (
    ADAPTIVE,
    CERTIFIED,
    CERTIFIED_FEASIBLE,
    EXACT,
    PROVEN_FEASIBLE,
    RATIO_TOL,
    per_instance,
    plan_ratios,
    references,
    series_runs,
)
from deplbench.reports.styles import SeriesInfo, ordered

HEADLINE_COLUMNS = ("set", "algorithm", "plans", "runs", "no_plan", "instances", "reference", "with_reference",
                    "ratio_ref_median", "ratio_ref_min", "ratio_ref_max", "ratio_lb_median",
                    "ratio_ci_low", "ratio_ci_high", "ratio_adaptive_median", "ratio_adaptive_level",
                    "below_ub", "below_lb", "proven_feasible", "certified_feasible",
                    "mc_met", "evaluated", "missed", "ratio_saa_median", "vs_reference",
                    "feasible", "verdict", "cost_over_saa_optimum", "ratio_ci_level", "ratio_ci_method")

#: What a card shows, in order (the ratio and the verdict first: on a phone
#: the rows stack, and these must be read without scrolling).
GLANCE_COLUMNS = ("algorithm", "vs_reference", "verdict", "feasible", "cost_over_saa_optimum")

#: Display headers of :data:`GLANCE_COLUMNS` (html.py).
GLANCE_HEADERS = {"algorithm": "algorithm", "vs_reference": "cost / reference",
                  "verdict": "verdict", "feasible": "proven, certified · MC met",
                  "cost_over_saa_optimum": "SAA ratio"}

CLAIM_GLANCE_COLUMNS = ("claim", "verdict", "measured")

#: Verdict classes of the algorithm rows (html.py colours them; "feasible k/N" is
#: green only when k = N, every run having returned a plan).
ALL_FEASIBLE, SOME_MISS, NO_PLAN = "feasible", "misses ℓmax", "no plan"

_KIND_TEXT = {EXACT: "exact optimum", CERTIFIED: "certified bracket",
              ADAPTIVE: "adaptive optimum", "": "no proven reference"}


def _groups(*frames: pd.DataFrame) -> list[str]:
    """Paper sets first (in :data:`PAPER_SETS` order), else families."""
    present = {g for f in frames for g in f["group"]}
    sets = [s for s in PAPER_SETS if s in present]
    return sets or sorted(present)


def _fmt(x: float) -> str:
    return "–" if not np.isfinite(x) else f"{x:.3f}"


def _ci_text(ci: MedianInterval | None) -> str:
    """`` [1.010, 1.035]``: the order-statistic interval on the median over instances
    (level ≥ 95 %, stated in the card's caption and in ``ratio_ci_level``)."""
    if ci is None or ci.n == 0:
        return ""
    if not ci.exists:
        return " [n < 6]"
    # an upper end of +inf: brackets without a positive LB; NaN level: a bracket states no confidence
    high = _fmt(ci.high) if math.isfinite(ci.high) else "∞"
    return f" [{_fmt(ci.low)}, {high}]" + (" (level not computable)" if math.isnan(ci.level) else "")


def _no_plan_text(no_plan: int) -> str:
    return f" ({no_plan} no plan)" if no_plan else ""


def _vs_reference(kind: str, ub: np.ndarray, lb: np.ndarray, n: int, inst: int,
                  below_ub: int, below_lb: int, ci: MedianInterval | None = None, no_plan: int = 0) -> str:
    """"1.021 [1.010, 1.035]" (exact), "1.021–1.090 […]" (cost/UB–cost/LB),
    the 95 % interval on the median over instances, "on n/N" (n instances with
    that reference of the N the series ran on) and the runs that returned no
    plan, flags appended."""
    if not ub.size:
        return "no reference" + (f" on 0/{inst}" if no_plan else "") + _no_plan_text(no_plan)
    mu = float(np.median(ub))
    ml = float(np.median(lb)) if lb.size else math.nan
    same = not np.isfinite(ml) or abs(ml - mu) <= RATIO_TOL * mu
    # one number when the two ends agree to the printed precision ("1.783", not "1.783–1.783")
    txt = (_fmt(mu) if same or _fmt(ml) == _fmt(mu) else f"{_fmt(mu)}–{_fmt(ml)}") + _ci_text(ci)
    if kind == ADAPTIVE:
        txt += " (adaptive)"
    txt += f" on {n}/{inst}" + _no_plan_text(no_plan)
    # below the proven LB: that plan cannot be feasible (for an exact optimum
    # solved to optimality LB = UB = the optimum); below UB only: cheaper than
    # the best plan found, which proves nothing about its own feasibility
    # against the adaptive optimum the UB is an upper confidence bound on one certified policy's
    # mean cost, and a policy is judged by its simulated mean: below it is expected (the
    # reference's own policy always is) and proves nothing, so only "below LB" is flagged there
    if below_lb:
        txt += f" ⚑ {below_lb} below opt." if kind == EXACT and same else f" ⚑ {below_lb} below LB"
    elif below_ub and kind != ADAPTIVE:
        txt += f" ⚑ {below_ub} below UB"
    return txt


def joint_level(keys, kind: str, conf: dict | None) -> float:
    """The level at which a statement resting on every listed instance's ``kind`` bracket holds:
    1 − Σ (1 − confidence) over them (union bound; each bracket fails with probability at most
    1 − its confidence), at least 0; NaN when a bracket states no confidence (unknown failure
    probability) or there is none."""
    keys = list(keys)
    if not keys or not conf:
        return math.nan
    alphas = np.array([1.0 - conf.get((k, kind), math.nan) for k in keys], float)
    if not np.isfinite(alphas).all():
        return math.nan
    return max(0.0, 1.0 - float(alphas.sum()))


def _row(name: str, alg: str, ga: pd.DataFrame, conf: dict | None = None,
         runs: pd.DataFrame | None = None) -> dict:
    """One card row: ``ga`` the series' plans in the group, ``runs`` all its runs there
    (:func:`~deplbench.reports.reference.series_runs`; None: the plans are all its runs)."""
    # N counts every instance the series ran on, and every run: one that returned no plan
    # stays in the denominators (else "feasible 9/9" hides a 10th run without a plan)
    no_plan = int((~runs["has_plan"].astype(bool)).sum()) if runs is not None else 0
    keys = set(ga["instance_key"]) | (set(runs["instance_key"]) if runs is not None else set())
    inst = len(keys)
    kinds = ga.loc[ga["reference"] != "", "reference"]
    kind = kinds.value_counts().index[0] if len(kinds) else ""
    gk = ga[ga["reference"] == kind] if kind else ga.iloc[0:0]
    ub, lb = per_instance(gk, "ratio_ub"), per_instance(gk, "ratio_lb")
    # one (cost/UB, cost/LB) pair per distinct instance: the true ratio lies between
    pairs = (gk.groupby("instance_key")[["ratio_ub", "ratio_lb"]].median() if len(gk)
             else pd.DataFrame(columns=["ratio_ub", "ratio_lb"]))
    # an instance whose reference has no positive LB has no upper end (cost/LB = +inf)
    ci = median_interval(pairs["ratio_ub"].to_numpy(float),
                         pairs["ratio_lb"].fillna(math.inf).to_numpy(float)) if len(pairs) else None
    if ci is not None and conf and kind in (CERTIFIED, ADAPTIVE):
        # each instance's bracket holds at its confidence: the interval at the union bound
        ci = with_bracket_failures(ci, [1.0 - conf.get((k, kind), math.nan) for k in pairs.index])
    below_ub = int((gk["ratio_ub"] < 1 - RATIO_TOL).sum())
    below_lb = int((gk["ratio_lb"] < 1 - RATIO_TOL).sum())
    proven = int((ga["feasibility"] == PROVEN_FEASIBLE).sum())
    cert = int((ga["feasibility"] == CERTIFIED_FEASIBLE).sum())
    policy_ok = int(ga["feasibility"].str.startswith("certified P(success)").sum())
    ev = ga["mc_met"].dropna()
    missed = int(ga["missed"].sum())
    saa = per_instance(ga, "ratio_saa")
    adaptive = (per_instance(ga, "ratio_adaptive") if "ratio_adaptive" in ga
                else np.array([], float))
    # the median of per-instance lower ends is a lower end of the median ratio when every
    # adaptive bracket's UB holds: jointly, by the union bound over those brackets
    adaptive_level = (joint_level(ga.loc[ga["ratio_adaptive"].notna(), "instance_key"].unique(), ADAPTIVE, conf)
                      if adaptive.size else math.nan)
    n = len(ga)
    total = n + no_plan                  # every run of the series in this group
    ok = proven + cert + policy_ok
    if missed:
        verdict = f"{SOME_MISS} {missed}/{total}"
    elif n == 0:
        verdict = f"{NO_PLAN} {no_plan}/{total}"
    elif ok == n:
        verdict = f"{ALL_FEASIBLE} {n}/{total}"
    else:
        verdict = f"unproven {n - ok}/{total}"
    mc = f" · MC {int(ev.sum())}/{len(ev)}" if len(ev) else ""
    parts = [f"{proven} proven"] * bool(proven) + [f"{cert} cert."] * bool(cert)
    feasible = ((" + ".join(parts) or "0") + f"/{total}" if not policy_ok
                else f"{policy_ok}/{total} P(success) ≥ ω cert.") + mc
    saa_txt = "–" if not saa.size else _fmt(float(np.median(saa)))
    return {
        "set": name, "algorithm": alg, "plans": n, "runs": total, "no_plan": no_plan, "instances": inst,
        "reference": kind,
        "with_reference": int(gk["instance_key"].nunique()),
        "ratio_ref_median": float(np.median(ub)) if ub.size else math.nan,
        "ratio_ref_min": float(ub.min()) if ub.size else math.nan,
        "ratio_ref_max": float(ub.max()) if ub.size else math.nan,
        "ratio_lb_median": float(np.median(lb)) if lb.size else math.nan,
        "ratio_ci_low": ci.low if ci is not None else math.nan,
        "ratio_ci_high": ci.high if ci is not None else math.nan,
        "ratio_ci_level": ci.level if ci is not None and math.isfinite(ci.low) else math.nan,
        "ratio_ci_method": ((ci.level_note or f"{MEDIAN_METHOD_SHORT} on the median over distinct instances, "
                             f"nominal {level_percent(MEDIAN_LEVEL, 0)} % (ratio_ci_level: exact coverage)")
                            + "; per instance the ends cost/UB, cost/LB" if ci is not None and ci.n else ""),
        "ratio_adaptive_median": float(np.median(adaptive)) if adaptive.size else math.nan,
        "ratio_adaptive_level": adaptive_level,
        "below_ub": below_ub, "below_lb": below_lb, "proven_feasible": proven,
        "certified_feasible": cert, "mc_met": int(ev.sum()), "evaluated": len(ev),
        "missed": missed, "ratio_saa_median": float(np.median(saa)) if saa.size else math.nan,
        "vs_reference": _vs_reference(kind, ub, lb, int(gk["instance_key"].nunique()), inst,
                                      below_ub, below_lb, ci, no_plan),
        "feasible": feasible, "verdict": verdict, "cost_over_saa_optimum": saa_txt}


def headline_table(plans: pd.DataFrame, styles: dict[str, SeriesInfo],
                   refs: pd.DataFrame | None = None, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (group, series): ratios to the proven reference, feasibility.

    ``runs`` (:func:`~deplbench.reports.reference.series_runs`) are every run,
    with a plan or not: ``runs`` counts them, ``no_plan`` those that returned
    none, ``instances`` the distinct instances the series ran on (N of "on
    n/N"); the verdict and feasibility counts are out of ``runs``, so a run
    without a plan is never dropped from them. Without ``runs`` the plans are
    taken as every run.

    Ratios are medians over distinct instances (a series' configurations on
    one instance count once). ``ratio_ref_*`` = cost / UB of the reference
    (the exact optimum, the bracket's best certified plan, or the adaptive
    optimum for a policy), ``ratio_lb_median`` = cost / LB (an upper bound on
    the true ratio); ``ratio_ci_low``/``ratio_ci_high`` = the exact
    order-statistic interval on the median ratio over distinct instances
    (:func:`~deplbench.reports.median.median_interval`; ±inf below 6
    instances), of nominal level 95 %, exact coverage ``ratio_ci_level``
    (with ``refs``, against certified or adaptive brackets: the union bound
    over the brackets' confidence, :func:`~deplbench.reports.median.with_bracket_failures`),
    method ``ratio_ci_method``; ``ratio_adaptive_median`` = the median of a
    static plan's cost / the adaptive bracket's UB (an upper confidence
    bound), so a lower end of its ratio to the adaptive optimum ("at least"),
    where one exists (in this table only: the cards must fit the first screen),
    holding jointly at ``ratio_adaptive_level`` = 1 − Σ (1 − confidence) over
    those brackets (union bound, :func:`joint_level`: 50 % for ten at 0.95),
    not at each bracket's confidence;
    ``below_ub``/``below_lb`` count plans cheaper than UB /
    than the proven LB; ``proven_feasible`` (exact verdict),
    ``certified_feasible`` (Clopper–Pearson verdict), ``mc_met`` of
    ``evaluated`` (Monte Carlo cross-check), ``missed`` (proven infeasible,
    or above ℓmax by Monte Carlo where no proof decides; a policy below ω);
    ``ratio_saa_median`` = cost / SAA optimum (S scenarios), the sample's
    optimum and not the problem's.
    """
    if plans.empty and (runs is None or runs.empty):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in HEADLINE_COLUMNS})
    conf = ({(k, kd): float(c) for k, kd, c in zip(refs["instance_key"], refs["kind"], refs["confidence"])}
            if refs is not None and not refs.empty else {})
    rows = []
    for name in _groups(plans, *([runs] if runs is not None else [])):
        g = plans[plans["group"] == name]
        gr = runs[runs["group"] == name] if runs is not None else None
        algs = list(g["algorithm"]) + (list(gr["algorithm"]) if gr is not None else [])
        for alg in ordered(algs, styles):
            rows.append(_row(name, alg, g[g["algorithm"] == alg], conf,
                             gr[gr["algorithm"] == alg] if gr is not None else None))
    return pd.DataFrame(rows, columns=list(HEADLINE_COLUMNS))


def _adaptive_levels_text(table: pd.DataFrame) -> str:
    """`` Here: 50.0 % (10 brackets).``: the joint levels of this table's ratio_adaptive_median."""
    if table.empty or "ratio_adaptive_level" not in table:
        return ""
    lv = table.loc[table["ratio_adaptive_median"].notna(), "ratio_adaptive_level"].astype(float)
    if lv.empty:
        return ""
    if lv.isna().any():
        return " Here: not computable for some rows (a bracket states no confidence)."
    lo, hi = float(lv.min()), float(lv.max())
    return (f" Here: ≥ {level_percent(lo)} %." if abs(hi - lo) < 1e-12
            else f" Here: ≥ {level_percent(lo)} % to ≥ {level_percent(hi)} % by row.")


def _reference_line(name: str, g: pd.DataFrame, refs: pd.DataFrame) -> str:
    """What the card's ratios are against, with its sources and confidences."""
    keys = set(g["instance_key"])
    parts = []
    for kind in (EXACT, CERTIFIED, ADAPTIVE):
        r = refs[(refs["kind"] == kind) & refs["instance_key"].isin(keys)]
        if r.empty:
            continue
        src = ", ".join(sorted(set(r["source"])))
        conf = r["confidence"].dropna()
        c = f", confidence ≥ {number_text(conf.min())}" if len(conf) else ""
        if kind == EXACT:
            # an exact solver stopped within a relative gap proves its optimum only to that gap
            with np.errstate(divide="ignore", invalid="ignore"):
                gap = ((r["ub"] - r["lb"]) / r["ub"].abs()).to_numpy(float)
            gap = gap[np.isfinite(gap)]
            open_ = int((gap > 1e-9).sum())
            if open_:
                c += (f" ({open_} of them proven only within a relative gap (UB − LB)/UB, the largest "
                      f"{float(gap.max()):.2g})")
        parts.append(f"{_KIND_TEXT[kind]} ({src}) on {r['instance_key'].nunique()}/"
                     f"{len(keys)} instances{c}")
    return "Reference: " + ("; ".join(parts) if parts else "none proven on these instances") + "."


def first_clause(text: str) -> str:
    """The text up to its first "; " outside parentheses (never cut inside one)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith("; ", i):
            return text[:i]
    return text


def claims_glance(claims: pd.DataFrame | None) -> pd.DataFrame:
    """One row per claim: the claim, its verdict, the first whole statement
    of what was measured. Rows marked superseded
    (:data:`~deplbench.reports.adaptive.SUPERSEDED`) are left out."""
    if claims is None or claims.empty:
        return pd.DataFrame(columns=list(CLAIM_GLANCE_COLUMNS))
    from deplbench.reports.adaptive import SUPERSEDED

    claims = claims[~claims["claim"].astype(str).str.contains(SUPERSEDED, regex=False)]
    return pd.DataFrame({"claim": claims["claim"].astype(str),
                         "verdict": claims["verdict"].astype(str),
                         "measured": [first_clause(str(m)) for m in claims["measured"]]},
                        columns=list(CLAIM_GLANCE_COLUMNS))


def headline(df: pd.DataFrame, claims: pd.DataFrame | None,
             styles: dict[str, SeriesInfo]) -> Section:
    """The at-a-glance box as a :class:`Section` (id ``glance``).

    Elements: one :class:`Table` ``glance_<set>`` per card (columns
    :data:`GLANCE_COLUMNS`, caption = the reference it is against), the
    claims (``glance_claims``), and the full numbers (``headline``).
    """
    box = Section("glance", "At a glance",
                  "Ratio = cost / the proven reference of the same instance: the exact "
                  "chance-constrained optimum, else the certified bracket shown as "
                  "cost/UB–cost/LB (the true ratio lies between, at the stated "
                  "confidence); a closed-loop policy's mean cost / the adaptive optimum. "
                  f"Medians over distinct instances [interval: exact binomial order-statistic interval "
                  f"on the median over the n distinct instances, level ≥ {level_percent(MEDIAN_LEVEL, 0)} % (its exact "
                  "coverage, e.g. 99.2 % at n = 8 and 97.8 % at n = 10, in headline.csv ratio_ci_level; against "
                  "certified or adaptive brackets, which hold only at their confidence, the lower union-bound "
                  "level stated there); none for n < 6], on n/N: n instances with that reference of the N "
                  "the series ran on, (k no plan): k of its runs returned no plan; the verdict and the proven "
                  "and certified counts are out of all its runs (MC: out of the plans evaluated). "
                  "Feasible = proven (exact "
                  "probabilities) or certified (Clopper–Pearson); MC = the Monte Carlo "
                  "cross-check. The SAA ratio divides by the optimum of the MILP's own "
                  "scenario sample, which is not a bound on the problem's optimum. "
                  "Flags: ⚑ below opt. / below LB = cheaper than the exact optimum / a "
                  "proven lower bound, so that plan cannot be feasible; ⚑ below UB = "
                  "cheaper than the best certified plan (feasible or not: see its verdict; "
                  "not flagged against the adaptive optimum).")
    plans = plan_ratios(df)
    refs = references(df)
    table = headline_table(plans, styles, refs, series_runs(df))
    if table.empty:
        box.missing("No plan in this store: nothing to summarise.")
    else:
        for name in table["set"].drop_duplicates():
            rows = table[table["set"] == name]
            title = f"{name} ({PAPER_SETS[name]})" if name in PAPER_SETS else str(name)
            box.add(Table("glance_" + re.sub(r"[^A-Za-z0-9]", "_", str(name)), title, rows, GLANCE_COLUMNS,
                          _reference_line(name, plans[plans["group"] == name], refs)))
    box.add(Table("glance_claims", "Claims", claims_glance(claims), CLAIM_GLANCE_COLUMNS,
                  "Colour: green holds, red does not hold, grey not measured or "
                  "not decided. The whole reasoning is in section 5."))
    box.add(Table("headline", "Every number of the cards", table, HEADLINE_COLUMNS,
                  "ratio_ci_low, ratio_ci_high: the interval on the median ratio over distinct instances "
                  "(ratio_ci_method), exact coverage ratio_ci_level. ratio_adaptive_median: median of a static "
                  "plan's cost / the adaptive bracket's UB, an upper confidence bound on the adaptive optimum, so "
                  "a lower end of the ratio to it: the plan costs at least that many times the adaptive optimum "
                  "(median over instances) when every one of those brackets holds, i.e. at the joint level "
                  "ratio_adaptive_level = 1 − Σ (1 − confidence) (union bound; 50 % for 10 brackets at 0.95), "
                  "not at one bracket's confidence." + _adaptive_levels_text(table), collapse=True))
    return box
