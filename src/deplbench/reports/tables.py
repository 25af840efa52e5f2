"""The report's tables as pure functions of the prepared store frame.

Each function returns a :class:`pandas.DataFrame` with exactly the columns
named in its ``*_COLUMNS`` constant, also when there is no data (then it is
empty), so a section can state "no data" instead of failing on a missing
column. Figures are drawn from these same frames, so every plotted number
is also in a CSV.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from deplbench.formulations.model.result import STATUSES
from deplbench.reports.complexity import (  # noqa: F401 - re-exported
    BENCH_COLUMNS,
    CLAIMED_EXPONENTS,
    FIT_COLUMNS,
    FIT_EXTRA_COLUMNS,
    MIN_VERDICT_POINTS,
    bench_summary,
    best_fits,
    complexity_fits,
    exponent_verdict,
)
from deplbench.reports.data import SIZE_LABELS
from deplbench.reports.stats import (
    optimum_per_instance,
    performance_profile,
    profile_curve,
    reference_config,
    shifted_geometric_mean,
    swept_series,
)
from deplbench.reports.styles import SeriesInfo, info_for, ordered

#: Relative tolerance for "at the optimum" / "below the optimum".
RATIO_RTOL = 1e-6

_STATUSES = STATUSES    # the result record's own set (formulations.model.result)


def _empty(columns) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


# --------------------------------------------------------------------------
# overview

OVERVIEW_COLUMNS = ("family", "sweep", "algorithm", "config", "runs", "with_plan",
                    *_STATUSES, "median_runtime_s")


def overview(df: pd.DataFrame) -> pd.DataFrame:
    """What the store holds: runs and statuses per family/sweep/algorithm."""
    if df.empty:
        return _empty(OVERVIEW_COLUMNS)
    rows = []
    for (fam, sw, alg, cfg), g in df.groupby(["family", "sweep", "algorithm", "config"],
                                             sort=True):
        counts = g["status"].value_counts()
        rows.append({"family": fam, "sweep": sw, "algorithm": alg, "config": cfg,
                     "runs": len(g), "with_plan": int(g["has_plan"].sum()),
                     **{s: int(counts.get(s, 0)) for s in _STATUSES},
                     "median_runtime_s": float(g["runtime_s"].median())})
    return pd.DataFrame(rows, columns=list(OVERVIEW_COLUMNS))


ALGORITHM_COLUMNS = ("algorithm", "solver", "label", "exact", "colour", "marker",
                     "linestyle", "runs", "with_plan", "families")


def algorithms(df: pd.DataFrame, styles: Mapping[str, SeriesInfo]) -> pd.DataFrame:
    """Every series in the store with its solver's metadata from the records
    (display label, exactness, style), in the report's listing order."""
    if df.empty:
        return _empty(ALGORITHM_COLUMNS)
    rows = []
    for alg in ordered(df["algorithm"], styles):
        g = df[df["algorithm"] == alg]
        st = info_for(styles, alg)
        rows.append({"algorithm": alg, "solver": st.solver, "label": st.display,
                     "exact": "yes" if st.exact else "no", "colour": st.colour,
                     "marker": st.marker, "linestyle": st.linestyle, "runs": len(g),
                     "with_plan": int(g["has_plan"].sum()),
                     "families": ", ".join(sorted(set(g["family"])))})
    return pd.DataFrame(rows, columns=list(ALGORITHM_COLUMNS))


# --------------------------------------------------------------------------
# Section 1: the paper's figures

COST_VS_TARGET_COLUMNS = ("paper_set", "algorithm", "config", "loss_max", "instances",
                          "cost_mean", "cost_min", "cost_max", "ratio_mean", "ratio_ref_mean",
                          "ratio_ref_min", "ratio_ref_max", "reference_kind")


