"""The claims audit: each claim of the DepL paper (and PACT's Fig. 6 claim)
beside what this run measured.

One row per claim, with a verdict among :data:`VERDICTS`. A verdict is a
mechanical function of the measured numbers and the thresholds below
(stated in the report), never of what the paper hoped; with no data the
verdict is "not measured in this run" and the row says which store rows
would measure it.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.reports.complexity import ASYMPTOTIC_REGIME, CLAIMED_EXPONENTS, TIME, best_fits
from deplbench.reports.stats import reference_config
from deplbench.reports.tables import RATIO_RTOL, property3_bound, size_label

HOLDS, FAILS, UNMEASURED = "holds", "does not hold", "not measured in this run"
VERDICTS = (HOLDS, FAILS, UNMEASURED)

CLAIMS_COLUMNS = ("claim", "source", "paper_says", "measured", "verdict", "evidence")

#: "Virtually matches the optimum" is read as: median relative gap ≤ 2 %
#: and 90th-percentile gap ≤ 5 % (curves that close overlap at the scale
#: of Figs. 5–6).
MATCH_MEDIAN_GAP = 0.02
MATCH_P90_GAP = 0.05

#: "Outperforms best-exp by over 27 %": the largest saving 1 − DepL/best-exp,
#: averaged over instances at one target, must reach 27 % (the paper says
#: the difference is largest at loose targets, so it is a maximum over ℓmax).
BEST_EXP_SAVING = 0.27

#: Where DepL's per-instance submodularity check of K̂(D̂)·T̂(D̂) is read:
#: ``diagnostics["submodularity"] = {"checked", "violated", "exhaustive", ...}``
#: (what solvers/depl.py writes).
SUBMODULAR_DICT_KEY = "submodularity"

#: The algorithms the papers' claims are about, by registry name: the
#: claims name them, so the audit does too. "The paper's DepL" is DepL with
#: its proven guarantee: ``calibrate = true`` trades it for a statistical
#: one (solvers/depl.py), so those rows are a different algorithm here.
DEPL, BEST_EXP = "depl", "best-exp"


def _num(v) -> float:
    try:
        v = float(v)
    except (TypeError, ValueError):
        return math.nan
    return v


def submodularity_record(diag: dict) -> tuple[float, float, bool | None] | None:
    """(violated, checked, exhaustive) of one row's submodularity check, or
    None when the row carries no check."""
    if not isinstance(diag, dict):
        return None
    sub = diag.get(SUBMODULAR_DICT_KEY)
    if isinstance(sub, dict) and math.isfinite(_num(sub.get("violated"))):
        ex = sub.get("exhaustive")
        return (_num(sub["violated"]), _num(sub.get("checked")),
                bool(ex) if ex is not None else None)
    return None


def paper_depl(df: pd.DataFrame) -> pd.Series:
    """Rows of the paper's DepL: solver ``depl`` without ``calibrate``."""
    if df.empty:
        return pd.Series(dtype=bool, index=df.index)
    calibrated = [bool(d.get("calibrate")) for d in df["params_d"]]
    return (df["solver"] == DEPL) & ~np.asarray(calibrated, bool)


#: Paper sets of Figs. 5–6 (DepL paper); PACT's set is a different paper.
FIG56_SETS = ("alexnet", "mobilenet")


def _row(claim, source, says, measured, verdict, evidence):
    return {"claim": claim, "source": source, "paper_says": says, "measured": measured,
            "verdict": verdict, "evidence": evidence}


def _fmt_fit(r) -> str:
    ci = (f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if math.isfinite(r.ci_low) else "[n/a]")
    return f"{r.slope:.2f} {ci}, {int(r.points)} runs, {r.min_value:g}–{r.max_value:g}"


def _judgeable(f: pd.DataFrame) -> pd.DataFrame:
    return f[f["verdict"].isin(("consistent", "contradicts"))] if not f.empty else f


