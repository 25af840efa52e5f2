"""Performance profiles against the exact optimum, per paper set, over its
population of distinct instances.

Dolan & Moré's profile ρ_s(τ) is the share of problems on which solver s is
within a factor τ of the best solver. Here the yardstick is not the best
solver of the run (a heuristic whose plan misses ℓmax can be the cheapest)
but the instance's exact static optimum z* (``milp-exact``, reference
"exact-static"): r(p, s) = cost / z*, and a plan proven infeasible (or
above ℓmax by Monte Carlo where no proof decides) is a failure, r = ∞.
One problem is one distinct instance (content hash); several
configurations of one series on it count once (the median of their
ratios).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter

from deplbench.jsonio import level_percent
from deplbench.reports.figures import PANEL, Styles, add_legend, new_figure, unlabelled_minor_ticks
from deplbench.reports.median import MEDIAN_METHOD_SHORT, median_interval
from deplbench.reports.reference import EXACT, references
from deplbench.reports.stats import profile_curve
from deplbench.reports.styles import info_for, ordered

#: A series enters a set's profile when it ran on at least this share of
#: the set's instances with an exact optimum; the problems are then the
#: instances every entering series ran on (a profile needs common problems:
#: a series run at three targets only would otherwise look like a failure
#: everywhere else).
MIN_COVERAGE = 0.75

#: Labelled τ on the figure's log axis (those inside the drawn range).
TICKS = (0.98, 1.0, 1.01, 1.02, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0)

#: τ at which the table reads each profile.
TAUS = (1.001, 1.01, 1.05, 1.1, 1.5)

PROFILE_COLUMNS = ("set", "algorithm", "instances", "failures", "median_ratio", "ci_low",
                   "ci_high", *(f"rho_at_{t:g}".replace(".", "_") for t in TAUS), "ci_level", "ci_method")


def exact_profile_matrices(plans: pd.DataFrame, df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """{set: instances × series matrix of cost / exact optimum}.

    Parameters
    ----------
    plans : pandas.DataFrame
        :func:`deplbench.reports.reference.plan_ratios` output.
    df : pandas.DataFrame
        The prepared store frame (to tell the reference's own rows).

    Returns
    -------
    dict
        Per set (paper set, else family) with ≥ 2 instances: rows are the
        distinct instances with an exact optimum that every kept series
        solved, columns the series (:data:`MIN_COVERAGE`), values cost/z*
        with ``inf`` for a plan that misses ℓmax. The exact solver itself
        (ratio 1 by construction) and closed-loop policies (judged against
        the adaptive optimum instead) are left out.
    """
    out: dict[str, pd.DataFrame] = {}
    if plans.empty:
        return out
    refs = references(df)
    exact_sources = set(refs.loc[refs["kind"] == EXACT, "source"])
    use = plans[(plans["reference"] == EXACT) & ~plans["policy"].astype(bool)
                & ~plans["algorithm"].isin(exact_sources)]
    if use.empty:
        return out
    use = use.assign(_r=np.where(use["missed"].astype(bool), np.inf, use["ratio_ub"].astype(float)))
    for name, g in use.groupby("group", sort=True):
        m = g.groupby(["instance_key", "algorithm"])["_r"].median().unstack("algorithm")
        n_inst = len(m)
        if n_inst < 2:
            continue
        keep = [a for a in m.columns if m[a].notna().sum() >= MIN_COVERAGE * n_inst]
        m = m[keep].dropna(how="any")
        if len(m) >= 2 and m.shape[1] >= 1:
            out[str(name)] = m
    return out


def exact_profile_table(mats: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """ρ_s(τ) at :data:`TAUS`, and the median ratio with its 95 % interval
    over the instances (failures excluded from the median, counted apart)."""
    rows = []
    for name, m in mats.items():
        for alg in m.columns:
            r = m[alg].to_numpy(float)
            ok = r[np.isfinite(r)]
            ci = median_interval(ok)
            rho = profile_curve(r, np.array(TAUS))
            rows.append({"set": name, "algorithm": alg, "instances": len(r),
                         "failures": int((~np.isfinite(r)).sum()), "median_ratio": ci.median,
                         "ci_low": ci.low, "ci_high": ci.high,
                         **{c: float(v) for c, v in zip(PROFILE_COLUMNS[7:7 + len(TAUS)], rho)},
                         "ci_level": ci.level if math.isfinite(ci.low) else math.nan,
                         "ci_method": f"{MEDIAN_METHOD_SHORT} on the median over distinct instances, nominal "
                                      f"{level_percent(ci.nominal, 0)} % (ci_level: exact coverage)"})
    return pd.DataFrame(rows, columns=list(PROFILE_COLUMNS))


def exact_profiles_figure(mats: dict[str, pd.DataFrame], styles: Styles, scale: float = 1.0):
    """One panel per set: ρ_s(τ) = share of its instances on which series s
    costs at most τ × the exact optimum (log τ axis from 1)."""
    if not mats:
        return None
    names = list(mats)
    ncols = min(2, len(names))
    nrows = -(-len(names) // ncols)
    fig, axes = new_figure(ncols=ncols, nrows=nrows, scale=scale, width=PANEL[0] * ncols + 1.0)
    for ax in axes.ravel()[len(names):]:
        ax.set_axis_off()
    for ax, name in zip(axes.ravel(), names):
        m = mats[name]
        vals = m.to_numpy(float)
        finite = vals[np.isfinite(vals)]
        top = max(1.1, float(finite.max()) * 1.05) if finite.size else 1.1
        low = min(1.0, float(finite.min())) if finite.size else 1.0
        taus = np.geomspace(low, top, 300)
        for alg in ordered(m.columns, styles):
            st = info_for(styles, alg)
            ax.step(taus, profile_curve(m[alg], taus), where="post", color=st.colour,
                    ls=st.linestyle, label=alg)
        ax.set_xscale("log")
        ticks: list[float] = []
        span = np.log(top / low)
        for t in (t for t in TICKS if low <= t <= top):
            # labels at least 1/8 of the axis apart, so none run into each other
            if not ticks or np.log(t / ticks[-1]) >= span / 8:
                ticks.append(t)
        ticks = ticks or [1.0]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        unlabelled_minor_ticks(ax.xaxis)
        ax.set_xlim(low, top)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("τ: cost / exact optimum [–]", fontsize=8)
        ax.set_ylabel("ρ(τ) [share of instances]", fontsize=8)
        ax.set_title(f"{name}: {len(m)} distinct instances", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    add_legend(fig, axes)
    return fig


def section_elements(section, plans: pd.DataFrame, df: pd.DataFrame, styles: Styles,
                     scale: float = 1.0) -> None:
    """Add the figure and its table to ``section``."""
    from deplbench.reports.elements import Table

    mats = exact_profile_matrices(plans, df)
    section.add_figure(
        exact_profiles_figure(mats, styles, scale), "exact_profiles",
        "Performance profiles against the exact optimum",
        "Per paper set: ρ(τ) = share of its distinct instances (seeded variants and targets) "
        "on which the series' plan costs at most τ × the instance's exact static optimum "
        "(milp-exact); a plan that misses ℓmax is a failure (the curve stops below 1). "
        f"A series enters when it ran on ≥ {100 * MIN_COVERAGE:g} % of the set's instances; "
        "the problems are the instances all entering series ran on. Dolan & Moré, "
        "Math. Program. 91 (2002).",
        missing="No paper set has two or more instances with an exact optimum (milp-exact) "
                "solved by a common series: run a sweep with milp-exact on a population.")
    section.add(Table("exact_profiles", "Profiles against the exact optimum, read at τ",
                      exact_profile_table(mats), PROFILE_COLUMNS,
                      "median_ratio = median cost/z* over the instances the series did not fail "
                      "on, with the 95 % exact order-statistic interval (±inf below 6); "
                      "rho_at_τ = ρ(τ)."))


__all__ = ["MIN_COVERAGE", "PROFILE_COLUMNS", "TAUS", "exact_profile_matrices",
           "exact_profile_table", "exact_profiles_figure", "section_elements"]