def cost_vs_target(ratios: pd.DataFrame) -> pd.DataFrame:
    """Figs. 5/6 (left) and PACT Fig. 6 (left): cost against the target ℓmax.

    Parameters
    ----------
    ratios : pandas.DataFrame
        :func:`deplbench.reports.stats.with_ratios` output.

    Returns
    -------
    pandas.DataFrame
        Per paper set, algorithm (its reference configuration) and ℓmax:
        mean/min/max cost over instances and the mean competitive ratio.
    """
    sub = reference_config(ratios[ratios["paper_set"] != ""]) if not ratios.empty else ratios
    if sub.empty or sub["loss_max"].notna().sum() == 0:
        return _empty(COST_VS_TARGET_COLUMNS)
    agg = (sub.dropna(subset=["loss_max"])
           .groupby(["paper_set", "algorithm", "config", "loss_max"], sort=True)
           .agg(instances=("cost", "size"), cost_mean=("cost", "mean"),
                cost_min=("cost", "min"), cost_max=("cost", "max"),
                ratio_mean=("ratio", "mean"), ratio_ref_mean=("ratio_ref", "mean"),
                ratio_ref_min=("ratio_ref", "min"), ratio_ref_max=("ratio_ref", "max"),
                reference_kind=("reference_kind",
                                lambda v: ", ".join(sorted(set(v) - {""}))))
           .reset_index())
    return agg[list(COST_VS_TARGET_COLUMNS)]


NORM_LOSS_COLUMNS = ("paper_set", "algorithm", "loss_max", "pairs",
                     "exp_loss_ratio_mean", "exp_loss_ratio_min", "exp_loss_ratio_max")


