"""Matched-risk comparison with the adaptive optimum (report section 6).

A policy that observes the loss (closed-loop PACT, receding DepL, a plan
stopped at ℓmax) is judged against the *adaptive optimum*: the least
expected cost of any closed-loop policy with P(success) ≥ ω, bracketed by
``adaptive-opt`` records (``reference == "adaptive"``;
:mod:`deplbench.formulations.adaptive`): a proven lower bound LB(ω′) for
every level ω′ of its cost–risk frontier, and UB at ω, the record's cost:
the one-sided empirical-Bernstein upper confidence bound (Maurer & Pontil
2009) on the certified policy's mean cost at level 1 − (1 − c)/2, which
holds jointly with the one-sided Clopper–Pearson lower bound on that
policy's P(success) at the record's confidence c (union bound; c = 0.95 by
default: 97.5 % each, 95 % jointly; :func:`ub_statement`). UB is a bound
at that confidence, not a sample mean (the record's
``diagnostics["cost_mean"]`` is the mean). Every closed-loop series of a
record on the same instance (same ``instance_key``) becomes a point
(P(success), mean cost) with

* ``lb_own`` = LB(p_low): the frontier's bound at the largest level ≤ p_low,
  p_low = ``p_success_low``, the lower end of the series' two-sided
  Clopper–Pearson interval at level ``ci_level`` (a one-sided lower bound
  at (1 + ci_level)/2). The optimum does not decrease with the level, so
  with that confidence ``lb_own`` ≤ the optimum at the series' true
  P(success); NaN when the series has no interval.
* ``ratio_own`` = cost / ``lb_own``: at that same confidence ≥ cost / (the
  optimum at the series' true P(success)). The cost is the series' sample
  mean, an estimate, so ``ratio_own`` is an estimate too: conservative in
  the success level, not in the cost.
* ``ratio_omega_low``, ``ratio_omega_high`` = cost / UB(ω), cost / LB(ω):
  the ratio to the optimum at ω lies between them at the bracket's joint
  confidence (UB is a policy certified feasible at ω).

The price of adaptivity is the exact static optimum (records with
``reference == "exact-static"``; else the certified static bracket's UB,
``"certified-static"``, labelled so) divided by the adaptive optimum, given
as [static/UB, static/LB].

References
----------
PACT paper Sec. VI-C (Fig. 6 left; its "optimum" is found with the true
loss evolution); DepL eqs. (2)–(4); A. Maurer and M. Pontil, "Empirical
Bernstein bounds and sample variance penalization", COLT 2009, Thm 4.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from deplbench.formulations.evaluation.binomial import clopper_pearson_lower
from deplbench.jsonio import level_percent, number_text
from deplbench.reports.data import finite_or
from deplbench.reports.figures import COST_AXIS, add_legend, new_figure
from deplbench.reports.styles import info_for, ordered

ADAPTIVE = "adaptive"
STATIC_REFS = ("exact-static", "certified-static")

MATCHED_COLUMNS = ("set", "loss_max", "algorithm", "series", "p_success", "p_success_low", "ci_level", "meets_omega",
                   "cost_mean", "lb_own", "ratio_own", "lb_omega", "ub_omega", "ratio_omega_low",
                   "ratio_omega_high", "instance_key", "runs", "successes", "cost_sem", "p_success_method",
                   "ratio_omega_level", "ratio_omega_method")
PRICE_COLUMNS = ("set", "loss_max", "static_optimum", "static_reference", "adaptive_lb", "adaptive_ub",
                 "price_low", "price_high", "price_level", "price_method")
SERIES = ("policy", "plan_stopped")
#: How [ratio_omega_low, ratio_omega_high] holds (column ``ratio_omega_method``).
RATIO_OMEGA_METHOD = ("cost_mean/UB, cost_mean/LB: LB proven, UB a one-sided empirical-Bernstein bound at the "
                      "adaptive-opt record's joint confidence (ratio_omega_level); cost_mean is a sample mean")


def _pct(x: float) -> str:
    """A level in percent, rounded down to two decimals, trailing zeros dropped: "97.5 %"."""
    text = level_percent(x, 2)
    return f"{text.rstrip('0').rstrip('.') if '.' in text else text} %"


def record_confidence(diagnostics, params) -> float:
    """An adaptive-opt record's joint confidence c (its UB and P(success) certificate together):
    ``diagnostics["confidence"]``, else the parameter ``confidence``; NaN when it states
    none (its level is then not computable, never a default)."""
    c = (diagnostics if isinstance(diagnostics, dict) else {}).get("confidence")
    return finite_or((params if isinstance(params, dict) else {}).get("confidence") if c is None else c)


def _record_confidences(df: pd.DataFrame | None) -> list[float]:
    if df is None or df.empty or "reference" not in df or "diagnostics_d" not in df:
        return []
    a = df[df["reference"] == ADAPTIVE]
    params = a["params_d"] if "params_d" in a else [None] * len(a)
    return [record_confidence(d, p) for d, p in zip(a["diagnostics_d"], params)]


def bracket_confidences(df: pd.DataFrame) -> list[float]:
    """The distinct joint confidences the adaptive-opt records in ``df`` state (sorted)."""
    return sorted({c for c in _record_confidences(df) if math.isfinite(c)})


def ub_statement(df: pd.DataFrame | None = None) -> str:
    """What an adaptive-opt record's UB is, with its method and level (captions, column notes).

    The level is read from the records' joint confidence c (one value: stated
    as a number; several or none: as 1 − (1 − c)/2 with the values). A record
    that states no confidence has a level that is not computable, never an
    assumed one. :mod:`deplbench.formulations.adaptive`, "Certified upper bound".
    """
    confs = bracket_confidences(df) if df is not None else []
    unstated = sum(math.isnan(c) for c in _record_confidences(df))
    if len(confs) == 1 and not unstated:
        c = confs[0]
        level = f"level {_pct(1 - (1 - c) / 2)}, {_pct(c)} jointly"
    else:
        given = [("c = " + ", ".join(f"{c:g}" for c in confs)) if confs else "",
                 f"{unstated} record(s) state no c: level not computable" if unstated else "",
                 "" if confs or unstated else "the parameter confidence each record states"]
        level = f"level 1 − (1 − c)/2 for the record's confidence c ({'; '.join(g for g in given if g)}), c jointly"
    return ("UB = the one-sided empirical-Bernstein upper confidence bound (Maurer & Pontil 2009) on the "
            f"certified adaptive policy's mean cost, at {level} with the one-sided Clopper–Pearson lower bound "
            "on its P(success) (union bound); a bound, not a sample mean")


def stated_levels(levels) -> tuple[list[float], int]:
    """The distinct finite levels the records state (sorted) and how many records state none."""
    vals = [None if x is None else float(x) for x in levels]
    lv = sorted({x for x in vals if x is not None and math.isfinite(x)})
    return lv, sum(x is None or not math.isfinite(x) for x in vals)


def levels_text(levels, column: str = "ci_level") -> str:
    """The level the records state, for a caption: the one level, or "levels differ" with
    each; never an assumed default (a record that states none is counted as such)."""
    lv, none = stated_levels(levels)
    missing = f"{none} record(s) state no level" if none else ""
    if len(lv) == 1:
        return f"level {number_text(lv[0])}" + (f" ({missing})" if missing else "")
    if lv:
        return (f"levels differ ({column}: " + ", ".join(number_text(x) for x in lv)
                + (f"; {missing}" if missing else "") + ")")
    return f"level {column} (" + (missing or "no record to state one") + ")"


def ci_level_text(levels) -> str:
    """The level of the closed-loop series' two-sided Clopper–Pearson intervals, for a caption:
    the level the records state (:func:`levels_text`)."""
    lv, _ = stated_levels(levels)
    if len(lv) == 1:
        return f"{levels_text(levels)} (its lower end a one-sided {_pct((1 + lv[0]) / 2)} lower bound)"
    return f"{levels_text(levels)} (the lower end a one-sided (1 + ci_level)/2 lower bound)"


def _set_of(row) -> str:
    return row["paper_set"] if row.get("paper_set") else str(row.get("family") or "")


def adaptive_rows(df: pd.DataFrame) -> dict:
    """instance_key → the adaptive-opt bracket of that instance.

    Keys ``lb``, ``ub``, ``frontier`` [(ω′, LB)], ``p_success_lo``, ``omega``,
    ``p_success`` of the record at the instance's own ω (without one: the
    frontier's bound at ω and the cheapest policy certified at ≥ ω, NaN
    when none; a stricter level's LB is no bound at ω),
    and ``records``: every adaptive-opt record of the instance (several
    target levels, parameter ``omega``) as dicts with ``omega`` (its target),
    ``lb``, ``ub``, ``p_success_lo``, ``certified``. ``frontier`` merges the
    frontiers of every record and is made monotone: a bound at a level is a
    bound at every stricter one (the optimum does not decrease with the level).
    """
    out: dict = {}
    if df.empty or "reference" not in df:
        return out
    for _, r in df[(df["reference"] == ADAPTIVE) & df["cost"].notna() & df["lower_bound"].notna()].iterrows():
        d = r["diagnostics_d"] if isinstance(r.get("diagnostics_d"), dict) else {}
        target = float(d.get("omega", r["omega"]))
        p_lo = d.get("p_success_lo", math.nan)
        p_lo = float(p_lo) if p_lo is not None else math.nan
        rec = {"omega": target, "lb": float(r["lower_bound"]), "ub": float(r["cost"]), "p_success_lo": p_lo,
               "p_success": d.get("p_success", math.nan),
               "certified": bool(d.get("certified", p_lo >= target)),
               "confidence": record_confidence(d, r.get("params_d")),
               "frontier": [(float(f["omega"]), float(f["lower_bound"])) for f in d.get("frontier") or []
                            if f.get("lower_bound") is not None] + [(target, float(r["lower_bound"]))]}
        e = out.setdefault(r["instance_key"], {"records": [], "omega": float(r["omega"])})
        e["records"].append(rec)
        if abs(target - float(r["omega"])) < 1e-12 and "ub" not in e:
            e.update(lb=rec["lb"], ub=rec["ub"], p_success_lo=rec["p_success_lo"], p_success=rec["p_success"],
                     confidence=rec["confidence"])
    for e in out.values():
        merged: list = []
        best = -math.inf
        for w, lb in sorted(pt for rec in e["records"] for pt in rec["frontier"]):
            best = max(best, lb)
            if merged and merged[-1][0] == w:
                merged[-1] = (w, best)
            else:
                merged.append((w, best))
        e["frontier"] = merged
        if "ub" not in e:
            # only records at stricter levels: their LB bounds another optimum; the
            # frontier's bound at ω and a policy certified at ≥ ω still hold at ω
            lb, ub, lvl = matched_bracket(e, e["omega"])
            conf = [rec["confidence"] for rec in e["records"] if rec["ub"] == ub]
            e.update(lb=lb, ub=ub, p_success_lo=lvl, p_success=math.nan,
                     confidence=min(conf) if conf else math.nan)
    return out


def stricter_level_series(df: pd.DataFrame) -> set[str]:
    """Series (``algorithm`` labels) whose every adaptive-opt record targets a
    level other than its instance's ω (parameter ``omega``: the matched-risk
    brackets). A figure at ω leaves them out; :func:`pact_matched_table` uses them."""
    if df.empty or "reference" not in df:
        return set()
    a = df[df["reference"] == ADAPTIVE]
    other: dict[str, bool] = {}
    for alg, d, om in zip(a["algorithm"], a["diagnostics_d"], a["omega"]):
        t = d.get("omega") if isinstance(d, dict) else None
        off = t is not None and abs(float(t) - float(om)) > 1e-12
        other[alg] = other.get(alg, True) and off
    return {alg for alg, off in other.items() if off}


def lb_at(frontier, p: float) -> float:
    """The frontier's proven bound at level p: the best bound at any level ω′ ≤ p (NaN when none)."""
    ok = [lb for w, lb in frontier if w <= p + 1e-12]
    return max(ok) if ok else math.nan


