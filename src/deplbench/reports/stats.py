"""Statistics the report computes: optima, ratios, shifted geometric means,
performance profiles and log-log slope fits (intervals on a median over
instances and the verdicts on them: :mod:`deplbench.reports.median`).

Every function here is pure (frames in, frames or numbers out), so the
numbers in a report can be recomputed and tested without drawing anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from deplbench.benchmarks.sgm import shifted_geomean
from deplbench.reports.data import NON_CONFIG_KEYS, ReportError, canonical
from deplbench.reports.reference import CERTIFIED, EXACT, SAA, reference_kind, references

#: Relative tolerance under which two optima of one instance "agree".
AGREEMENT_RTOL = 1e-6


@dataclass(frozen=True)
class SlopeFit:
    """OLS fit of log(y) = a + b·log(x).

    Attributes
    ----------
    slope, intercept : float
        b and a (natural logs; the slope is base independent).
    ci_low, ci_high : float
        Two-sided t-interval on the slope (NaN with fewer than 3 points).
    stderr : float
        Standard error of the slope.
    n : int
        Number of points.
    r2 : float
        Coefficient of determination on the log scale.
    """

    slope: float
    intercept: float
    ci_low: float
    ci_high: float
    stderr: float
    n: int
    r2: float

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies inside the confidence interval."""
        return bool(self.ci_low <= value <= self.ci_high)


def shifted_geometric_mean(values, shift: float = 1.0) -> float:
    """Shifted geometric mean, exp(mean(log(t + s))) − s.

    Parameters
    ----------
    values : array_like
        Non-negative numbers (solve times in seconds).
    shift : float, optional
        s > 0. The shift damps the weight of tiny times, whose ratios are
        noise; MIP benchmarking uses it for solve times (Achterberg 2007,
        App. A: s = 10 s for hour-long runs). Default 1 s, since our solves
        take seconds, not hours.

    Returns
    -------
    float
        NaN for an empty input.

    Raises
    ------
    ReportError
        If ``shift`` is not positive or a value is negative.
    """
    # one implementation for the report and `library check` (benchmarks.sgm)
    return shifted_geomean(values, shift, error=ReportError)


def loglog_fit(x, y, confidence: float = 0.95) -> SlopeFit | None:
    """Fit log(y) = a + b log(x) by ordinary least squares.

    Parameters
    ----------
    x, y : array_like
        Positive numbers; non-positive or non-finite pairs are dropped.
    confidence : float, optional
        Level of the two-sided t-interval on b (n − 2 degrees of freedom).

    Returns
    -------
    SlopeFit or None
        None when fewer than two distinct x remain (no slope is defined).

    Notes
    -----
    A runtime scaling as C·p^b is a straight line of slope b on log-log
    axes, so b is the measured exponent compared with Property 2.
    """
    if not 0 < confidence < 1:
        raise ReportError(f"confidence: must lie in (0, 1), got {confidence!r}")
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    lx, ly = np.log(x[ok]), np.log(y[ok])
    n = lx.size
    if n < 2 or np.unique(lx).size < 2:
        return None
    xm, ym = lx.mean(), ly.mean()
    sxx = float(((lx - xm) ** 2).sum())
    slope = float(((lx - xm) * (ly - ym)).sum() / sxx)
    intercept = float(ym - slope * xm)
    resid = ly - (intercept + slope * lx)
    sst = float(((ly - ym) ** 2).sum())
    r2 = 1.0 - float((resid ** 2).sum()) / sst if sst > 0 else 1.0
    if n < 3:
        return SlopeFit(slope, intercept, math.nan, math.nan, math.nan, n, r2)
    stderr = math.sqrt(float((resid ** 2).sum()) / (n - 2) / sxx)
    t = float(sps.t.ppf(0.5 + confidence / 2, n - 2))
    return SlopeFit(slope, intercept, slope - t * stderr, slope + t * stderr,
                    stderr, n, r2)


def performance_profile(metric: pd.DataFrame) -> pd.DataFrame:
    """Dolan–Moré performance ratios.

    Parameters
    ----------
    metric : pandas.DataFrame
        Problems × solvers, the metric to minimise (runtime, cost); NaN or
        inf marks a failure on that problem.

    Returns
    -------
    pandas.DataFrame
        Same shape: r(p, s) = t(p, s) / min_s t(p, s), inf for failures.
        Problems no solver solved are dropped.

    References
    ----------
    E. D. Dolan, J. J. Moré, "Benchmarking optimization software with
    performance profiles", Math. Program. 91 (2002) 201–213.
    """
    m = metric.astype(float)
    # A 0 s run would make every ratio infinite; clip keeps NaN (failures).
    m = m.where(np.isfinite(m)).clip(lower=1e-12)
    best = m.min(axis=1, skipna=True)
    keep = best.notna()
    ratio = m[keep].div(best[keep], axis=0)
    return ratio.fillna(np.inf)


