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

from deplbench.reports.claims_common import (  # noqa: F401 (re-exported)
    BEST_EXP,
    BEST_EXP_SAVING,
    CLAIMS_COLUMNS,
    DEPL,
    FAILS,
    FIG56_SETS,
    HOLDS,
    MATCH_MEDIAN_GAP,
    MATCH_P90_GAP,
    MEDIAN_STATISTIC,
    NOT_APPLICABLE,  # noqa: F401 (re-exported)
    NOT_DECIDED,
    QUOTES,
    SUBMODULAR_DICT_KEY,
    UNDECIDED,
    UNMEASURED,
    VERDICTS,
    claim_row,
    finite_num,
    fmt_fit,
    judgeable,
    matches_verdict,
    median_verdict,
    paper_depl,
    submodularity_record,
)
from deplbench.reports.claims_pact import PACT_CLAIM, pact_claims  # noqa: F401 (re-exported)
from deplbench.reports.complexity import (
    ASYMPTOTIC_REGIME,
    CLAIMED_EXPONENTS,
    TIME,
    best_fits,
)
from deplbench.reports.median import (
    MedianInterval,
    level_caveat,
    median_interval,
    undecided_text,
    with_bracket_failures,
)
from deplbench.reports.reference import (
    CERTIFIED,
    EXACT,
    PLAN_COLUMNS,
    SAA,
    plan_ratios,
    references,
)
from deplbench.reports.stats import reference_config
from deplbench.reports.tables import RATIO_RTOL, property3_bound, size_label


def property2(fits: pd.DataFrame, algorithm: str = DEPL) -> dict:
    """Property 2: O(|D|² + |M|²K²/η⁴ + 1/ε) against fitted log-log slopes.

    Where the solver reports work counters (``diagnostics["work"]``), a
    parameter is judged on the dominant counter (steepest growth; for ε the
    steepest fall as ε → 0) — exact counts, no timing noise — and the
    runtime slope is quoted beside it;
    otherwise it is judged on the runtime slope. The text says which.
    """
    claim = "Property 2: complexity"
    evidence = "tables complexity_fits, complexity_counters; figures complexity_*"
    tf = judgeable(best_fits(fits, algorithm)) if not fits.empty else fits
    wf = fits[fits["measure"] != TIME] if not fits.empty else fits
    wf = judgeable(best_fits(wf, algorithm, measure=None)) if not wf.empty else wf
    if not wf.empty:
        # the dominant counter per parameter: the steepest growth as the size
        # grows, the steepest fall as ε → 0 (ASYMPTOTIC_REGIME)
        sign = wf["parameter"].map(lambda p: -1.0 if ASYMPTOTIC_REGIME.get(p) == "small"
                                   else 1.0)
        # η and K̄ enter Property 2 through the vertex count V of the expanded
        # graph: judge them on the nominal vertex counter where there is one.
        # A counter of *reachable* vertices also grows as the reachable part
        # of the graph fills up with K̄, a steeper slope that is not V's.
        vert = (wf["measure"].str.contains("vertices")
                & ~wf["measure"].str.contains("reachable")
                & wf["parameter"].isin(("eta", "horizon")))
        nominal = vert.astype(int) + (vert & wf["measure"].str.contains("nominal")).astype(int)
        wf = (wf.assign(_nom=nominal, _key=sign * wf["slope"])
              .sort_values(["_nom", "_key"], ascending=False)
              .groupby("parameter", sort=False).head(1).drop(columns=["_key", "_nom"]))
    params = list(dict.fromkeys(list(tf["parameter"] if not tf.empty else [])
                                + list(wf["parameter"] if not wf.empty else [])))
    if not params:
        return claim_row(claim, "DepL paper §V", QUOTES["property2"],
                    f"no '{algorithm}' slope over ≥ 4 completed runs and ≥ 3 distinct "
                    "values of η, ε, |M|, K̄ or |D| (others fixed) in this store",
                    UNMEASURED, evidence, compared=f"'{algorithm}' runtime or work counters",
                    reference="Property 2's exponents", statistic="—", instances=0)
    parts, bad, on_counters, why = [], [], [], []
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
            txt += f"counter '{w.measure}' slope {fmt_fit(w)}"
            if t is not None:
                txt += f" (runtime slope {fmt_fit(t)})"
        else:
            txt += f"slope {fmt_fit(t)}"
        txt += f" vs claimed {claimed:+g}"
        if p == "epsilon":
            txt += " (as ε → 0)"
            why.append("ε is the tolerance of this package's (1+ε) allocation DP, not of "
                       "the algorithm of the paper's ref. [22], so the ε slope is ours")
        if p == "eta":
            ok_impl = not (judged.ci_low > implied)
            txt += f" ({'consistent with' if ok_impl else 'above even'} the implied {implied:+g})"
            why.append("η: the proof counts V ≤ |M|K(Tmax/η)(ℓmax/η) vertices, reading η "
                       "as a step, but the paper runs η = 200 as a resolution (steps per "
                       "unit, as here), for which V ∝ |M|Kη² and O(V²) gives η⁺⁴")
        if p == "horizon" and w is not None:
            why.append("K̄: a vertex count grows as K̄, its O(V²) as K̄²"
                       + (" — a counter of reachable vertices also grows as the reachable "
                          "part of the graph fills up, which is not the bound's V"
                          if "reachable" in str(w.measure) else ""))
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
    parts += [f"why: {w_}" for w_ in why]
    runs = int(max((r.points for r in (list(tf.itertuples()) if not tf.empty else [])
                    + (list(wf.itertuples()) if not wf.empty else [])), default=0))
    return claim_row(claim, "DepL paper §V", QUOTES["property2"], "; ".join(parts), verdict,
                evidence, compared=f"'{algorithm}': work counters (diagnostics.work) where "
                "reported, else runtime, against each size parameter with the others fixed",
                reference="the exponent Property 2 prints (and the one its proof implies, "
                "for η)", statistic="OLS log-log slope with a 95 % t-interval (n − 2 dof): a confidence "
                "interval on runtimes, a fit-residual band on exact work counters (no sampling error); fails "
                "when the interval lies wholly above the exponent (for ε: below)",
                instances=runs)