def matched_bracket(a: dict, level: float) -> tuple[float, float, float]:
    """(LB, UB, UB's certified level) of the adaptive optimum at P(success) ≥ ``level``.

    LB: :func:`lb_at` on the merged frontier. UB: the least upper bound of an
    adaptive-opt record whose policy is certified at a level ≥ ``level`` (that
    policy is then feasible at ``level``); NaN when no record reaches it.
    """
    ubs = [(rec["ub"], rec["p_success_lo"]) for rec in a["records"]
           if rec["certified"] and rec["p_success_lo"] >= level - 1e-12]
    ub, lvl = min(ubs) if ubs else (math.nan, math.nan)
    return lb_at(a["frontier"], level), ub, lvl


def matched_risk_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per closed-loop series on an instance that has an adaptive bracket."""
    adap = adaptive_rows(df)
    rows = []
    if adap and "closed_loop_d" in df:
        for _, r in df[df["instance_key"].isin(list(adap))].iterrows():
            cl = r["closed_loop_d"] if isinstance(r["closed_loop_d"], dict) else {}
            a = adap[r["instance_key"]]
            for series in SERIES:
                s = cl.get(series)
                if not isinstance(s, dict) or "cost" not in s:
                    continue
                p, cost = float(s["p_success"]), float(s["cost"]["mean"])
                low = (s.get("p_success_ci") or [math.nan])[0]
                low = float(low) if low is not None else math.nan
                # at the certified lower end, not the point estimate: LB(low) ≤ the optimum at
                # the true P(success) whenever that is ≥ low (the optimum is monotone in the level)
                own = lb_at(a["frontier"], low) if math.isfinite(low) else math.nan
                level = s.get("confidence", cl.get("confidence"))      # the series' own, else the simulation's
                rows.append({"set": _set_of(r), "loss_max": r["loss_max"], "algorithm": r["algorithm"],
                             "series": series, "p_success": p, "p_success_low": low,
                             "ci_level": float(level) if level is not None else math.nan,
                             "meets_omega": bool(low >= a["omega"]), "cost_mean": cost, "lb_own": own,
                             "ratio_own": cost / own if own > 0 else math.nan, "lb_omega": a["lb"],
                             "ub_omega": a["ub"], "ratio_omega_low": cost / a["ub"],
                             "ratio_omega_high": cost / a["lb"] if a["lb"] > 0 else math.nan,
                             "instance_key": r["instance_key"],
                             "runs": finite_or(s.get("runs")), "successes": finite_or(s.get("successes")),
                             "cost_sem": finite_or(s.get("cost_sem")),
                             "p_success_method": str(s.get("p_success_method") or ""),
                             "ratio_omega_level": a.get("confidence", math.nan),
                             "ratio_omega_method": RATIO_OMEGA_METHOD})
    t = pd.DataFrame(rows, columns=list(MATCHED_COLUMNS))
    return t.sort_values(["set", "loss_max", "algorithm", "series"]).reset_index(drop=True) if rows else t


def price_of_adaptivity(df: pd.DataFrame) -> pd.DataFrame:
    """Static optimum ÷ adaptive optimum per instance with both (exact-static preferred)."""
    adap = adaptive_rows(df)
    rows = []
    for key, a in adap.items():
        g = df[(df["instance_key"] == key) & df["reference"].isin(STATIC_REFS) & df["cost"].notna()
               & df["status"].isin(("optimal", "feasible"))]
        if g.empty:
            continue
        g = g.assign(_o=g["reference"].map({"exact-static": 0, "certified-static": 1})).sort_values(["_o", "cost"])
        s = g.iloc[0]
        ref = "exact-static" if s["reference"] == "exact-static" else "certified-static (UB of its bracket)"
        st = float(s["cost"])
        rows.append({"set": _set_of(s), "loss_max": s["loss_max"], "static_optimum": st,
                     "static_reference": ref, "adaptive_lb": a["lb"], "adaptive_ub": a["ub"],
                     "price_low": st / a["ub"], "price_high": st / a["lb"] if a["lb"] > 0 else math.nan,
                     "price_level": a.get("confidence", math.nan),
                     "price_method": ("static/UB, static/LB: LB proven, UB a one-sided empirical-Bernstein bound "
                                      "at the adaptive-opt record's joint confidence (price_level)"
                                      + ("" if ref == "exact-static" else "; the static reference is itself "
                                         "an upper bound (its bracket's UB)"))})
    t = pd.DataFrame(rows, columns=list(PRICE_COLUMNS))
    return t.sort_values(["set", "loss_max"]).reset_index(drop=True) if rows else t


def frontier_figure(df: pd.DataFrame, matched: pd.DataFrame, styles, scale: float = 1.0):
    """Cost against P(success), one panel per (set, ℓmax) with an adaptive bracket:
    the proven frontier (LB), the certified policy (UB), every series as a point."""
    adap = adaptive_rows(df)
    if not adap:
        return None
    keys = (df[df["instance_key"].isin(list(adap)) & (df["reference"] == ADAPTIVE)]
            .sort_values(["loss_max"])[["instance_key", "loss_max"]].drop_duplicates("instance_key"))
    n = len(keys)
    fig, axes = new_figure(ncols=min(n, 3), nrows=math.ceil(n / 3), scale=scale)
    axs = np.ravel(axes)
    for ax, (_, kr) in zip(axs, keys.iterrows()):
        a = adap[kr["instance_key"]]
        w, lb = zip(*a["frontier"]) if a["frontier"] else ((), ())
        ax.plot(w, lb, "k-", marker=".", lw=1, label="adaptive optimum ≥ (proven frontier)")
        ax.plot([a["p_success"]], [a["ub"]], "k*", ms=7,
                label="certified adaptive policy: UB, upper confidence bound on its mean cost")
        ax.axvline(a["omega"], color="0.6", lw=0.8, ls=":")
        m = matched[matched["loss_max"] == kr["loss_max"]] if not matched.empty else matched
        for alg in ordered(m["algorithm"], styles) if not m.empty else []:
            st = info_for(styles, alg)
            for series, fill in (("policy", st.colour), ("plan_stopped", "none")):
                g = m[(m["algorithm"] == alg) & (m["series"] == series)]
                if not g.empty:
                    ax.plot(g["p_success"], g["cost_mean"], ls="", marker=st.marker, mec=st.colour, mfc=fill,
                            ms=5, label=f"{alg}: {'own policy' if series == 'policy' else 'plan stopped at ℓmax'}")
        ax.set_title(f"ℓmax = {kr['loss_max']:g}", fontsize=8)
        ax.set_xlabel("P(success)")
        ax.set_ylabel(COST_AXIS)
        ax.grid(alpha=0.3)
    for ax in axs[n:]:
        ax.set_visible(False)
    add_legend(fig, axs[:n])
    return fig


def pact_matched(df: pd.DataFrame, pact: str = "pact") -> pd.DataFrame:
    """Closed-loop PACT's rows of :func:`matched_risk_table` (series "policy")."""
    t = matched_risk_table(df)
    if t.empty:
        return t
    solver = dict(zip(df["algorithm"], df["solver"]))
    return t[(t["series"] == "policy") & (t["algorithm"].map(solver) == pact)].reset_index(drop=True)