def normalised_expected_loss(ratios: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5 (centre): E[ℓ(K)] of each plan divided by the optimum's.

    The optimum's expected final loss is taken from the exact row that
    gives the instance's proven optimum
    (:func:`~deplbench.reports.stats.optimum_per_instance`); a value below 1 means the plan trains further than the
    quantile target needs (the paper's "waste of resources").
    """
    if ratios.empty:
        return _empty(NORM_LOSS_COLUMNS)
    sub = reference_config(ratios[ratios["paper_set"] != ""])
    # the optimum's E[ℓ(K)] comes from the same exact row that gives the
    # proven optimum (stats.optimum_per_instance)
    sub = sub.assign(opt_loss=sub["optimum_exp_loss"])
    sub = sub[sub["opt_loss"].notna() & sub["exp_final_loss"].notna()
              & (sub["opt_loss"] != 0)]
    if sub.empty:
        return _empty(NORM_LOSS_COLUMNS)
    sub = sub.assign(r=sub["exp_final_loss"] / sub["opt_loss"])
    agg = (sub.groupby(["paper_set", "algorithm", "loss_max"], sort=True)
           .agg(pairs=("r", "size"), exp_loss_ratio_mean=("r", "mean"),
                exp_loss_ratio_min=("r", "min"), exp_loss_ratio_max=("r", "max"))
           .reset_index())
    return agg[list(NORM_LOSS_COLUMNS)]


ETA_EFFECT_COLUMNS = ("paper_set", "algorithm", "eta", "loss_max", "instances",
                      "cost_mean", "ratio_mean", "runtime_mean_s")


def eta_effect(ratios: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5 (right): DepL's cost for each resolution η and target."""
    if ratios.empty:
        return _empty(ETA_EFFECT_COLUMNS)
    sub = ratios[(ratios["paper_set"] != "") & ratios["eta"].notna()
                 & ratios["loss_max"].notna()]
    if sub.empty:
        return _empty(ETA_EFFECT_COLUMNS)
    agg = (sub.groupby(["paper_set", "algorithm", "eta", "loss_max"], sort=True)
           .agg(instances=("cost", "size"), cost_mean=("cost", "mean"),
                ratio_mean=("ratio", "mean"), runtime_mean_s=("runtime_s", "mean"))
           .reset_index())
    return agg[list(ETA_EFFECT_COLUMNS)]


PER_MODEL_COLUMNS = ("paper_set", "algorithm", "loss_max", "model", "instances", "value")


def per_model(ratios: pd.DataFrame, field: str) -> pd.DataFrame:
    """Figs. 7/8: mean epochs (``epochs_per_model``) or cost
    (``cost_per_model``) spent on each model version, per target.

    A model a plan never used counts as 0 for that plan, so the bars of one
    algorithm stack up to its mean total.
    """
    if ratios.empty:
        return _empty(PER_MODEL_COLUMNS)
    sub = reference_config(ratios[ratios["paper_set"] != ""])
    rows = []
    for (ps, alg, lm), g in sub.groupby(["paper_set", "algorithm", "loss_max"], sort=True):
        dicts = [e.get(field) for e in g["evaluation_d"]]
        dicts = [d for d in dicts if isinstance(d, dict) and d]
        if not dicts:
            continue
        models = sorted({m for d in dicts for m in d})
        for m in models:
            vals = [float(d.get(m, 0.0) or 0.0) for d in dicts]
            rows.append({"paper_set": ps, "algorithm": alg, "loss_max": lm, "model": m,
                         "instances": len(dicts), "value": float(np.mean(vals))})
    return pd.DataFrame(rows, columns=list(PER_MODEL_COLUMNS)) if rows else _empty(
        PER_MODEL_COLUMNS)


# --------------------------------------------------------------------------
# Section 2: optimality gaps

GAPS_COLUMNS = ("family", "algorithm", "config", "plans", "with_optimum",
                "optimum_sources", "ratio_median", "ratio_mean", "ratio_max",
                "gap_pct_median", "gap_pct_max", "at_optimum", "below_optimum")


def gaps(ratios: pd.DataFrame) -> pd.DataFrame:
    """Gap of every algorithm to the proven optimum, per family.

    ``gap_pct`` = 100·(cost/optimum − 1); ``at_optimum`` counts plans within
    a relative 1e-6 of it; ``below_optimum`` counts plans *cheaper* than it.
    Where the optimum is an SAA optimum (the MILP on S scenarios) it is exact
    for that sample only, so a cheaper plan breaks that sample's constraint
    and may still be feasible for the chance constraint itself; the proven
    references are in :mod:`deplbench.reports.reference`.
    """
    if ratios.empty:
        return _empty(GAPS_COLUMNS)
    rows = []
    for (fam, alg, cfg), g in ratios.groupby(["family", "algorithm", "config"], sort=True):
        r = g["ratio"].dropna()
        srcs = ", ".join(sorted(g["optimum_source"].dropna().unique()))
        rows.append({
            "family": fam, "algorithm": alg, "config": cfg, "plans": len(g),
            "with_optimum": len(r), "optimum_sources": srcs,
            "ratio_median": float(r.median()) if len(r) else math.nan,
            "ratio_mean": float(r.mean()) if len(r) else math.nan,
            "ratio_max": float(r.max()) if len(r) else math.nan,
            "gap_pct_median": 100 * (float(r.median()) - 1) if len(r) else math.nan,
            "gap_pct_max": 100 * (float(r.max()) - 1) if len(r) else math.nan,
            "at_optimum": int((abs(r - 1) <= RATIO_RTOL).sum()),
            "below_optimum": int((r < 1 - RATIO_RTOL).sum()),
        })
    return pd.DataFrame(rows, columns=list(GAPS_COLUMNS))


ORACLE_COLUMNS = ("family", "instances_with_optimum", "with_two_oracles",
                  "disagreeing", "max_relative_spread", "with_saa_and_exact", "saa_vs_exact_max_gap")


def oracle_agreement(df: pd.DataFrame) -> pd.DataFrame:
    """Do the exact solvers (record column ``exact``) agree where several ran?

    Only optima proven for the chance-constrained problem count as oracles
    (``instances_with_optimum``, ``with_two_oracles``, ``disagreeing``,
    ``max_relative_spread``); an SAA optimum is exact for its own scenarios
    only, so its distance to the proven optimum is a gap, not a disagreement
    (``with_saa_and_exact``, ``saa_vs_exact_max_gap``)."""
    opt = optimum_per_instance(df)
    if opt.empty:
        return _empty(ORACLE_COLUMNS)
    fam = df.drop_duplicates("instance_key").set_index("instance_key")["family"]
    opt = opt.assign(family=opt["instance_key"].map(fam))
    rows = []
    for f, g in opt.groupby("family", sort=True):
        two = g[g["n_proven_oracles"] >= 2]
        both = g[g["saa_vs_exact_gap"].notna()]
        rows.append({"family": f, "instances_with_optimum": int((g["n_proven_oracles"] >= 1).sum()),
                     "with_two_oracles": len(two),
                     "disagreeing": int((two["proven_spread"] > 1e-6).sum()),
                     "max_relative_spread": float(two["proven_spread"].max())
                     if len(two) else math.nan,
                     "with_saa_and_exact": len(both),
                     "saa_vs_exact_max_gap": float(both["saa_vs_exact_gap"].max()) if len(both) else math.nan})
    return pd.DataFrame(rows, columns=list(ORACLE_COLUMNS))


MILP_STATUS_COLUMNS = ("family", "algorithm", "config", "runs", *_STATUSES, "other")


def _exact_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["is_exact"]] if not df.empty else df


def milp_status(df: pd.DataFrame) -> pd.DataFrame:
    """How the exact solvers' runs ended (record column ``exact``), per
    family, solver series and configuration."""
    sub = _exact_rows(df)
    if sub.empty:
        return _empty(MILP_STATUS_COLUMNS)
    rows = []
    for (fam, alg, cfg), g in sub.groupby(["family", "algorithm", "config"], sort=True):
        c = g["status"].value_counts()
        rows.append({"family": fam, "algorithm": alg, "config": cfg, "runs": len(g),
                     **{s: int(c.get(s, 0)) for s in _STATUSES},
                     "other": int(len(g) - sum(c.get(s, 0) for s in _STATUSES))})
    return pd.DataFrame(rows, columns=list(MILP_STATUS_COLUMNS))


MILP_LIMIT_COLUMNS = ("family", "algorithm", "config", "at_time_limit", "with_incumbent",
                      "with_bound", "gap_median", "gap_max", "runtime_median_s")


def milp_time_limit(df: pd.DataFrame) -> pd.DataFrame:
    """The exact solvers' remaining relative gap when they hit their time limit."""
    sub = _exact_rows(df)
    sub = sub[sub["status"] == "time_limit"] if not sub.empty else sub
    if sub.empty:
        return _empty(MILP_LIMIT_COLUMNS)
    rows = []
    for (fam, alg, cfg), g in sub.groupby(["family", "algorithm", "config"], sort=True):
        gp = g["gap"].dropna()
        rows.append({"family": fam, "algorithm": alg, "config": cfg, "at_time_limit": len(g),
                     "with_incumbent": int(g["cost"].notna().sum()),
                     "with_bound": int(g["lower_bound"].notna().sum()),
                     "gap_median": float(gp.median()) if len(gp) else math.nan,
                     "gap_max": float(gp.max()) if len(gp) else math.nan,
                     "runtime_median_s": float(g["runtime_s"].median())})
    return pd.DataFrame(rows, columns=list(MILP_LIMIT_COLUMNS))


SGM_COLUMNS = ("family", "algorithm", "config", "runs", "sgm_runtime_s",
               "median_runtime_s", "max_runtime_s", "shift_s")


def runtime_sgm(df: pd.DataFrame, shift: float = 1.0) -> pd.DataFrame:
    """Shifted geometric mean of solve times per family and algorithm.

    Every finished attempt counts with its measured time, failures and time
    limits included (dropping them would flatter the slow solver).
    """
    sub = df[df["runtime_s"].notna() & (df["runtime_s"] >= 0)] if not df.empty else df
    if sub.empty:
        return _empty(SGM_COLUMNS)
    rows = []
    for (fam, alg, cfg), g in sub.groupby(["family", "algorithm", "config"], sort=True):
        t = g["runtime_s"].to_numpy(float)
        rows.append({"family": fam, "algorithm": alg, "config": cfg, "runs": len(t),
                     "sgm_runtime_s": shifted_geometric_mean(t, shift),
                     "median_runtime_s": float(np.median(t)),
                     "max_runtime_s": float(t.max()), "shift_s": float(shift)})
    return pd.DataFrame(rows, columns=list(SGM_COLUMNS))


def profile_matrix(df: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Problems × algorithms matrix of ``metric`` for performance profiles.

    Problems are instance keys (instance + targets) on which at least two
    algorithms ran; an algorithm that ran but returned no plan, or did not
    run a problem its family's other algorithms ran, has NaN (a failure, as
    in Dolan–Moré). Each algorithm contributes its reference configuration.
    Call it per family: profiles pool problems of one kind only.
    """
    if df.empty:
        return pd.DataFrame()
    sub = reference_config(df)
    value = sub[metric].where(sub["has_plan"])
    m = (sub.assign(v=value)
         .groupby(["instance_key", "algorithm"])["v"].median().unstack("algorithm"))
    ran = sub.groupby("instance_key")["algorithm"].nunique()
    return m[m.index.isin(ran[ran >= 2].index)]


def profile_matrices(df: pd.DataFrame, max_families: int = 6
                     ) -> dict[tuple[str, str], pd.DataFrame]:
    """{(family, metric): matrix} for runtime and cost, for the families
    (most problems first, at most ``max_families``) with ≥ 2 algorithms on
    ≥ 2 common problems."""
    out: dict[tuple[str, str], pd.DataFrame] = {}
    if df.empty:
        return out
    sizes = []
    for fam, g in df.groupby("family", sort=True):
        m = profile_matrix(g, "runtime_s")
        if len(m) >= 2 and m.shape[1] >= 2:
            sizes.append((len(m), fam, g))
    for _, fam, g in sorted(sizes, key=lambda t: (-t[0], t[1]))[:max_families]:
        out[(fam, "runtime")] = profile_matrix(g, "runtime_s")
        out[(fam, "cost")] = profile_matrix(g, "cost")
    return out


PROFILE_COLUMNS = ("family", "metric", "algorithm", "problems", "solved", "best",
                   "rho_at_1_1", "rho_at_2", "rho_at_10")


def profile_summary(matrices: dict[tuple[str, str], pd.DataFrame]) -> pd.DataFrame:
    """ρ_s(τ) at τ = 1 (wins), 1.1, 2 and 10 for each family's profiles."""
    rows = []
    for (family, metric), m in matrices.items():
        if m.empty:
            continue
        r = performance_profile(m)
        for alg in r.columns:
            ra = r[alg].to_numpy(float)
            rho = profile_curve(ra, np.array([1.0 + 1e-9, 1.1, 2.0, 10.0]))
            rows.append({"family": family, "metric": metric, "algorithm": alg,
                         "problems": len(ra), "solved": int(np.isfinite(ra).sum()),
                         "best": float(rho[0]), "rho_at_1_1": float(rho[1]),
                         "rho_at_2": float(rho[2]), "rho_at_10": float(rho[3])})
    return pd.DataFrame(rows, columns=list(PROFILE_COLUMNS)) if rows else _empty(
        PROFILE_COLUMNS)


# --------------------------------------------------------------------------
# Section 3: competitive ratio vs η and ε

RATIO_VS_COLUMNS = ("algorithm", "eta", "epsilon", "instances", "ratio_median",
                    "ratio_min", "ratio_max", "property3_bound", "within_bound", "reference")


def _reference_label(kind, scenarios) -> str:
    """"proven optimum", or "SAA optimum (S = 40)" for an optimum proven for its sample only."""
    if kind == "saa":
        return f"SAA optimum (S = {scenarios:g})" if pd.notna(scenarios) else "SAA optimum"
    return "proven optimum"


def property3_bound(eta, epsilon):
    """The ratio Property 3 claims, (1/η)(1 + ε) (vectorised)."""
    return (1.0 / np.asarray(eta, float)) * (1.0 + np.asarray(epsilon, float))


def ratio_vs(ratios: pd.DataFrame) -> pd.DataFrame:
    """Competitive ratio for every (series, η, ε) measured.

    Parameters
    ----------
    ratios : pandas.DataFrame
        :func:`~deplbench.reports.stats.with_ratios` output.

    Returns
    -------
    pandas.DataFrame
        Rows with an η and a known optimum only. A series here is one
        solver with every parameter but η and ε fixed
        (:func:`~deplbench.reports.stats.swept_series`), so DepL's η sweep
        and its default entry form one line. η and ε are the values the
        record stores as run; a row without ε has no bound
        (``property3_bound`` NaN). ``within_bound`` is the share of
        instances whose ratio is ≤ Property 3's (1/η)(1+ε).
    """
    if ratios.empty:
        return _empty(RATIO_VS_COLUMNS)
    sub = ratios[ratios["eta"].notna() & ratios["ratio"].notna()].copy()
    if sub.empty:
        return _empty(RATIO_VS_COLUMNS)
    sub["_series"] = swept_series(sub, ("eta", "epsilon"))
    # a ratio to an SAA optimum is no competitive ratio: its rows form a series of their own, named so
    kinds = sub["optimum_kind"] if "optimum_kind" in sub else pd.Series("proven", index=sub.index)
    scen = sub["optimum_scenarios"] if "optimum_scenarios" in sub else pd.Series(math.nan, index=sub.index)
    sub["_ref"] = [_reference_label(k, sc) for k, sc in zip(kinds, scen)]
    sub["_series"] = [a if r == "proven optimum" else f"{a} [vs {r}]" for a, r in zip(sub["_series"], sub["_ref"])]
    sub["_eps"] = sub["epsilon"].fillna(-1.0)  # groupby key; NaN restored below
    rows = []
    for (alg, eta, eps, ref), g in sub.groupby(["_series", "eta", "_eps", "_ref"], sort=True):
        eps = math.nan if eps == -1.0 else eps
        bound = float(property3_bound(eta, eps))
        r = g["ratio"]
        rows.append({"algorithm": alg, "eta": eta, "epsilon": eps, "instances": len(r),
                     "ratio_median": float(r.median()), "ratio_min": float(r.min()),
                     "ratio_max": float(r.max()), "property3_bound": bound,
                     "within_bound": float((r <= bound * (1 + RATIO_RTOL)).mean())
                     if math.isfinite(bound) else math.nan, "reference": ref})
    return pd.DataFrame(rows, columns=list(RATIO_VS_COLUMNS))


# --------------------------------------------------------------------------
# Section 5: out-of-sample quantiles

def _judged_plans(df: pd.DataFrame) -> pd.DataFrame:
    """Rows holding a plan to judge: a cost, and a stored plan or evaluation.

    A row that proves a value without returning a plan (an oracle that
    reports only the optimum) is not a plan, so it is left out here.
    """
    if df.empty:
        return df
    has_plan_text = [bool(p) or bool(e) for p, e in zip(df["plan_d"], df["evaluation_d"])]
    return df[df["has_plan"] & np.asarray(has_plan_text, bool)]


OOS_COLUMNS = ("family", "instance_name", "instance_seed", "algorithm", "config",
               "status", "loss_max", "omega", "quantile_oos", "quantile_ci_low",
               "quantile_ci_high", "ci_level", "ci_method", "verdict", "met_target")


def oos_quantiles(df: pd.DataFrame) -> pd.DataFrame:
    """The out-of-sample ω-quantile of every plan, with its interval.

    ``met_target`` is "yes" when the point estimate is ≤ ℓmax, "no" when it
    is above, "not evaluated" when the plan has no out-of-sample quantile.
    """
    sub = _judged_plans(df)
    if sub.empty:
        return _empty(OOS_COLUMNS)
    met = np.where(sub["quantile_oos"].isna() | sub["loss_max"].isna(), "not evaluated",
                   np.where(sub["quantile_oos"] <= sub["loss_max"], "yes", "no"))
    out = sub.assign(met_target=met)
    return out[list(OOS_COLUMNS)].sort_values(
        ["family", "algorithm", "instance_name", "loss_max"])


MISSES_COLUMNS = ("algorithm", "config", "plans", "evaluated", "met", "missed",
                  "missed_confirmed", "undecided", "worst_excess")


def target_misses(df: pd.DataFrame) -> pd.DataFrame:
    """How many plans of each algorithm missed the quantile target (3).

    ``missed`` = out-of-sample ω-quantile above ℓmax; ``missed_confirmed``
    = the evaluator's verdict is "infeasible" (its whole confidence
    interval lies above ℓmax); ``undecided`` = the interval straddles ℓmax;
    ``worst_excess`` = max (quantile − ℓmax).
    """
    sub = _judged_plans(df)
    if sub.empty:
        return _empty(MISSES_COLUMNS)
    rows = []
    for (alg, cfg), g in sub.groupby(["algorithm", "config"], sort=True):
        ev = g[g["quantile_oos"].notna() & g["loss_max"].notna()]
        excess = ev["quantile_oos"] - ev["loss_max"]
        rows.append({"algorithm": alg, "config": cfg, "plans": len(g),
                     "evaluated": len(ev), "met": int((excess <= 0).sum()),
                     "missed": int((excess > 0).sum()),
                     "missed_confirmed": int((ev["verdict"] == "infeasible").sum()),
                     "undecided": int((ev["verdict"] == "undecided").sum()),
                     "worst_excess": float(excess.max()) if len(ev) else math.nan})
    return pd.DataFrame(rows, columns=list(MISSES_COLUMNS))


def size_label(p: str) -> str:
    """Axis label of a size parameter."""
    return SIZE_LABELS.get(p, p)