def property2(fits: pd.DataFrame, algorithm: str = DEPL) -> dict:
    """Property 2: O(|D|² + |M|²K²/η⁴ + 1/ε) against fitted log-log slopes.

    Where the solver reports work counters (``diagnostics["work"]``), a
    parameter is judged on the dominant counter (steepest growth; for ε the
    steepest fall as ε → 0) — exact counts, no timing noise — and the
    runtime slope is quoted beside it;
    otherwise it is judged on the runtime slope. The text says which.
    """
    claim = "Property 2: complexity"
    says = ("O(|D|² + |M|²K²η⁻⁴ + 1/ε); the same proof counts |M|Kη² vertices, "
            "which with O(V²) gives η⁺⁴")
    evidence = "tables complexity_fits, complexity_counters; figures complexity_*"
    tf = _judgeable(best_fits(fits, algorithm)) if not fits.empty else fits
    wf = fits[fits["measure"] != TIME] if not fits.empty else fits
    wf = _judgeable(best_fits(wf, algorithm, measure=None)) if not wf.empty else wf
    if not wf.empty:
        # the dominant counter per parameter: the steepest growth as the size
        # grows, the steepest fall as ε → 0 (ASYMPTOTIC_REGIME)
        sign = wf["parameter"].map(lambda p: -1.0 if ASYMPTOTIC_REGIME.get(p) == "small"
                                   else 1.0)
        wf = (wf.assign(_key=sign * wf["slope"]).sort_values("_key", ascending=False)
              .groupby("parameter", sort=False).head(1).drop(columns="_key"))
    params = list(dict.fromkeys(list(tf["parameter"] if not tf.empty else [])
                                + list(wf["parameter"] if not wf.empty else [])))
    if not params:
        return _row(claim, "DepL paper §V", says,
                    f"no '{algorithm}' slope over ≥ 4 completed runs and ≥ 3 distinct "
                    "values of η, ε, |M|, K̄ or |D| (others fixed) in this store",
                    UNMEASURED, evidence)
    parts, bad, on_counters = [], [], []
    for p in params:
        claimed, implied, _ = CLAIMED_EXPONENTS[p]
        t = tf[tf["parameter"] == p] if not tf.empty else tf
        w = wf[wf["parameter"] == p] if not wf.empty else wf
        t = next(t.itertuples(index=False), None) if not t.empty else None
        w = next(w.itertuples(index=False), None) if not w.empty else None
        judged = w if w is not None else t
        txt = f"{size_label(p)}: "
        if w is not None:
            on_counters.append(size_label(p))
            txt += f"counter '{w.measure}' slope {_fmt_fit(w)}"
            if t is not None:
                txt += f"; runtime slope {_fmt_fit(t)}"
        else:
            txt += f"slope {_fmt_fit(t)}"
        txt += f" vs claimed {claimed:+g}"
        if p == "epsilon":
            txt += " (as ε → 0)"
        if p == "eta":
            ok_impl = not (judged.ci_low > implied)
            txt += f" ({'consistent with' if ok_impl else 'above even'} the implied {implied:+g})"
        txt += f" → {judged.verdict}"
        if judged.source == "bench":
            txt += " [pytest-benchmark]"
        parts.append(txt)
        if judged.verdict == "contradicts":
            bad.append(size_label(p))
    unmeasured = [size_label(p) for p, (c, _, _) in CLAIMED_EXPONENTS.items()
                  if c is not None and p not in params]
    if unmeasured:
        parts.append("not varied: " + ", ".join(unmeasured))
    parts.append("judged on work counters (exact counts) for " + ", ".join(on_counters)
                 + ", on wall-clock time otherwise" if on_counters else
                 "judged on wall-clock time (no work counters in diagnostics.work)")
    verdict = FAILS if bad else HOLDS
    if bad:
        parts.append("grows faster than the printed bound in " + ", ".join(bad))
    return _row(claim, "DepL paper §V", says, "; ".join(parts), verdict, evidence)