def profile_curve(ratios: pd.Series, taus: np.ndarray) -> np.ndarray:
    """ρ_s(τ) = share of problems with r(p, s) ≤ τ, for each τ."""
    r = np.asarray(ratios, dtype=float)
    if r.size == 0:
        return np.zeros_like(taus, dtype=float)
    return (r[None, :] <= np.asarray(taus, dtype=float)[:, None]).mean(axis=1)


# --------------------------------------------------------------------------
# proven optima and competitive ratios


OPTIMUM_COLUMNS = ("instance_key", "optimum", "optimum_source", "optimum_exp_loss",
                   "n_oracles", "oracle_spread", "optimum_kind", "optimum_scenarios",
                   "n_proven_oracles", "proven_spread", "saa_vs_exact_gap")

#: ``optimum_kind`` of an optimum proven for the chance-constrained problem,
#: and of an SAA optimum (exact for its S scenarios only, not proven).
PROVEN, SAA_ONLY = "proven", "saa"


def optimum_per_instance(df: pd.DataFrame) -> pd.DataFrame:
    """The proven optimum of every instance (same ``instance_sha``).

    Parameters
    ----------
    df : pandas.DataFrame
        Prepared store frame (:func:`deplbench.reports.data.prepare`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`OPTIMUM_COLUMNS`. Candidates are the rows of exact
        solvers (record column ``exact``) with status ``optimal`` and a
        cost. Per solver, the row with the most in-sample scenarios S is
        kept (a scenario-free solver, S NULL, solves the chance constraint
        itself and comes first): fewer scenarios loosen the SAA and lower
        the cost, so the cheapest row would bias every ratio upward; ties go
        to the lower cost. Among solvers, the record's ``reference_priority``
        (lower first; the solver declares it) picks the optimum when the
        column is present, else the same scenario order. ``optimum_source``
        names the solver, ``optimum_exp_loss`` is that row's E[ℓ(K)], and
        ``oracle_spread`` is the relative spread (max − min)/min between the
        solvers' optima, so a MILP that disagrees with the knapsack DP is
        visible instead of averaged away. ``optimum_kind`` is
        :data:`PROVEN` for an exact optimum of the chance-constrained problem
        (a scenario-free exact solver, reference exact-static) and
        :data:`SAA_ONLY` for an SAA optimum (reference saa: exact for its
        ``optimum_scenarios`` scenarios, not a proven optimum of the
        problem); ``n_proven_oracles`` and ``proven_spread`` are the count
        and spread of the proven ones alone, ``saa_vs_exact_gap`` the largest
        relative gap of an SAA optimum to the proven one (NaN without both).
    """
    if df.empty:
        return _empty_optimum()
    exact = df[df["is_exact"] & (df["status"] == "optimal") & df["cost"].notna()]
    if exact.empty:
        return _empty_optimum()
    scen = exact["scenarios"].astype(float)
    prio = (pd.to_numeric(exact["reference_priority"], errors="coerce").astype(float)
            if "reference_priority" in exact else pd.Series(np.nan, index=exact.index))
    exact = exact.assign(_free=scen.isna(), _scen=scen.fillna(np.inf),
                         _prio=prio.fillna(np.inf))
    exact = exact.sort_values(["_prio", "_free", "_scen", "cost"],
                              ascending=[True, False, False, True], kind="stable")
    best = exact.groupby(["instance_key", "solver"], sort=False).head(1)
    best = best.assign(_saa=(reference_kind(best) == SAA).to_numpy())
    rows = []
    for key, g in best.groupby("instance_key", sort=False):
        ref = g.iloc[0]  # already in priority order
        proven = g[~g["_saa"]]
        saa = g[g["_saa"]]
        if not proven.empty:
            ref = proven.iloc[0]  # a proven optimum before any SAA one
        pv = proven["cost"].to_numpy(float)
        gap = (float(np.max(np.abs(saa["cost"].to_numpy(float) / pv[0] - 1.0)))
               if len(pv) and len(saa) and pv[0] != 0 else math.nan)
        rows.append((key, float(ref["cost"]), ref["solver"], float(ref["exp_final_loss"]),
                     len(g), _spread(g["cost"].to_numpy(float)), SAA_ONLY if bool(ref["_saa"]) else PROVEN,
                     float(ref["scenarios"]) if pd.notna(ref["scenarios"]) else math.nan,
                     len(proven), _spread(pv), gap))
    return pd.DataFrame(rows, columns=list(OPTIMUM_COLUMNS))


def _spread(vals: np.ndarray) -> float:
    """Relative spread (max − min)/|min| (absolute when min = 0; NaN when empty)."""
    if not len(vals):
        return math.nan
    lo = vals.min()
    return float((vals.max() - lo) / abs(lo)) if lo != 0 else float(vals.max() - lo)


def _empty_optimum() -> pd.DataFrame:
    return pd.DataFrame({"instance_key": pd.Series(dtype=object),
                         "optimum": pd.Series(dtype=float),
                         "optimum_source": pd.Series(dtype=object),
                         "optimum_exp_loss": pd.Series(dtype=float),
                         "n_oracles": pd.Series(dtype=int),
                         "oracle_spread": pd.Series(dtype=float),
                         "optimum_kind": pd.Series(dtype=object),
                         "optimum_scenarios": pd.Series(dtype=float),
                         "n_proven_oracles": pd.Series(dtype=int),
                         "proven_spread": pd.Series(dtype=float),
                         "saa_vs_exact_gap": pd.Series(dtype=float)})