#: Marks a claim row kept for reference but superseded (the glance leaves it out).
SUPERSEDED = "superseded by the row against the adaptive optimum"


#: Columns of :func:`pact_matched_table`.
PACT_MATCHED_COLUMNS = ("set", "loss_max", "instance_key", "pact_cost", "pact_level", "lb", "ub", "ub_level",
                        "gap_lo", "gap_hi", "pact_cost_low", "pact_cost_high", "pact_alpha", "ub_alpha",
                        "bracket_level", "method")

#: The joint level the matched-risk PACT claim aims at (the rule of every population claim).
PACT_JOINT_LEVEL = 0.95

#: How each row of :func:`pact_matched_table` is bounded (its ``method`` column).
PACT_MATCHED_METHOD = ("pact_level: one-sided Clopper–Pearson lower bound on PACT's P(success) (from its successes "
                       "and runs; else the lower end of its record's two-sided interval); [pact_cost_low, "
                       "pact_cost_high]: two-sided normal-approximation (CLT) interval on PACT's mean cost; the two "
                       "fail with probability ≤ pact_alpha together; lb proven; ub: one-sided empirical-Bernstein "
                       "bound at the "
                       "adaptive-opt record's joint confidence 1 − ub_alpha; the row's bracket [gap_lo, gap_hi] "
                       "holds when all of them do, so with probability ≥ 1 − pact_alpha − ub_alpha (union bound)")


