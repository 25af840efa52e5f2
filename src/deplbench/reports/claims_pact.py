"""PACT's Fig. 6 claim in the claims audit (PACT paper Sec. VI-C): three rows,
each judged over the distinct instances of the PACT set, one value each,
with a 95 % exact order-statistic interval on the median
(:func:`~deplbench.reports.median.median_interval`), the rule of every
population claim of :mod:`deplbench.reports.claims`.

1. against the adaptive optimum at matched risk
   (:func:`pact_adaptive_claim`, the PACT verdict);
2. open loop: PACT's static plan against the exact static optimum,
   StaticLearn and OneSwitch;
3. closed loop against the static plans, as PACT's paper runs its
   benchmarks: a policy's mean cost against plans held to an ω-quantile,
   which SPEC §5 forbids judging; its numbers are kept as description
   (verdict :data:`~deplbench.reports.claims_common.NOT_APPLICABLE`;
   superseded, left out of the glance).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from deplbench.jsonio import level_percent
from deplbench.reports.adaptive import PACT_JOINT_LEVEL, SUPERSEDED, pact_matched_rows, ub_statement
from deplbench.reports.claims_common import (
    FAILS,
    HOLDS,
    MATCH_MEDIAN_GAP,
    MEDIAN_STATISTIC,
    NOT_APPLICABLE,
    NOT_DECIDED,
    UNMEASURED,
    claim_row,
    median_verdict,
)
from deplbench.reports.median import (
    MEDIAN_METHOD_SHORT,
    level_caveat,
    median_interval,
    undecided_text,
)

PACT_CLAIM = "PACT Fig. 6: PACT closely matches the optimum and outperforms StaticLearn and OneSwitch"

def _pact_brackets(comp: pd.DataFrame, col: str, ref: str, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct instance of ``comp`` with PACT's static plan cost ``col``
    and the reference column ``ref``: PACT's gap to ``ref`` (``kind="gap"``:
    cost/ref − 1) or its saving (``kind="saving"``: 1 − cost/ref), as equal
    ends [v, v] (a static plan's cost is exact)."""
    c = comp[comp[col].notna() & (comp[ref] > 0)]
    if c.empty:
        return np.zeros(0), np.zeros(0)
    v = c[col].to_numpy(float) / c[ref].to_numpy(float)
    v = 1.0 - v if kind == "saving" else v - 1.0
    # several rows of one instance (seeded variants are distinct instances;
    # configurations of one are not) count once: their median
    g = pd.DataFrame({"k": c["instance_key"].to_numpy(), "v": v}).groupby("k")["v"].median().to_numpy(float)
    return g, g


def _pact_verdict(comp: pd.DataFrame, col: str) -> tuple[str, str, int]:
    """(verdict, numbers, distinct instances) of the PACT claim for PACT's cost column ``col``.

    The claim has three parts, each judged with the rule of every
    population claim (a 95 % exact order-statistic interval on the median
    over distinct instances, :func:`~deplbench.reports.median.median_interval`):
    "closely matches the optimum" on the gap to the exact optimum (holds
    when the interval lies wholly at or below :data:`MATCH_MEDIAN_GAP`);
    "outperforms StaticLearn" and "outperforms OneSwitch" on the paired
    saving 1 − PACT/competitor (holds when the interval lies wholly above
    0, does not hold when wholly at or below it). The claim holds when all
    three hold, does not hold when one does not, else is not decided.
    """
    lo, hi = _pact_brackets(comp, col, "optimum", "gap")
    if not lo.size:
        return UNMEASURED, "no instance with both PACT's cost and an exact optimum", 0
    ci = median_interval(lo, hi)
    parts = [f"{ci.n} distinct instances: gap to the optimum median {ci.text(100, ' %', 1)} (threshold: "
             f"median ≤ {100 * MATCH_MEDIAN_GAP:g} %)"]
    verdicts = [median_verdict(ci, MATCH_MEDIAN_GAP)]
    if verdicts[0] == NOT_DECIDED:
        parts.append("matching: " + undecided_text(ci, MATCH_MEDIAN_GAP))
    for key, label in (("static_learn", "StaticLearn"), ("one_switch", "OneSwitch")):
        slo, shi = _pact_brackets(comp, col, key, "saving")
        if not slo.size:
            parts.append(f"{label}: no common instance")
            verdicts.append(UNMEASURED)
            continue
        sci = median_interval(slo, shi)
        v = median_verdict(sci, 0.0, holds_below=False)
        parts.append(f"saving over {label} on {sci.n} instances: median {sci.text(100, ' %', 1)} (PACT cheaper "
                     f"on {int((slo > 0).sum())}/{sci.n})" + ("" if v != NOT_DECIDED else
                                                              "; " + undecided_text(sci, 0.0)))
        verdicts.append(v)
    if FAILS in verdicts:
        verdict = FAILS
    elif all(v == HOLDS for v in verdicts):
        verdict = HOLDS
    elif verdicts[0] == UNMEASURED:
        verdict = UNMEASURED
    else:
        verdict = NOT_DECIDED
    return verdict, "; ".join(parts), ci.n