def _proven(df: pd.DataFrame, mask: pd.Series) -> pd.DataFrame:
    """Static plans of the rows in ``mask`` against their instance's proven
    reference (:func:`deplbench.reports.reference.plan_ratios`), with the
    row's η, ε, set and algorithm."""
    sub = df[mask & df["has_plan"]] if not df.empty else df
    if sub.empty:
        return pd.DataFrame(columns=[*PLAN_COLUMNS, "eta", "epsilon"])
    pr = plan_ratios(sub.assign(cl_mode=None)).reset_index(drop=True)
    extra = sub.reset_index(drop=True)[["eta", "epsilon", "paper_set", "family"]]
    return pd.concat([pr, extra], axis=1)


def _refs_into(df: pd.DataFrame, plans: pd.DataFrame) -> pd.DataFrame:
    """Re-attach references computed over the whole store (a plan's own rows
    hold none): cost/UB, cost/LB and the SAA ratio of each plan."""
    refs = references(df)
    by = {(k, kd): (ub, lb) for k, kd, ub, lb in
          refs[["instance_key", "kind", "ub", "lb"]].itertuples(index=False, name=None)}
    out = plans.copy()
    kinds, ubs, lbs, saas = [], [], [], []
    for key, cost in zip(out["instance_key"], out["cost"]):
        kind, ub, lb = "", math.nan, math.nan
        for kd in (EXACT, CERTIFIED):
            if (key, kd) in by:
                kind, (ub, lb) = kd, by[(key, kd)]
                break
        saa = by.get((key, SAA), (math.nan, math.nan))[0]
        kinds.append(kind)
        ubs.append(cost / ub if ub > 0 else math.nan)
        lbs.append(cost / lb if lb > 0 else math.nan)
        saas.append(cost / saa if saa > 0 else math.nan)
    return out.assign(reference=kinds, ratio_ub=ubs, ratio_lb=lbs, ratio_saa=saas)