def order_level(n: int, ub_alpha: float) -> float:
    """The coverage the claim's order-statistic interval is chosen for: 95 % plus twice the
    adaptive records' failure probabilities Σ(1 − c), so that after them as much is left
    for PACT's statements (the rank widens as n grows: at n = 37 the narrowest 95 % rank
    covers only 95.3 %); :data:`PACT_JOINT_LEVEL` where no rank reaches that."""
    from deplbench.reports.median import order_statistic_rank

    want = PACT_JOINT_LEVEL + 2.0 * ub_alpha
    if want < 1.0 and order_statistic_rank(n, want)[0] >= 1:
        return want
    return PACT_JOINT_LEVEL


def _pact_budget(n: int, ub_alphas: list[float]) -> tuple[float, float]:
    """(per-row PACT allotment α_P, the coverage the order-statistic interval is chosen for)
    over the ``n`` distinct instances the claim rests on, their rows' Σ(1 − c) in ``ub_alphas``.

    The interval on the median excess holds when the order-statistic event
    and every row's bracket hold (union bound). The adaptive-opt records'
    failure probabilities 1 − c are fixed by their runs; what is left of
    1 − :data:`PACT_JOINT_LEVEL` after them and the order-statistic event is
    shared evenly by the PACT rows (Bonferroni). With nothing left, each row
    gets (1 − level)/rows and the claim states the lower joint level.
    """
    from deplbench.reports.median import order_statistic_rank

    ub_alpha = sum(ub_alphas)
    level = order_level(n, ub_alpha)
    _, cover = order_statistic_rank(n, level)
    cover = cover if math.isfinite(cover) else 1.0
    left = (cover - PACT_JOINT_LEVEL) - ub_alpha
    rows = max(len(ub_alphas), 1)
    alpha = left / rows if left > 0 else (1.0 - PACT_JOINT_LEVEL) / rows
    return alpha, level