#: The statistic of the open-loop PACT row.
PACT_STATISTIC = ("gap cost/optimum − 1 and saving 1 − cost/competitor of static plan costs: " + MEDIAN_STATISTIC
                  + "; holds when the gap's interval lies wholly at or below "
                  f"{100 * MATCH_MEDIAN_GAP:g} % and both savings' wholly above 0, does not hold when one lies "
                  "wholly on the wrong side, else not decided")


#: The statistic of the closed-loop row: description only.
CLOSED_LOOP_STATISTIC = ("none judged: closed-loop PACT's sample mean cost set against static plans held to an "
                         "ω-quantile is a mean against a quantile (SPEC §5), so no verdict; the medians over "
                         "distinct instances of cost/reference − 1 are printed as description, without an interval")


def _closed_loop_description(comp: pd.DataFrame) -> tuple[str, int]:
    """(text, distinct instances) of closed-loop PACT's mean cost against the
    static plans: per-instance medians of mean/reference − 1, no interval and
    no verdict (a mean against plans held to a quantile)."""
    c = comp[comp["pact_closed"].notna()]
    if c.empty:
        return "no closed-loop PACT run", 0
    n = int(c["instance_key"].nunique())
    parts = [f"{n} distinct instances, described, not judged"]
    for key, label in (("optimum", "the exact static optimum"), ("static_learn", "StaticLearn's plan"),
                       ("one_switch", "OneSwitch's plan")):
        h = c[c[key] > 0]
        if h.empty:
            continue
        g = (h["pact_closed"] / h[key] - 1.0).groupby(h["instance_key"]).median()
        parts.append(f"closed-loop mean vs {label}: median {100 * float(g.median()):+.1f} % over {len(g)} "
                     f"(mean below on {int((g < 0).sum())}/{len(g)})")
    fair = c[c["optimum_stopped"] > 0]
    if not fair.empty:
        g = (fair["pact_closed"] / fair["optimum_stopped"] - 1.0).groupby(fair["instance_key"]).median()
        parts.append(f"against the optimum's plan also stopped at ℓmax (mean vs mean): median "
                     f"{100 * float(g.median()):+.1f} % over {len(g)}")
    ps = c["pact_closed_p_success"].dropna()
    if not ps.empty:
        parts.append(f"closed-loop PACT's P(success) {ps.min():.4f}–{ps.max():.4f} (point estimates)")
    return "; ".join(parts), n


#: What the matched-risk row compares (its ``compared`` column).
PACT_MATCHED_COMPARED = ("closed-loop PACT's mean cost (through a two-sided confidence interval on it) at its "
                         "certified P(success) (a one-sided Clopper–Pearson lower bound), one bracket per distinct "
                         "instance")