def property3(ratios: pd.DataFrame) -> dict:
    """Property 3: competitive ratio (1/η)(1+ε), on the paper's DepL's plans."""
    claim = "Property 3: competitive ratio"
    says = ("constant ratio (1/η)(1+ε) — below 1 whenever η > 1+ε, which a "
            "minimisation ratio cannot be")
    evidence = "table competitive_ratio, figures ratio_vs_eta / ratio_vs_epsilon"
    sub = ratios[paper_depl(ratios) & ratios["ratio"].notna()
                 & ratios["eta"].notna()] if not ratios.empty else ratios
    algorithm = DEPL
    if sub.empty:
        return _row(claim, "DepL paper §V", says,
                    f"no '{algorithm}' plan with a recorded η on an instance with a proven "
                    "optimum (an exact solver's row with status optimal)",
                    UNMEASURED, evidence)
    eps = sub["epsilon"].fillna(0.0)
    bound = property3_bound(sub["eta"], eps)
    r = sub["ratio"].to_numpy(float)
    exceed = int((r > bound * (1 + RATIO_RTOL)).sum())
    below1 = int((r < 1 - RATIO_RTOL).sum())
    txt = (f"{len(r)} plans, η ∈ [{sub['eta'].min():g}, {sub['eta'].max():g}]: ratio median "
           f"{np.median(r):.4f}, range [{r.min():.4f}, {r.max():.4f}]; claimed bound range "
           f"[{bound.min():.4g}, {bound.max():.4g}]; {exceed}/{len(r)} plans exceed it")
    if sub["epsilon"].isna().any():
        txt += " (ε not recorded for some plans: bound taken with ε = 0, its smallest value)"
    if below1:
        txt += (f"; {below1} plan(s) cost less than the proven optimum (they cannot be "
                "feasible for the same in-sample constraint; see target_misses)")
    return _row(claim, "DepL paper §V", says, txt, FAILS if exceed else HOLDS, evidence)


def submodularity(df: pd.DataFrame) -> dict:
    """Sec. IV-A: K̂(D̂)·T̂(D̂) is submodular, checked per instance by DepL."""
    claim = "Sec. IV-A: submodularity"
    says = "K̂(D̂)·T̂(D̂) is submodular, so dataset selection is solved optimally"
    evidence = f"diagnostics.{SUBMODULAR_DICT_KEY}.violated of the store's rows"
    per_inst: dict[str, tuple[float, float, bool | None]] = {}
    if not df.empty:
        for ik, d in zip(df["instance_key"], df["diagnostics_d"]):
            rec = submodularity_record(d)
            if rec is None:
                continue
            old = per_inst.get(ik)
            # several configurations check the same instance: keep the worst
            if old is None or rec[0] > old[0]:
                per_inst[ik] = rec
    if not per_inst:
        return _row(claim, "DepL paper §IV-A", says,
                    f"no row carries diagnostics.{SUBMODULAR_DICT_KEY} (DepL's count of "
                    "violated diminishing-returns triples per instance)",
                    UNMEASURED, evidence)
    viol = np.array([r[0] for r in per_inst.values()])
    checks = np.array([r[1] for r in per_inst.values()])
    sampled = sum(r[2] is False for r in per_inst.values())
    n_bad = int((viol > 0).sum())
    txt = (f"violated on {n_bad} of {len(viol)} instances "
           f"({int(viol.sum())} violated triples in total")
    if np.isfinite(checks).any():
        txt += f" out of {int(np.nansum(checks))} checked"
        vacuous = int((checks == 0).sum())
        if vacuous:
            txt += (f"; on {vacuous} instance(s) nothing could be checked, e.g. a "
                    "single dataset")
    txt += ")"
    if sampled:
        txt += (f"; on {sampled} instance(s) the check was sampled, not exhaustive, so "
                "'no violation' there is evidence, not proof")
    # Zero triples checked on every instance (e.g. single-dataset instances)
    # is no evidence either way: "not measured", never a pass.
    nothing_checked = bool(np.isfinite(checks).all() and np.nansum(checks) == 0)
    verdict = FAILS if n_bad else (UNMEASURED if nothing_checked else HOLDS)
    return _row(claim, "DepL paper §IV-A", says, txt, verdict, evidence)