def _ub_candidates(a: dict, r) -> list[dict]:
    """The adaptive-opt records whose UB may be picked for PACT's row ``r``: those
    certified at or above PACT's level at its record's own interval (the
    stricter allotment only lowers PACT's level, so they stay eligible)."""
    low = r["p_success_low"]
    level = float(low) if low is not None and math.isfinite(low) else float(r["p_success"])
    return [rec for rec in a["records"] if rec["certified"] and rec["p_success_lo"] >= level - 1e-12]


def pact_matched_table(df: pd.DataFrame) -> pd.DataFrame:
    """Closed-loop PACT against the adaptive optimum at PACT's certified level.

    One row per closed-loop PACT record on an instance with an adaptive-opt
    bracket. Every statement a row rests on is made at a level chosen so
    that the claim's interval over instances holds at
    :data:`PACT_JOINT_LEVEL` (:func:`_pact_budget`; Bonferroni): the row's
    allotment ``pact_alpha`` goes half to PACT's certified level ``pact_level``
    (the one-sided Clopper–Pearson lower bound on its P(success) from its
    successes and runs at 1 − pact_alpha/2), half to the two-sided
    normal-approximation interval [``pact_cost_low``, ``pact_cost_high``] on
    its mean cost ``pact_cost`` (10⁴ runs; an asymptotic interval). The
    bracket of the optimum at ``pact_level`` from :func:`matched_bracket`:
    ``lb`` = LB(p) (proven, the merged monotone frontier), ``ub`` = UB(p), the
    upper confidence bound on the mean cost of an adaptive policy certified at
    ``ub_level`` ≥ p (:func:`ub_statement`; its failure probability
    ``ub_alpha`` = 1 − the record's confidence, summed over the records it
    could be taken from; NaN when no record reaches p). PACT's excess over
    that optimum lies in [``gap_lo``, ``gap_hi``] = [pact_cost_low/UB(p) − 1,
    pact_cost_high/LB(p) − 1] with probability ≥ 1 − pact_alpha − ub_alpha.

    Without an adaptive policy certified at p, ``gap_lo`` = 0: PACT's own
    policy is certified at p, so the optimum there is at most PACT's mean
    cost. Without a standard error of PACT's mean cost (no ``cost_sem``, < 2
    runs) the cost interval, the bracket and ``bracket_level`` are NaN, the
    reason first in ``method``; the claim leaves that instance out.
    """
    return pact_matched_rows(df)[0]


