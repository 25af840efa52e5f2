"""Statistics the report computes: optima, ratios, shifted geometric means,
performance profiles and log-log slope fits.

Every function here is pure (frames in, frames or numbers out), so the
numbers in a report can be recomputed and tested without drawing anything.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from deplbench.reports.data import EXACT_ALGORITHMS, ReportError, lookup

#: Diagnostics keys holding an independent exact optimum (the covering-
#: knapsack DP of SPEC §3, stored by the knapsack sweep). First = expected.
DP_OPTIMUM_KEYS = ("dp_optimum", "knapsack_optimum")

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
    if not (isinstance(shift, (int, float)) and shift > 0 and math.isfinite(shift)):
        raise ReportError(f"shift: must be a positive number, got {shift!r}")
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return math.nan
    if (v < 0).any():
        raise ReportError("values: shifted geometric mean needs non-negative values")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


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


OPTIMUM_COLUMNS = ("instance_key", "optimum", "optimum_source", "n_oracles",
                   "oracle_spread")


def optimum_per_instance(df: pd.DataFrame) -> pd.DataFrame:
    """The proven optimum of every instance (same instance and targets).

    Parameters
    ----------
    df : pandas.DataFrame
        Prepared store frame (:func:`deplbench.reports.data.prepare`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`OPTIMUM_COLUMNS`. Sources, by priority: ``dp`` (a
        ``dp_optimum`` value in any row's diagnostics — the independent
        covering-knapsack DP), ``brute-force`` and ``milp`` (their
        ``optimal`` row with the most in-sample scenarios S, the closest to
        the true chance constraint; fewer scenarios loosen the SAA and lower
        the cost, so the cheapest row would bias every ratio upward; ties by
        the lower cost). ``oracle_spread`` is the
        relative spread (max − min)/min between all available sources, so a
        MILP that disagrees with the DP is visible instead of averaged away.
    """
    if df.empty:
        return _empty_optimum()
    cand: dict[str, dict[str, float]] = {}
    for key, diag, ip in zip(df["instance_key"], df["diagnostics_d"],
                             df["instance_params_d"]):
        v = lookup([diag, ip], DP_OPTIMUM_KEYS)
        try:
            v = float(v) if v is not None else math.nan
        except (TypeError, ValueError):
            v = math.nan
        if math.isfinite(v):
            cand.setdefault(key, {})["dp"] = v
    exact = df[df["algorithm"].isin(EXACT_ALGORITHMS) & (df["status"] == "optimal")
               & df["cost"].notna()]
    if not exact.empty:
        scen = [_scenario_count(d) for d in exact["params_d"]]
        exact = exact.assign(_scenarios=scen).sort_values(
            ["_scenarios", "cost"], ascending=[False, True], kind="stable")
        for (key, alg), cost in exact.groupby(["instance_key", "algorithm"], sort=False)["cost"].first().items():
            cand.setdefault(key, {})[alg] = float(cost)
    rows = []
    for key, srcs in cand.items():
        src = next(s for s in ("dp", "brute-force", "milp") if s in srcs)
        vals = np.array(list(srcs.values()))
        lo = vals.min()
        spread = float((vals.max() - lo) / abs(lo)) if lo != 0 else float(vals.max() - lo)
        rows.append((key, srcs[src], src, len(srcs), spread))
    return pd.DataFrame(rows, columns=list(OPTIMUM_COLUMNS)) if rows else _empty_optimum()


def _scenario_count(params: dict) -> float:
    """In-sample scenario count S of an exact run (0 when not recorded)."""
    try:
        return float((params or {}).get("scenarios") or 0)
    except (TypeError, ValueError):
        return 0.0


def _empty_optimum() -> pd.DataFrame:
    return pd.DataFrame({"instance_key": pd.Series(dtype=object),
                         "optimum": pd.Series(dtype=float),
                         "optimum_source": pd.Series(dtype=object),
                         "n_oracles": pd.Series(dtype=int),
                         "oracle_spread": pd.Series(dtype=float)})


def with_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with a plan, joined to their instance's optimum.

    Returns
    -------
    pandas.DataFrame
        The rows of ``df`` with ``has_plan``, plus ``optimum``,
        ``optimum_source`` and ``ratio`` = cost / optimum (NaN when no
        optimum is known; the competitive ratio of SPEC §5).
    """
    plans = df[df["has_plan"]].copy() if not df.empty else df.copy()
    opt = optimum_per_instance(df)
    plans = plans.merge(opt[["instance_key", "optimum", "optimum_source"]],
                        on="instance_key", how="left")
    with np.errstate(divide="ignore", invalid="ignore"):
        plans["ratio"] = plans["cost"] / plans["optimum"].where(plans["optimum"] > 0)
    return plans


def reference_config(df: pd.DataFrame) -> pd.DataFrame:
    """Keep, per (family, algorithm), the rows of its most frequent config.

    Figures that draw one line per algorithm (Fig. 5 left, profiles) must
    not mix DepL at η = 5 with DepL at η = 200; they use the configuration
    the sweep ran most often (ties: the lexicographically first label),
    and say which in their caption.
    """
    if df.empty:
        return df
    keep = []
    for _, grp in df.groupby(["family", "algorithm"], sort=False):
        counts = grp["config"].value_counts()
        top = sorted(counts[counts == counts.max()].index)[0]
        keep.append(grp[grp["config"] == top])
    return pd.concat(keep) if keep else df.iloc[0:0]


def reference_labels(df: pd.DataFrame) -> dict[tuple[str, str], str]:
    """{(family, algorithm): config label} chosen by :func:`reference_config`."""
    ref = reference_config(df)
    if ref.empty:
        return {}
    return {k: g["config"].iloc[0] for k, g in ref.groupby(["family", "algorithm"])}