def with_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with a plan, joined to their instance's optimum.

    Returns
    -------
    pandas.DataFrame
        The rows of ``df`` with ``has_plan``, plus ``optimum``,
        ``optimum_source`` and ``ratio`` = cost / optimum (NaN when no
        optimum is known; the competitive ratio of Property 3).
    """
    plans = df[df["has_plan"]].copy() if not df.empty else df.copy()
    opt = optimum_per_instance(df)
    plans = plans.merge(opt[["instance_key", "optimum", "optimum_source", "optimum_exp_loss", "optimum_kind",
                             "optimum_scenarios"]],
                        on="instance_key", how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        plans["ratio"] = plans["cost"] / plans["optimum"].where(plans["optimum"] > 0)
    # the instance's reference for figures comparing costs of one instance:
    # the exact optimum, else the certified bracket's UB, else the SAA optimum
    # (reports/reference.py; the kind is named on the axis)
    refs = references(df) if not df.empty else pd.DataFrame(columns=["instance_key", "kind", "ub"])
    pick: dict[str, tuple[str, float]] = {}
    for kind in (SAA, CERTIFIED, EXACT):  # later kinds override earlier ones
        for key, ub in refs.loc[refs["kind"] == kind, ["instance_key", "ub"]].itertuples(
                index=False, name=None):
            if ub > 0:  # NaN compares False
                pick[key] = (kind, float(ub))
    plans["reference_kind"] = [pick.get(k, ("", math.nan))[0] for k in plans["instance_key"]]
    ref_ub = np.array([pick.get(k, ("", math.nan))[1] for k in plans["instance_key"]], float)
    plans["ratio_ref"] = plans["cost"].to_numpy(float) / ref_ub if len(plans) else []
    return plans


def reference_config(df: pd.DataFrame, by: str = "algorithm") -> pd.DataFrame:
    """Keep, per (family, ``by``), the rows of its most frequent configuration.

    Figures that draw one line per series (Fig. 5 left, profiles) must not
    mix DepL at η = 25 with DepL at η = 200; they use the configuration the
    sweep ran most often (ties: the lexicographically first label), and say
    which in their caption. With ``by="solver"`` the configuration is the
    pair (series, config), so one sweep entry of that solver is chosen.

    The choice is made per paper set (column ``paper_set``, "" outside the
    papers' sets) within the family: sets of one family may run a series
    at different settings (PACT's VGG11 set at another loss resolution and
    scenario count than AlexNet's), and a configuration chosen across sets
    would drop every row of the set that ran the other one.
    """
    if df.empty:
        return df
    keep = []
    keys = ["family", "paper_set", by] if "paper_set" in df else ["family", by]
    for _, grp in df.groupby(keys, sort=False):
        conf = grp["algorithm"] + "\x00" + grp["config"] if by != "algorithm" else grp["config"]
        counts = conf.value_counts()
        top = sorted(counts[counts == counts.max()].index)[0]
        keep.append(grp[conf == top])
    return pd.concat(keep) if keep else df.iloc[0:0]


def reference_labels(df: pd.DataFrame) -> dict[tuple[str, str], str]:
    """{(set, series): config label} chosen by :func:`reference_config`
    (set = the paper set, else the family)."""
    ref = reference_config(df)
    if ref.empty:
        return {}
    ref = ref.assign(_set=ref["paper_set"].where(ref["paper_set"] != "", ref["family"])
                     if "paper_set" in ref else ref["family"])
    return {k: g["config"].iloc[0] for k, g in ref.groupby(["_set", "algorithm"])}


def swept_series(df: pd.DataFrame, swept: tuple[str, ...]) -> pd.Series:
    """Name the series along the ``swept`` parameters: one per solver and
    setting of its *other* parameters.

    Rows of different sweep entries that differ only in a swept parameter
    (DepL's default entry at η = 200 and its ``depl-eta`` entry) form one
    series, named after the solver; an entry whose other parameters differ
    (``depl-calibrated``) stays a series of its own, named by its label.
    Names are unique: clashes get the distinguishing parameters appended.
    """
    if df.empty:
        return pd.Series(dtype=object, index=df.index)
    drop = set(swept) | NON_CONFIG_KEYS
    sig = [canonical({k: v for k, v in d.items() if k not in drop}) for d in df["params_d"]]
    key = pd.Series(list(zip(df["solver"], sig)), index=df.index)
    names: dict[tuple, str] = {}
    for k, g in df.groupby(key, sort=True):
        labels = sorted(set(g["algorithm"]))
        names[k] = labels[0] if len(labels) == 1 else k[0]
    taken: dict[str, list[tuple]] = {}
    for k, n in names.items():
        taken.setdefault(n, []).append(k)
    for n, ks in taken.items():
        if len(ks) > 1:
            for k in ks:
                names[k] = f"{n} [{k[1]}]"
    return key.map(names).astype(object)