def pact_adaptive_claim(df: pd.DataFrame, says: str, pact_claim: str) -> dict:
    """PACT Fig. 6 re-judged against the adaptive optimum at matched risk.

    PACT's "optimum" is, in its text, found with the true loss evolution
    (an orchestrator knowing each run's losses in advance): no policy can
    attain it. The implementable reference is the best closed-loop policy
    with the same P(success). What is compared, per distinct instance
    (:func:`~deplbench.reports.adaptive.pact_matched_table`; several PACT records of one instance count
    once, the median of their ends): closed-loop PACT's mean cost c at its
    *certified* level p against the adaptive optimum at that same level,
    bracketed by LB(p) (proven) and UB(p) (the upper confidence bound on the
    mean cost of an adaptive policy certified at ≥ p, when a record reaches
    that level; :func:`~deplbench.reports.adaptive.ub_statement`); PACT's excess lies in
    [c/UB(p) − 1, c/LB(p) − 1], with lower end 0 where no adaptive policy is
    certified at p (PACT's own policy is).

    The verdict is the rule of every population claim: an exact
    order-statistic interval on the median excess over distinct instances
    (:func:`~deplbench.reports.median.median_interval`, over the brackets'
    ends). That interval holds when the order-statistic event and every
    instance's bracket hold, so its level is the union bound
    (:func:`~deplbench.reports.median.with_bracket_failures`): every
    instance's statements are made at 1 − α/n (:func:`~deplbench.reports.adaptive._pact_budget`) so
    that it is ≥ 95 % when the adaptive-opt records' confidence leaves
    room, else the lower level is stated and the verdict is at that level;
    when a statement it rests on has no stated level (an adaptive-opt record
    without its confidence), the joint level is not computable and the row
    decides nothing (:data:`~deplbench.reports.claims_common.NO_LEVEL`). The sample median is printed
    as the bracket [median of the lower ends, median of the upper ends],
    not a point. Holds when it lies wholly at or below the "virtually matches"
    threshold (median ≤ :data:`MATCH_MEDIAN_GAP`), does not hold when it
    lies wholly above, else not decided, with the number of instances that
    would decide it. The 90th percentile is reported, not judged. An
    instance whose bracket is not computable (no interval on PACT's mean
    cost) is left out, and the claim says how many were.
    """

    claim = (pact_claim + " — against the adaptive optimum (the best policy that observes the loss) at "
             "matched risk: PACT at its certified P(success), the adaptive bracket at that same level")
    evidence = "tables pact_matched, matched_risk, price_of_adaptivity; figure adaptive_frontier"
    reference = ("the adaptive optimum at PACT's certified level: proven LB from adaptive-opt's frontier; "
                 + ub_statement(df) + ", of a policy certified at that level or above")
    statistic = ("cost/optimum − 1: median over distinct instances, one bracket [c_low/UB − 1, c_high/LB − 1] "
                 "per instance; the sample median is known only within [median of the lower ends, median of "
                 "the upper ends] and "
                 "is printed as that bracket; the interval [lower end₍r₎, upper end₍n−r+1₎] is an exact binomial "
                 "order-statistic interval over the ends, which holds when the order-statistic event and every "
                 "instance's bracket hold: its level is stated by the union bound (each instance's statements "
                 "at 1 − α/n, Bonferroni, so that the whole holds at ≥ 95 % when the adaptive-opt records' "
                 "confidence allows; else the lower joint level is stated and the verdict is at that level); "
                 "holds / does not hold only when the interval lies wholly on one side of "
                 f"{100 * MATCH_MEDIAN_GAP:g} %")
    paper_says = (says + ". The paper's 'optimum' is found with the true loss evolution (known in advance), which "
                  "no policy can attain; here the reference is the best implementable closed-loop policy at the "
                  "same certified risk")
    from deplbench.reports.median import with_bracket_failures

    t, level = pact_matched_rows(df)
    # an instance counts only when every one of its rows has a bracket (the median over
    # its configurations is unknown when one of them is)
    per = t.groupby("instance_key").agg(gap_lo=("gap_lo", lambda g: g.median(skipna=False)),
                                        gap_hi=("gap_hi", lambda g: g.median(skipna=False)),
                                        has_ub=("ub", lambda u: bool(np.isfinite(u.to_numpy(float)).any())))
    left_out = int((per["gap_lo"].isna() | per["gap_hi"].isna()).sum())
    per = per[per["gap_lo"].notna() & per["gap_hi"].notna()]
    if per.empty:
        why = (f"{left_out} instance(s) with closed-loop PACT and an adaptive-opt bracket, none with an interval on "
               "PACT's mean cost (no cost_sem or fewer than 2 runs; table pact_matched, column method)" if left_out
               else "no instance with both closed-loop PACT and an adaptive-opt bracket (quick.toml runs both on "
               "the PACT set)")
        return claim_row(claim, "PACT paper §VI-C", says, why, UNMEASURED, evidence, compared=PACT_MATCHED_COMPARED,
                         reference=reference, statistic="—", instances=0)
    t = t[t["instance_key"].isin(per.index)]
    ci = median_interval(per["gap_lo"].to_numpy(float), per["gap_hi"].to_numpy(float), level=level)
    # the union bound over the order-statistic event and every row's statements
    union = with_bracket_failures(ci, (t["pact_alpha"] + t["ub_alpha"]).to_numpy(float))
    joint = union.level if ci.exists else math.nan
    alpha_p, alpha_ub = float(t["pact_alpha"].max()), float(t["ub_alpha"].max())
    how = (f"union bound: the order-statistic event ({level_percent(ci.level, 2)} %) and every instance's bracket, "
           f"each at ≥ {level_percent(1 - alpha_p - alpha_ub, 3)} % (PACT's level and cost together at "
           f"1 − {alpha_p:.2g}, the adaptive UB at 1 − {alpha_ub:.2g})")
    met = math.isfinite(joint) and joint >= PACT_JOINT_LEVEL - 1e-12
    aim = level_percent(PACT_JOINT_LEVEL, 0)
    note = (f"≥ {aim} % jointly (union bound, Bonferroni)" if met else
            f"only ≥ {level_percent(max(joint, 0.0))} % jointly (union bound), below {aim} %"
            if math.isfinite(joint) else "")
    if note:
        ci = replace(ci, level=joint, nominal=PACT_JOINT_LEVEL,     # aimed at 95 % jointly, not at the rank's
                     level_note=f"{note}: {MEDIAN_METHOD_SHORT} over {ci.n} distinct instances")
    elif ci.exists:
        ci = union          # a statement without a stated level: the joint level is not computable (NaN)
    lv = t["pact_level"].to_numpy(float)
    thr = f"threshold: median ≤ {100 * MATCH_MEDIAN_GAP:g} %"
    txt = (f"{ci.n} distinct instances: PACT's excess over the adaptive optimum at its certified P(success) "
           f"({lv.min():.4f}–{lv.max():.4f}): median {ci.text(100, ' %')} ({thr})")
    if note:
        txt += (f"; the interval's level: {how}" + ("" if met else "; the adaptive-opt records' own confidence "
                "leaves no room for 95 %, an adaptive-opt entry with a higher confidence parameter would give it"))
    n_ub = int(per["has_ub"].sum())
    if n_ub:
        ub_lv = t["ub_level"].dropna().to_numpy(float)
        txt += (f"; an adaptive policy certified at PACT's level (≥ {ub_lv.min():.4f}) on {n_ub}/{ci.n} instances, "
                f"PACT at least {100 * float(np.median(per.loc[per['has_ub'], 'gap_lo'])):+.1f} % above it "
                "(median of the lower ends)")
    if left_out:
        txt += (f"; {left_out} instance(s) left out: no interval on PACT's mean cost there (no cost_sem or fewer "
                "than 2 runs; table pact_matched, column method)")
    if n_ub < ci.n:
        txt += (f"; on {ci.n - n_ub} instance(s) no adaptive policy is certified at PACT's level: lower end 0 "
                "there (PACT's own policy is), an adaptive-opt task with parameter omega at or above that level "
                "would give it")
    hi = per["gap_hi"].to_numpy(float)
    if np.isfinite(hi).all():
        txt += f"; 90th pct of the upper ends {100 * float(np.quantile(hi, 0.9)):+.1f} % (not judged)"
    verdict = median_verdict(ci, MATCH_MEDIAN_GAP)
    if verdict != NOT_DECIDED:
        txt += level_caveat(ci)
    if verdict == NOT_DECIDED:
        txt += "; " + undecided_text(ci, MATCH_MEDIAN_GAP)
    return claim_row(claim, "PACT paper §VI-C", paper_says, txt + " (per instance: table pact_matched)", verdict,
                     evidence, compared=PACT_MATCHED_COMPARED, reference=reference, statistic=statistic,
                     instances=ci.n)