def _fig56(ratios: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The paper's DepL and best-exp on Figs. 5–6's instance sets, else on
    every family (and say so), each at its reference configuration."""
    if ratios.empty:
        return ratios, ""
    sub, scope = ratios[ratios["paper_set"].isin(FIG56_SETS)], "AlexNet/MobileNet sets"
    if sub.empty:
        sub, scope = ratios, "all families (no AlexNet/MobileNet rows in this store)"
    keep = paper_depl(sub) | (sub["solver"] == BEST_EXP)
    return reference_config(sub[keep], by="solver"), scope


def matches_optimum(ratios: pd.DataFrame) -> dict:
    """Figs. 5–6: DepL "virtually matches" the optimum."""
    claim = "Figs. 5–6: DepL virtually matches the optimum"
    says = "DepL's cost curve virtually overlaps the optimum's"
    evidence = "tables gaps, fig5_cost_vs_target; figures cost_vs_target_*"
    sub, scope = _fig56(ratios)
    algorithm = DEPL
    sub = sub[(sub["solver"] == DEPL) & sub["ratio"].notna()] if not sub.empty else sub
    if sub.empty:
        return _row(claim, "DepL paper §VI-B", says,
                    f"no '{algorithm}' plan on an instance with a proven optimum",
                    UNMEASURED, evidence)
    gap = sub["ratio"].to_numpy(float) - 1.0
    med, p90 = float(np.median(gap)), float(np.quantile(gap, 0.9))
    ok = med <= MATCH_MEDIAN_GAP and p90 <= MATCH_P90_GAP
    txt = (f"{scope}, {len(gap)} plans: gap to optimum median {100 * med:.2f} %, "
           f"90th pct {100 * p90:.2f} %, max {100 * gap.max():.2f} % "
           f"(threshold: median ≤ {100 * MATCH_MEDIAN_GAP:g} %, 90th pct ≤ "
           f"{100 * MATCH_P90_GAP:g} %)")
    if "quantile_oos" in sub:
        ev = sub[sub["quantile_oos"].notna() & sub["loss_max"].notna()]
        miss = int((ev["quantile_oos"] > ev["loss_max"]).sum())
        txt += f"; {miss}/{len(ev)} of these plans miss ℓmax out of sample"
    return _row(claim, "DepL paper §VI-B", says, txt, HOLDS if ok else FAILS, evidence)


def beats_best_exp(ratios: pd.DataFrame) -> dict:
    """Figs. 5–6 / abstract: DepL beats best-exp by over 27 %."""
    claim = "Figs. 5–6: DepL beats best-exp by over 27 %"
    says = "DepL outperforms the expectation-driven state of the art by over 27 %"
    evidence = "table depl_vs_best_exp"
    pairs, scope = depl_vs_best_exp_pairs(ratios)
    if pairs.empty:
        return _row(claim, "DepL paper abstract, §VI-B", says,
                    "no instance on which both 'depl' and 'best-exp' returned a plan",
                    UNMEASURED, evidence)
    by_target = pairs.groupby(["set", "loss_max"])["saving"].mean()
    best_key = by_target.idxmax()
    best = float(by_target.max())
    txt = (f"{scope}, {len(pairs)} paired instances: largest mean saving "
           f"{100 * best:.1f} % ({best_key[0]}, ℓmax = {best_key[1]:g}); median paired "
           f"saving {100 * pairs['saving'].median():.1f} %; DepL cheaper on "
           f"{int((pairs['saving'] > 0).sum())}/{len(pairs)} (threshold: a target-mean "
           f"saving ≥ {100 * BEST_EXP_SAVING:g} %)")
    return _row(claim, "DepL paper abstract, §VI-B", says, txt,
                HOLDS if best >= BEST_EXP_SAVING else FAILS, evidence)


PAIRS_COLUMNS = ("set", "loss_max", "instance_key", "cost_depl", "cost_best_exp", "saving")


def depl_vs_best_exp_pairs(ratios: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Paired costs of DepL and best-exp on the same instance and targets;
    ``saving`` = 1 − cost_depl / cost_best_exp."""
    sub, scope = _fig56(ratios)
    if sub.empty:
        return pd.DataFrame(columns=list(PAIRS_COLUMNS)), scope
    setcol = np.where(sub["paper_set"] != "", sub["paper_set"], sub["family"])
    sub = sub.assign(set=setcol)
    keys = ["set", "loss_max", "instance_key"]
    a = sub[sub["solver"] == DEPL].groupby(keys)["cost"].min()
    b = sub[sub["solver"] == BEST_EXP].groupby(keys)["cost"].min()
    j = pd.concat([a.rename("cost_depl"), b.rename("cost_best_exp")], axis=1, join="inner")
    j = j[j["cost_best_exp"] > 0].reset_index()
    j["saving"] = 1.0 - j["cost_depl"] / j["cost_best_exp"]
    return j[list(PAIRS_COLUMNS)], scope


#: "Outperforms" in the PACT claim: PACT's cost below the competitor's at
#: every target where both have a plan, by more than 1.96 standard errors of
#: PACT's closed-loop mean (0 for a static plan's deterministic cost).
PACT_CLAIM = "PACT Fig. 6: PACT closely matches the optimum and outperforms StaticLearn and OneSwitch"


def _pact_verdict(comp: pd.DataFrame, col: str, sem_col: str | None) -> tuple[str, str]:
    """(verdict, numbers) of the PACT claim for PACT's cost column ``col``."""
    c = comp[comp[col].notna() & comp["optimum"].notna()]
    if c.empty:
        return UNMEASURED, "no target with both PACT's cost and an exact optimum"
    gap = c[col].to_numpy(float) / c["optimum"].to_numpy(float) - 1.0
    med, p90 = float(np.median(gap)), float(np.quantile(gap, 0.9))
    matches = med <= MATCH_MEDIAN_GAP and p90 <= MATCH_P90_GAP
    parts = [", ".join(f"ℓmax {lm:g}: {v:.1f} vs optimum {o:.1f} ({100 * g:+.1f} %)"
                       for lm, v, o, g in zip(c["loss_max"], c[col], c["optimum"], gap))]
    parts.append(f"gap median {100 * med:+.2f} %, 90th pct {100 * p90:+.2f} % → "
                 + ("matches" if matches else "does not match"))
    beats = True
    for key, label in (("static_learn", "StaticLearn"), ("one_switch", "OneSwitch")):
        h = comp[comp[col].notna() & comp[key].notna()]
        if h.empty:
            parts.append(f"{label}: no common target")
            beats = False
            continue
        sem = h[sem_col].fillna(0.0).to_numpy(float) if sem_col else np.zeros(len(h))
        won = h[col].to_numpy(float) + 1.96 * sem < h[key].to_numpy(float)
        lost = [f"{lm:g} ({v:.1f} vs {o:.1f})" for lm, v, o, w in zip(h["loss_max"], h[col], h[key], won)
                if not w]
        parts.append(f"below {label} at {int(won.sum())}/{len(h)} targets"
                     + (f" (not at ℓmax {', '.join(lost)})" if lost else ""))
        beats &= bool(won.all())
    return (HOLDS if matches and beats else FAILS), "; ".join(parts)


def pact_claims(df: pd.DataFrame) -> list[dict]:
    """PACT Sec. VI-C / Fig. 6 (left), judged three times: on PACT as its paper
    runs it (closed loop, against the other plans run to their end as PACT's
    benchmarks are), on PACT's static plan (open loop), and closed-loop PACT
    against the adaptive optimum at matched risk (:func:`_pact_adaptive_row`)."""
    from deplbench.reports.closed_loop import PACT_SET, pact_comparison

    says = ("PACT outperforms the alternative solutions, and closely matches the optimum "
            "(Fig. 6 left, VGG11 L/M/S, Tmax = 1000)")
    evidence = "tables pact_comparison, closed_loop; figure pact_fig6_left"
    comp = pact_comparison(df)
    if comp.empty:
        msg = f"no plan on the {PACT_SET} instance set (a sweep with its PACT group, e.g. quick.toml)"
        return [_row(PACT_CLAIM + " (closed loop)", "PACT paper §VI-C", says, msg, UNMEASURED, evidence),
                _row(PACT_CLAIM + " (open loop)", "PACT paper §VI-C", says, msg, UNMEASURED, evidence),
                _pact_adaptive_row(df, says)]
    v_cl, txt_cl = _pact_verdict(comp, "pact_closed", "pact_closed_sem")
    if v_cl != UNMEASURED:
        fair = comp[comp["pact_closed"].notna() & comp["optimum_stopped"].notna()]
        if not fair.empty:
            g = fair["pact_closed"].to_numpy(float) / fair["optimum_stopped"].to_numpy(float) - 1.0
            txt_cl += (f". Fair comparison (the other plans also stopped at ℓmax): closed-loop PACT vs the "
                       f"optimum's plan stopped {', '.join(f'{100 * x:+.1f} %' for x in g)}")
            for key, label in (("static_learn_stopped", "StaticLearn"), ("one_switch_stopped", "OneSwitch")):
                h = fair[fair[key].notna()]
                if not h.empty:
                    txt_cl += (f"; below {label} stopped at "
                               f"{int((h['pact_closed'] < h[key]).sum())}/{len(h)} targets")
        ps = comp["pact_closed_p_success"].dropna()
        if not ps.empty:
            txt_cl += f"; closed-loop PACT's P(success) {ps.min():.4f}–{ps.max():.4f}"
    v_ol, txt_ol = _pact_verdict(comp, "pact_open", None)
    return [_row(PACT_CLAIM + " — closed loop (PACT re-plans every epoch from the observed loss; "
                 "rests on the closed-loop simulation)", "PACT paper §VI-C", says,
                 "mean cost over the closed-loop runs vs each benchmark's static plan cost (PACT's "
                 "benchmarks are fixed strategies): " + txt_cl, v_cl, evidence),
            _row(PACT_CLAIM + " — open loop (PACT's static plan, re-planned from robust "
                 "predictions; rests on the static evaluation)", "PACT paper §VI-C", says,
                 "static plan costs: " + txt_ol, v_ol, evidence),
            _pact_adaptive_row(df, says)]


def _pact_adaptive_row(df: pd.DataFrame, says: str) -> dict:
    """PACT Fig. 6 re-judged against the adaptive optimum at matched risk.

    PACT's "optimum" is, in its text, found with the true loss evolution
    (an orchestrator knowing each run's losses in advance): no policy can
    attain it. The implementable reference is the best closed-loop policy
    with P(success) ≥ ω, bracketed by adaptive-opt. Holds when closed-loop
    PACT is within the "virtually matches" thresholds of the proven bound
    at its own success level (ratio_own − 1: median ≤ 2 %, 90th pct ≤ 5 %);
    does not hold when it is dearer than the certified adaptive policy at ω
    by more than those thresholds; otherwise the bracket is too wide to say.
    """
    from deplbench.reports.adaptive import pact_matched

    claim = (PACT_CLAIM + " — against the adaptive optimum (the best policy that observes the loss, "
             "P(success) ≥ ω; matched risk)")
    evidence = "tables matched_risk, price_of_adaptivity; figure adaptive_frontier"
    t = pact_matched(df)
    if t.empty:
        return _row(claim, "PACT paper §VI-C", says, "no target with both closed-loop PACT and an adaptive-opt "
                    "bracket on the same instance (quick.toml runs both on the PACT set)", UNMEASURED, evidence)
    own = t["ratio_own"].to_numpy(float) - 1.0
    hi = t["ratio_omega_low"].to_numpy(float) - 1.0        # PACT vs the certified adaptive policy
    nums = "; ".join(f"ℓmax {lm:g}: PACT {c:.1f} at P(success) {p:.4f}, optimum ≥ {lb:.1f} there "
                     f"({100 * o:+.1f} %), certified policy {ub:.1f} at ω ({100 * h:+.1f} %)"
                     for lm, c, p, lb, o, ub, h in zip(t["loss_max"], t["cost_mean"], t["p_success"],
                                                     t["lb_own"], own, t["ub_omega"], hi))
    if np.isfinite(own).all() and np.median(own) <= MATCH_MEDIAN_GAP and np.quantile(own, 0.9) <= MATCH_P90_GAP:
        verdict, why = HOLDS, "within the thresholds of the proven bound"
    elif np.median(hi) > MATCH_MEDIAN_GAP or np.quantile(hi, 0.9) > MATCH_P90_GAP:
        verdict, why = FAILS, "dearer than a certified adaptive policy beyond the thresholds"
    else:
        verdict, why = UNMEASURED, "the adaptive bracket is too wide to decide"
    return _row(claim, "PACT paper §VI-C", says + ". The paper's 'optimum' is found with the true loss "
                "evolution (known in advance), which no policy can attain; here the reference is the best "
                "implementable closed-loop policy at the same risk",
                f"closed-loop PACT vs the adaptive optimum: {nums} → {why}", verdict, evidence)


def audit(df: pd.DataFrame, ratios: pd.DataFrame, fits: pd.DataFrame) -> pd.DataFrame:
    """The claims-audit table (one row per claim of the DepL paper).

    Parameters
    ----------
    df : pandas.DataFrame
        Prepared store frame.
    ratios : pandas.DataFrame
        :func:`~deplbench.reports.stats.with_ratios` output.
    fits : pandas.DataFrame
        :func:`~deplbench.reports.complexity.complexity_fits` output.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CLAIMS_COLUMNS`, verdicts in :data:`VERDICTS`.
    """
    rows = [property2(fits), property3(ratios), submodularity(df),
            matches_optimum(ratios), beats_best_exp(ratios), *pact_claims(df)]
    return pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS))