def property3(ratios: pd.DataFrame, df: pd.DataFrame | None = None) -> dict:
    """Property 3: competitive ratio (1/η)(1+ε), on the paper's DepL's plans.

    Judged against the proven reference: the true ratio cost/z* lies in
    [cost/UB, cost/LB] (UB = LB for the exact optimum). The claim fails on a
    plan whose lower end cost/UB exceeds (1/η)(1+ε), holds when every upper
    end cost/LB is within it; without a proven reference the SAA ratio is
    used, and the row says so.
    """
    claim = "Property 3: competitive ratio"
    evidence = "table competitive_ratio, figures ratio_vs_eta / ratio_vs_epsilon"
    algorithm = DEPL
    base = df if df is not None else ratios
    plans = _refs_into(base, _proven(base, paper_depl(base))) if not base.empty else base
    plans = plans[plans["eta"].notna()] if not plans.empty else plans
    use = plans[plans["reference"] != ""] if not plans.empty else plans
    yard = "proven reference (exact optimum, else certified bracket: cost/UB ≤ true ratio ≤ cost/LB)"
    if use.empty:
        use = plans[plans["ratio_saa"].notna()] if not plans.empty else plans
        use = use.assign(ratio_ub=use["ratio_saa"], ratio_lb=use["ratio_saa"]) if not use.empty else use
        yard = "SAA optimum (no proven reference in this store: the ratio is to the sample's optimum)"
    if use.empty:
        return claim_row(claim, "DepL paper §V", QUOTES["property3"],
                    f"no '{algorithm}' plan with a recorded η on an instance with a reference "
                    "optimum", UNMEASURED, evidence, compared=f"'{algorithm}' plans",
                    reference="none in this store", statistic="—", instances=0)
    bound = np.asarray(property3_bound(use["eta"], use["epsilon"].fillna(0.0)), float)
    lo, hi = use["ratio_ub"].to_numpy(float), use["ratio_lb"].to_numpy(float)
    exceed = int((lo > bound * (1 + RATIO_RTOL)).sum())
    within = int((hi <= bound * (1 + RATIO_RTOL)).sum())
    n_inst = int(use["instance_key"].nunique())
    txt = (f"{len(use)} plans on {n_inst} instances, η ∈ [{use['eta'].min():g}, "
           f"{use['eta'].max():g}]: cost/LB (upper end of the true ratio) median "
           f"{np.median(hi):.4f}, range [{hi.min():.4f}, {hi.max():.4f}]; cost/UB median "
           f"{np.median(lo):.4f}; claimed bound (1/η)(1+ε) range [{bound.min():.4g}, "
           f"{bound.max():.4g}]; {exceed}/{len(use)} plans exceed it even at the lower end")
    if use["epsilon"].isna().any():
        txt += " (ε not recorded for some plans: bound taken with ε = 0, its smallest value)"
    verdict = FAILS if exceed else HOLDS if within == len(use) else UNDECIDED
    return claim_row(claim, "DepL paper §V", QUOTES["property3"], txt, verdict, evidence,
                compared=f"the paper's DepL ('{algorithm}' without calibrate), every plan "
                "with a recorded η", reference=yard,
                statistic="per plan: fails if cost/UB > (1/η)(1+ε); holds if every cost/LB ≤ it",
                instances=n_inst)


def submodularity(df: pd.DataFrame) -> dict:
    """Sec. IV-A: K̂(D̂)·T̂(D̂) is submodular, checked per instance by DepL."""
    claim = "Sec. IV-A: submodularity"
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
        return claim_row(claim, "DepL paper §IV-A", QUOTES["submodularity"],
                    f"no row carries diagnostics.{SUBMODULAR_DICT_KEY} (DepL's count of "
                    "violated diminishing-returns triples per instance)",
                    UNMEASURED, evidence, compared="DepL's submodularity check",
                    reference="none (an inequality)", statistic="—", instances=0)
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
    return claim_row(claim, "DepL paper §IV-A", QUOTES["submodularity"], txt, verdict, evidence,
                compared="DepL's check of the diminishing-returns inequality of K̂(D̂)·T̂(D̂) "
                "on each instance's dataset triples", reference="none (an inequality)",
                statistic="violated triples per instance (the worst configuration counts)",
                instances=len(per_inst))


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