def pact_claims(df: pd.DataFrame) -> list[dict]:
    """PACT Sec. VI-C / Fig. 6 (left): first closed-loop PACT against the adaptive
    optimum at matched risk (:func:`pact_adaptive_claim`,
    the PACT verdict), then PACT's static plan (open loop), then — superseded,
    kept for reference and left out of the glance — closed-loop PACT against
    the other plans run to their end as PACT's benchmarks are. Every row is
    judged over the distinct instances of the PACT set (seeded variants and
    targets), one value each (:func:`_pact_verdict`)."""
    from deplbench.reports.closed_loop import PACT_SET, pact_comparison

    says = ("PACT outperforms the alternative solutions, and closely matches the optimum "
            "(Fig. 6 left, VGG11 L/M/S, Tmax = 1000)")
    evidence = "tables pact_comparison, closed_loop; figure pact_fig6_left"
    ref = "the exact static optimum of each instance (milp-exact; else the SAA optimum), StaticLearn, OneSwitch"
    comp = pact_comparison(df)
    if comp.empty:
        msg = f"no plan on the {PACT_SET} instance set (a sweep with its PACT group, e.g. quick.toml)"
        return [pact_adaptive_claim(df, says, PACT_CLAIM),
                claim_row(PACT_CLAIM + " (open loop)", "PACT paper §VI-C", says, msg, UNMEASURED, evidence,
                          compared="PACT's static plan", reference=ref, statistic="—", instances=0),
                claim_row(PACT_CLAIM + f" (closed loop vs static plans; {SUPERSEDED})", "PACT paper §VI-C", says,
                          msg, UNMEASURED, evidence, compared="closed-loop PACT's mean cost", reference=ref,
                          statistic="—", instances=0)]
    txt_cl, n_cl = _closed_loop_description(comp)
    v_cl = NOT_APPLICABLE if n_cl else UNMEASURED
    v_ol, txt_ol, n_ol = _pact_verdict(comp, "pact_open")
    # The matched-risk row comes first and is the PACT verdict; the closed-loop row
    # against static plans (policies that do not observe the loss) is kept below it,
    # marked superseded, and left out of the glance.
    return [pact_adaptive_claim(df, says, PACT_CLAIM),
            claim_row(PACT_CLAIM + " — open loop (PACT's static plan, re-planned from robust "
                 "predictions; rests on the static evaluation)", "PACT paper §VI-C", says,
                 "static plan costs, " + txt_ol, v_ol, evidence,
                 compared="PACT's static plan cost, one value per distinct instance", reference=ref,
                 statistic=PACT_STATISTIC, instances=n_ol),
            claim_row(PACT_CLAIM + " — closed loop vs static plans (PACT re-plans every epoch from the observed "
                 f"loss, the others do not; {SUPERSEDED}: a policy that observes the loss judged against plans "
                 "that do not)", "PACT paper §VI-C", says,
                 "mean cost over the closed-loop runs vs each benchmark's static plan cost (PACT's "
                 "benchmarks are fixed strategies), " + txt_cl, v_cl, evidence,
                 compared="closed-loop PACT's mean cost, one value per distinct instance", reference=ref,
                 statistic=CLOSED_LOOP_STATISTIC, instances=n_cl)]


__all__ = ["PACT_CLAIM", "PACT_MATCHED_COMPARED", "PACT_STATISTIC", "pact_adaptive_claim", "pact_claims"]