#: Why a row's ``bracket_level`` is not computable (its ``method``): a statement without a stated level.
_NO_UB_LEVEL = "an adaptive-opt record its UB may come from states no confidence"
_NO_PACT_LEVEL = "PACT's record states neither its success counts nor its interval's level"


def pact_matched_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, float]:
    """(:func:`pact_matched_table`, the coverage of its claim's order-statistic interval), one budget for both."""
    t = pact_matched(df)
    if t.empty:
        return pd.DataFrame(columns=list(PACT_MATCHED_COLUMNS)), PACT_JOINT_LEVEL
    adap = adaptive_rows(df)
    recs = t.to_dict("records")
    cands = [_ub_candidates(adap[r["instance_key"]], r) for r in recs]
    ub_alphas = [sum(1.0 - rec["confidence"] for rec in c) for c in cands]
    # why a row has no interval on PACT's mean cost: the CLT interval needs the mean's standard error
    why = ["cost_sem missing: no interval on PACT's mean cost" if not math.isfinite(r["cost_sem"]) else
           f"{r['runs']:.0f} run(s): no standard error, no interval on PACT's mean cost" if r["runs"] < 2 else ""
           for r in recs]
    # the claim's interval rests on the instances whose every row has a bracket
    out = {r["instance_key"] for r, w in zip(recs, why) if w}
    ok = [(r["instance_key"], u) for r, u in zip(recs, ub_alphas) if r["instance_key"] not in out]
    alpha, level_os = _pact_budget(len({k for k, _ in ok}), [u for _, u in ok])
    z = float(sps.norm.ppf(1.0 - alpha / 4.0))
    rows = []
    for r, cand, ub_alpha, no_ci in zip(recs, cands, ub_alphas, why):
        n_runs, k = r["runs"], r["successes"]
        if math.isfinite(n_runs) and math.isfinite(k) and n_runs > 0:
            # one-sided Clopper–Pearson lower bound at 1 − α/2 (0 successes: 0)
            level = clopper_pearson_lower(int(k), int(n_runs), 1.0 - alpha / 2.0)
            cp_alpha = alpha / 2.0
        else:
            # a record without its counts: the lower end of its own two-sided interval
            # (one-sided at (1 + ci_level)/2), counted at that level in the union bound
            low = r["p_success_low"]
            level = float(low) if low is not None and math.isfinite(low) else float(r["p_success"])
            # (a record that states no level: its failure probability is unknown, NaN)
            cp_alpha = (1.0 - r["ci_level"]) / 2.0 if math.isfinite(low) else 1.0
        a = adap[r["instance_key"]]
        ub_rec = min((rec for rec in cand if rec["p_success_lo"] >= level - 1e-12), default=None,
                     key=lambda rec: rec["ub"])
        lb = lb_at(a["frontier"], level)
        ub, lvl = (ub_rec["ub"], ub_rec["p_success_lo"]) if ub_rec else (math.nan, math.nan)
        c = float(r["cost_mean"])
        sem = math.nan if no_ci else float(r["cost_sem"])      # no standard error: no interval, never width 0
        c_lo, c_hi = c - z * sem, c + z * sem
        pact_alpha = cp_alpha + alpha / 2.0
        unknown = [w for w, a in ((_NO_UB_LEVEL, ub_alpha), (_NO_PACT_LEVEL, cp_alpha)) if math.isnan(a)]
        rows.append({"set": r["set"], "loss_max": r["loss_max"], "instance_key": r["instance_key"],
                     "pact_cost": c, "pact_level": level, "lb": lb, "ub": ub, "ub_level": lvl,
                     "gap_lo": math.nan if no_ci else c_lo / ub - 1.0 if ub > 0 else 0.0,
                     "gap_hi": c_hi / lb - 1.0 if lb > 0 else math.nan if no_ci else math.inf,
                     "pact_cost_low": c_lo, "pact_cost_high": c_hi, "pact_alpha": pact_alpha, "ub_alpha": ub_alpha,
                     "bracket_level": math.nan if no_ci else 1.0 - pact_alpha - ub_alpha,
                     "method": (f"not computable ({no_ci}); " if no_ci else "")
                     + (f"level not computable ({'; '.join(unknown)}); " if unknown else "") + PACT_MATCHED_METHOD})
    t = (pd.DataFrame(rows, columns=list(PACT_MATCHED_COLUMNS))
         .sort_values(["loss_max", "instance_key"]).reset_index(drop=True))
    return t, level_os


__all__ = ["SUPERSEDED", "bracket_confidences", "ci_level_text", "levels_text", "stated_levels", "matched_bracket",
           "ub_statement", "pact_matched_rows", "pact_matched_table", "stricter_level_series", "PACT_MATCHED_COLUMNS",
           "MATCHED_COLUMNS", "PRICE_COLUMNS", "adaptive_rows", "frontier_figure", "lb_at", "matched_risk_table",
           "pact_matched", "price_of_adaptivity", "PACT_JOINT_LEVEL", "record_confidence"]
