"""What every claims-audit row shares: the verdicts, the columns, the
papers' quoted sentences, the thresholds and the row constructor
(:mod:`deplbench.reports.claims` judges the claims with them).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.jsonio import level_percent

HOLDS, FAILS, UNMEASURED = "holds", "does not hold", "not measured in this run"
#: A claim measured against a bracket LB ≤ z* ≤ UB too wide to tell.
UNDECIDED = "not decided (the reference bracket is too wide)"
#: A claim judged on the median over distinct instances whose 95 % interval
#: contains the threshold (the row says how many instances would decide it).
NOT_DECIDED = "not decided (the interval contains the threshold)"
#: A claim judged on the median over distinct instances whose interval rests on a
#: bracket without a stated confidence: the interval's level is not computable.
NO_LEVEL = "not decided (the interval's level is not computable)"
#: A comparison the rules forbid judging (SPEC §5: a mean cost is never set
#: against plans held to an ω-quantile); its numbers stay, as description.
NOT_APPLICABLE = "not applicable (mean vs quantile)"
VERDICTS = (HOLDS, FAILS, UNMEASURED, UNDECIDED, NOT_DECIDED, NO_LEVEL, NOT_APPLICABLE)

CLAIMS_COLUMNS = ("claim", "source", "paper_says", "compared", "reference", "statistic",
                  "instances", "measured", "verdict", "evidence")

#: The papers' sentences each claim row quotes (DepL paper, arXiv:2402.14346;
#: PACT paper, doi:10.1109/INFOCOM53939.2023.10229076).
QUOTES = {
    "property2": "“The DepL procedure has worst-case polynomial complexity of "
                 "O(|D|² + |M|²K²/η⁴ + 1/ε).” (Property 2)",
    "property3": "“The DepL solution has a constant competitive ratio, namely, "
                 "(1/η)(1 + ε).” (Property 3)",
    "submodularity": "“More formally, K̂(D̂)T̂(D̂) is submodular.” (Sec. IV-A)",
    "matches": "“Most interestingly, DepL outperforms best-exp and virtually matches "
               "the optimum.” (Sec. VI-B)",
    "best_exp": "“[DepL] outperforms the state-of-the-art by over 27% and closely "
                "matches the optimum.” (abstract)",
}

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
#: (what solvers/depl/depl.py writes).
SUBMODULAR_DICT_KEY = "submodularity"

#: The algorithms the papers' claims are about, by registry name: the
#: claims name them, so the audit does too. "The paper's DepL" is DepL with
#: its proven guarantee: ``calibrate = true`` trades it for a statistical
#: one (solvers/depl/depl.py), so those rows are a different algorithm here.
DEPL, BEST_EXP = "depl", "best-exp"


def finite_num(v) -> float:
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
    if isinstance(sub, dict) and math.isfinite(finite_num(sub.get("violated"))):
        ex = sub.get("exhaustive")
        return (finite_num(sub["violated"]), finite_num(sub.get("checked")),
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


def claim_row(claim, source, says, measured, verdict, evidence, compared="", reference="",
         statistic="", instances=math.nan):
    """One claims-audit row: what is compared (``compared``), against which
    reference, with what statistic, over how many distinct instances."""
    return {"claim": claim, "source": source, "paper_says": says, "compared": compared,
            "reference": reference, "statistic": statistic, "instances": instances,
            "measured": measured, "verdict": verdict, "evidence": evidence}


def fmt_fit(r) -> str:
    """``"1.98 [1.98, 1.99] (95 % fit-residual band …), 8 runs, 25–200"``: the slope, its
    interval with its level and kind (a t confidence interval on runtimes, a fit-residual
    band on exact work counters: column ``ci_kind``)."""
    kind = getattr(r, "ci_kind", "") or ""
    level = getattr(r, "ci_level", math.nan)
    label = (f" ({level_percent(level, 0)} % {kind})" if kind and isinstance(level, float) and math.isfinite(level)
             else f" ({kind})" if kind else "")
    ci = (f"[{r.ci_low:.2f}, {r.ci_high:.2f}]{label}" if math.isfinite(r.ci_low) else "[n/a]")
    return f"{r.slope:.2f} {ci}, {int(r.points)} runs, {r.min_value:g}–{r.max_value:g}"


def judgeable(f: pd.DataFrame) -> pd.DataFrame:
    return f[f["verdict"].isin(("consistent", "contradicts"))] if not f.empty else f


def matches_verdict(lo, hi, undecided: str = UNDECIDED) -> tuple[str, tuple[float, float, float, float]]:
    """The "virtually matches" verdict on per-instance gap intervals [lo, hi].

    Holds when even the upper ends meet both thresholds (median ≤
    :data:`MATCH_MEDIAN_GAP`, 90th percentile ≤ :data:`MATCH_P90_GAP`), does
    not hold when the lower ends already miss one, else ``undecided``.
    Returns the verdict and (median lo, median hi, p90 lo, p90 hi).
    """
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    stats = (float(np.median(lo)), float(np.median(hi)), float(np.quantile(lo, 0.9)),
             float(np.quantile(hi, 0.9)))
    med_lo, med_hi, p90_lo, p90_hi = stats
    if med_hi <= MATCH_MEDIAN_GAP and p90_hi <= MATCH_P90_GAP:
        return HOLDS, stats
    if med_lo > MATCH_MEDIAN_GAP or p90_lo > MATCH_P90_GAP:
        return FAILS, stats
    return undecided, stats


def median_verdict(ci, threshold: float, holds_below: bool = True) -> str:
    """The claims-audit verdict of a :class:`~deplbench.reports.median.MedianInterval`
    against ``threshold`` (:func:`~deplbench.reports.median.decide`); :data:`NO_LEVEL`
    when the interval exists but its level is not computable (NaN)."""
    from deplbench.reports.median import DECIDE_FAILS, DECIDE_HOLDS, decide

    if ci.exists and math.isnan(ci.level):
        return NO_LEVEL
    v = decide(ci, threshold, holds_below)
    return HOLDS if v == DECIDE_HOLDS else FAILS if v == DECIDE_FAILS else NOT_DECIDED


#: The statistic every population claim states.
MEDIAN_STATISTIC = ("median over distinct instances (one value each; identity = the instance's "
                    "content hash) with a 95 % exact binomial order-statistic interval "
                    "(distribution-free) on it")


__all__ = [
    "MEDIAN_STATISTIC",
    "median_verdict",
    "matches_verdict",
    "claim_row",
    "finite_num",
    "fmt_fit",
    "judgeable",
    "BEST_EXP",
    "BEST_EXP_SAVING",
    "CLAIMS_COLUMNS",
    "DEPL",
    "FAILS",
    "FIG56_SETS",
    "HOLDS",
    "MATCH_MEDIAN_GAP",
    "MATCH_P90_GAP",
    "NOT_APPLICABLE",
    "NOT_DECIDED",
    "NO_LEVEL",
    "QUOTES",
    "SUBMODULAR_DICT_KEY",
    "UNDECIDED",
    "UNMEASURED",
    "VERDICTS",
    "paper_depl",
    "submodularity_record",
]