def instance_gaps(df: pd.DataFrame, ratios: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The paper's DepL on Figs. 5–6's sets, one row per distinct instance:
    ``gap_lo``/``gap_hi`` = cost/UB − 1 and cost/LB − 1 against the proven
    reference (equal for the exact optimum; NaN without one), ``gap_saa`` =
    cost / SAA optimum − 1, ``missed`` (the plan misses ℓmax). Several
    configurations of DepL on one instance (its default entry and an η
    sweep at the same η) are one observation: the median of each column."""
    sub, scope = _fig56(ratios)
    if sub.empty:
        return pd.DataFrame(columns=["instance_key", "gap_lo", "gap_hi", "gap_saa", "kind"]), scope
    # the rows _fig56 chose: DepL's reference configuration (one sweep entry)
    keys = set(sub.loc[sub["solver"] == DEPL, "key"])
    base = df if not df.empty else ratios
    mask = paper_depl(base) & base["key"].isin(keys)
    plans = _refs_into(base, _proven(base, mask))
    if plans.empty:
        return pd.DataFrame(columns=["instance_key", "gap_lo", "gap_hi", "gap_saa", "kind"]), scope
    plans = plans.assign(gap_lo=plans["ratio_ub"] - 1, gap_hi=plans["ratio_lb"] - 1,
                         gap_saa=plans["ratio_saa"] - 1, miss=plans["missed"].astype(float))
    per = (plans.groupby("instance_key")
           .agg(gap_lo=("gap_lo", "median"), gap_hi=("gap_hi", "median"),
                gap_saa=("gap_saa", "median"), kind=("reference", "first"),
                missed=("miss", "max"))
           .reset_index())
    return per, scope


def matches_optimum(ratios: pd.DataFrame, df: pd.DataFrame | None = None) -> dict:
    """Figs. 5–6: DepL "virtually matches" the optimum, one observation per
    instance, against the proven reference where there is one.

    Judged on the median gap over distinct instances: holds when the whole
    95 % interval on it is ≤ :data:`MATCH_MEDIAN_GAP`, does not hold when
    the whole interval is above, else not decided (with the number of
    instances that would decide it). Against a certified bracket each
    instance contributes [cost/UB − 1, cost/LB − 1] and the interval is
    taken over the ends (:func:`~deplbench.reports.median.median_interval`).
    The 90th percentile is reported beside it, not judged (no 95 % interval
    on it exists below 29 instances).
    """
    claim = "Figs. 5–6: DepL virtually matches the optimum"
    evidence = "tables gaps, fig5_cost_vs_target, glance_*; figures cost_vs_target_*"
    per, scope = instance_gaps(df if df is not None else ratios, ratios)
    algorithm = DEPL
    thr = f"threshold: median gap ≤ {100 * MATCH_MEDIAN_GAP:g} %"
    if per.empty or (per["gap_hi"].isna().all() and per["gap_saa"].isna().all()):
        return claim_row(claim, "DepL paper §VI-B", QUOTES["matches"],
                    f"no '{algorithm}' plan on an instance with a reference optimum",
                    UNMEASURED, evidence, compared=f"'{algorithm}'", reference="none",
                    statistic="—", instances=0)
    proven = per[per["gap_hi"].notna()]
    if not proven.empty:
        lo = np.nan_to_num(proven["gap_lo"].to_numpy(float), nan=0.0)
        hi = proven["gap_hi"].to_numpy(float)
        # a certified bracket holds at its confidence only: the interval over the
        # instances then holds at the union bound (an exact optimum is proven)
        refs = references(df if df is not None else ratios)
        conf = dict(zip(refs.loc[refs["kind"] == CERTIFIED, "instance_key"],
                        refs.loc[refs["kind"] == CERTIFIED, "confidence"]))
        alphas = [1.0 - float(conf.get(k, math.nan)) if kd == CERTIFIED else 0.0
                  for k, kd in zip(proven["instance_key"], proven["kind"])]
        ci = with_bracket_failures(median_interval(lo, hi), alphas)
        kinds = ", ".join(sorted(set(proven["kind"].dropna().astype(str)) - {""}))
        txt = (f"{scope}, {ci.n} distinct instances with a proven reference ({kinds}): gap to "
               f"the true optimum median {ci.text(100, ' %')} ({thr}); 90th pct "
               f"{100 * float(np.quantile(hi, 0.9)):.2f} % (not judged)")
        reference = "proven reference per instance (exact optimum, else certified bracket)"
    else:
        gap = per["gap_saa"].dropna().to_numpy(float)
        ci = median_interval(gap)
        txt = (f"{scope}, {ci.n} distinct instances, no proven reference: gap to the "
               f"SAA optimum median {ci.text(100, ' %')} ({thr}); 90th pct "
               f"{100 * float(np.quantile(gap, 0.9)):.2f} %, max {100 * gap.max():.2f} %")
        reference = "SAA optimum (the MILP's sample only; no proven reference here)"
    verdict = median_verdict(ci, MATCH_MEDIAN_GAP)
    if verdict == NOT_DECIDED:
        txt += "; " + undecided_text(ci, MATCH_MEDIAN_GAP)
    else:
        txt += level_caveat(ci)
    saa = per["gap_saa"].dropna()
    if not proven.empty and len(saa):
        txt += f"; against the SAA optimum: median {100 * float(saa.median()):.2f} %"
    miss = per["missed"].dropna()
    if len(miss):
        txt += f"; on {int(miss.sum())}/{len(miss)} instances DepL's plan misses ℓmax"
    return claim_row(claim, "DepL paper §VI-B", QUOTES["matches"], txt, verdict, evidence,
                compared=f"the paper's DepL ('{algorithm}' without calibrate), one value per "
                "instance (median over its configurations there)", reference=reference,
                statistic="cost/reference − 1: " + MEDIAN_STATISTIC + "; holds / does not hold "
                "only when the interval lies wholly on one side of the threshold",
                instances=ci.n)


def _per_instance_saving(pairs: pd.DataFrame) -> np.ndarray:
    """One paired saving per distinct instance (the median over its rows)."""
    return pairs.groupby("instance_key")["saving"].median().to_numpy(float)


def _saving_text(pairs: pd.DataFrame) -> tuple[MedianInterval, str]:
    ci = median_interval(_per_instance_saving(pairs))
    by_target = pairs.groupby(["set", "loss_max"])["saving"].mean()
    key, best = by_target.idxmax(), float(by_target.max())
    return ci, (f"{ci.n} paired instances: median saving {ci.text(100, ' %', 1)}; largest "
                f"target-mean saving {100 * best:.1f} % ({key[0]}, ℓmax = {key[1]:g}); cheaper on "
                f"{int((_per_instance_saving(pairs) > 0).sum())}/{ci.n}")


def beats_best_exp(ratios: pd.DataFrame, df: pd.DataFrame | None = None) -> dict:
    """Figs. 5–6 / abstract: DepL beats best-exp by over 27 %.

    Judged on the paper's DepL (a proven, conservative quantile bound)
    against best-exp (tuned by simulation), one paired saving per distinct
    instance: holds when the 95 % interval on the median saving lies wholly
    at or above :data:`BEST_EXP_SAVING`, does not hold when it lies wholly
    below, else not decided. The largest target-mean saving (the paper's
    best case) is reported beside it. Also the comparison of like
    guarantees: ``depl-proven`` or DepL with ``calibrate`` (a statistical
    guarantee, as best-exp's) against best-exp."""
    claim = "Figs. 5–6: DepL beats best-exp by over 27 %"
    evidence = "table depl_vs_best_exp"
    pairs, scope = depl_vs_best_exp_pairs(ratios)
    if pairs.empty:
        return claim_row(claim, "DepL paper abstract, §VI-B", QUOTES["best_exp"],
                    "no instance on which both 'depl' and 'best-exp' returned a plan",
                    UNMEASURED, evidence, compared="'depl' vs 'best-exp'",
                    reference="none (paired costs)", statistic="—", instances=0)
    ci, txt = _saving_text(pairs)
    txt = (f"{scope}, paper's DepL vs best-exp, {txt} (threshold: median saving ≥ "
           f"{100 * BEST_EXP_SAVING:g} %)")
    # a saving "over 27 %" holds above the threshold: decide on the negated value
    neg = ci.negated()
    verdict = median_verdict(neg, -BEST_EXP_SAVING)
    if verdict == NOT_DECIDED:
        txt += "; " + undecided_text(ci, BEST_EXP_SAVING)
    like, label = like_guarantee_pairs(ratios)
    if not like.empty:
        _, ltxt = _saving_text(like)
        txt += f"; like guarantees ({label} vs best-exp): {ltxt}"
    else:
        txt += ("; like guarantees: no depl-proven or calibrated DepL plan paired with "
                "best-exp in this store")
    return claim_row(claim, "DepL paper abstract, §VI-B", QUOTES["best_exp"], txt,
                verdict, evidence,
                compared="paired costs on the same instance and ℓmax: the paper's DepL "
                "(proven bound) vs best-exp (tuned by simulation); also like guarantees",
                reference="none needed: saving = 1 − cost(DepL)/cost(best-exp)",
                statistic="saving: " + MEDIAN_STATISTIC + "; holds / does not hold only when "
                "the interval lies wholly on one side of 27 %",
                instances=ci.n)


def like_guarantee_pairs(ratios: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """Paired costs of a DepL with a guarantee like best-exp's against
    best-exp: ``depl-proven`` where it ran, else DepL with ``calibrate``."""
    if ratios.empty:
        return pd.DataFrame(columns=list(PAIRS_COLUMNS)), ""
    calibrated = np.asarray([bool(d.get("calibrate")) for d in ratios["params_d"]], bool)
    for label, mask in (("depl-proven", ratios["solver"] == "depl-proven"),
                        ("calibrated DepL", (ratios["solver"] == DEPL) & calibrated)):
        if mask.any():
            pairs, _ = depl_vs_best_exp_pairs(ratios, mask)
            if not pairs.empty:
                return pairs, label
    return pd.DataFrame(columns=list(PAIRS_COLUMNS)), ""


PAIRS_COLUMNS = ("set", "loss_max", "instance_key", "cost_depl", "cost_best_exp", "saving")


def depl_vs_best_exp_pairs(ratios: pd.DataFrame, depl_mask: pd.Series | None = None
                           ) -> tuple[pd.DataFrame, str]:
    """Paired costs of DepL (the paper's, or the rows of ``depl_mask``) and
    best-exp on the same instance and targets; ``saving`` = 1 − cost_depl /
    cost_best_exp."""
    if depl_mask is not None:
        keep = depl_mask | (ratios["solver"] == BEST_EXP)
        sub, is_depl = ratios[keep], depl_mask[keep]
        in_fig56 = sub["paper_set"].isin(FIG56_SETS)
        if in_fig56.any():          # the Figs. 5–6 sets where they ran; the mask follows the rows kept
            sub, is_depl = sub[in_fig56], is_depl[in_fig56]
        sub = sub.assign(solver=np.where(is_depl.to_numpy(bool), DEPL, sub["solver"]))
        return depl_vs_best_exp_pairs_of(sub), ""
    sub, scope = _fig56(ratios)
    return depl_vs_best_exp_pairs_of(sub), scope


def depl_vs_best_exp_pairs_of(sub: pd.DataFrame) -> pd.DataFrame:
    """The pairs of rows with solver ``depl`` and ``best-exp`` in ``sub``."""
    if sub.empty:
        return pd.DataFrame(columns=list(PAIRS_COLUMNS))
    setcol = np.where(sub["paper_set"] != "", sub["paper_set"], sub["family"])
    sub = sub.assign(set=setcol)
    keys = ["set", "loss_max", "instance_key"]
    a = sub[sub["solver"] == DEPL].groupby(keys)["cost"].min()
    b = sub[sub["solver"] == BEST_EXP].groupby(keys)["cost"].min()
    j = pd.concat([a.rename("cost_depl"), b.rename("cost_best_exp")], axis=1, join="inner")
    j = j[j["cost_best_exp"] > 0].reset_index()
    j["saving"] = 1.0 - j["cost_depl"] / j["cost_best_exp"]
    return j[list(PAIRS_COLUMNS)]


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
    rows = [property2(fits), property3(ratios, df), submodularity(df),
            matches_optimum(ratios, df), beats_best_exp(ratios, df), *pact_claims(df)]
    return pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS))
