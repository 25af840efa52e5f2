"""The report's tables as pure functions of the prepared store frame.

Each function returns a :class:`pandas.DataFrame` with exactly the columns
named in its ``*_COLUMNS`` constant, also when there is no data (then it is
empty), so a section can state "no data" instead of failing on a missing
column. Figures are drawn from these same frames, so every plotted number
is also in a CSV.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from deplbench.reports.data import (
    EXACT_ALGORITHMS, SIZE_LABELS, SIZE_PARAMETERS, _canonical, bench_algorithm,
)
from deplbench.reports.stats import (
    loglog_fit, optimum_per_instance, performance_profile, profile_curve,
    reference_config, shifted_geometric_mean,
)

#: Relative tolerance for "at the optimum" / "below the optimum".
RATIO_RTOL = 1e-6

#: Property 2's exponents per size parameter, as printed, and the exponent
#: its own vertex count implies (V = |M|·K·η², O(V²) ⇒ η⁺⁴); None = no term.
CLAIMED_EXPONENTS: dict[str, tuple[float | None, float | None, str]] = {
    "eta": (-4.0, 4.0, "η⁻⁴ as printed; |M|Kη² vertices with O(V²) imply η⁺⁴"),
    "epsilon": (-1.0, -1.0, "1/ε (VNF placement stage)"),
    "n_models": (2.0, 2.0, "|M|²"),
    "horizon": (2.0, 2.0, "K²"),
    "n_datasets": (2.0, 2.0, "|D|²"),
    "n_clusters": (None, None, "no |N| term in Property 2"),
    "scenarios": (None, None, "no S term (DepL uses no scenarios)"),
}

#: Direction in which each big-O bound is asymptotic: sizes grow ("large"),
#: but ε is an accuracy that shrinks ("small": O(1/ε) bounds the cost of
#: ε → 0, so a runtime falling *faster* than ε⁻¹ as ε grows is the violation).
ASYMPTOTIC_REGIME: dict[str, str] = {"epsilon": "small"}

_STATUSES = ("optimal", "feasible", "time_limit", "infeasible", "error")


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


# --------------------------------------------------------------------------
# Section 1: the paper's figures

COST_VS_TARGET_COLUMNS = ("paper_set", "algorithm", "config", "loss_max", "instances",
                          "cost_mean", "cost_min", "cost_max", "ratio_mean")


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
                ratio_mean=("ratio", "mean"))
           .reset_index())
    return agg[list(COST_VS_TARGET_COLUMNS)]


NORM_LOSS_COLUMNS = ("paper_set", "algorithm", "loss_max", "pairs",
                     "exp_loss_ratio_mean", "exp_loss_ratio_min", "exp_loss_ratio_max")


def normalised_expected_loss(ratios: pd.DataFrame) -> pd.DataFrame:
    """Fig. 5 (centre): E[ℓ(K)] of each plan divided by the optimum's.

    The optimum's expected final loss is taken from the exact solver's row
    (brute force, else MILP, status optimal) on the same instance and
    targets; a value below 1 means the plan trains further than the
    quantile target needs (the paper's "waste of resources").
    """
    if ratios.empty:
        return _empty(NORM_LOSS_COLUMNS)
    sub = reference_config(ratios[ratios["paper_set"] != ""])
    exact = sub[sub["algorithm"].isin(EXACT_ALGORITHMS) & (sub["status"] == "optimal")
                & sub["exp_final_loss"].notna()]
    if exact.empty:
        return _empty(NORM_LOSS_COLUMNS)
    # brute force first: it is the paper's "optimal" baseline
    exact = exact.assign(_prio=exact["algorithm"].map({"brute-force": 0, "milp": 1}))
    ref = (exact.sort_values("_prio").groupby("instance_key")["exp_final_loss"].first()
           .rename("opt_loss"))
    sub = sub.join(ref, on="instance_key")
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
    a relative 1e-6 of it; ``below_optimum`` counts plans *cheaper* than a
    proven optimum, which a feasible plan cannot be — they flag plans that
    break the in-sample constraint the optimum was proven under.
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
                  "disagreeing", "max_relative_spread")


def oracle_agreement(df: pd.DataFrame) -> pd.DataFrame:
    """Do the exact oracles (DP, brute force, MILP) agree where several ran?"""
    opt = optimum_per_instance(df)
    if opt.empty:
        return _empty(ORACLE_COLUMNS)
    fam = df.drop_duplicates("instance_key").set_index("instance_key")["family"]
    opt = opt.assign(family=opt["instance_key"].map(fam))
    rows = []
    for f, g in opt.groupby("family", sort=True):
        two = g[g["n_oracles"] >= 2]
        rows.append({"family": f, "instances_with_optimum": len(g),
                     "with_two_oracles": len(two),
                     "disagreeing": int((two["oracle_spread"] > 1e-6).sum()),
                     "max_relative_spread": float(two["oracle_spread"].max())
                     if len(two) else math.nan})
    return pd.DataFrame(rows, columns=list(ORACLE_COLUMNS))


MILP_STATUS_COLUMNS = ("family", "config", "runs", *_STATUSES, "other")


def milp_status(df: pd.DataFrame) -> pd.DataFrame:
    """How the MILP's runs ended, per family and configuration."""
    sub = df[df["algorithm"] == "milp"] if not df.empty else df
    if sub.empty:
        return _empty(MILP_STATUS_COLUMNS)
    rows = []
    for (fam, cfg), g in sub.groupby(["family", "config"], sort=True):
        c = g["status"].value_counts()
        rows.append({"family": fam, "config": cfg, "runs": len(g),
                     **{s: int(c.get(s, 0)) for s in _STATUSES},
                     "other": int(len(g) - sum(c.get(s, 0) for s in _STATUSES))})
    return pd.DataFrame(rows, columns=list(MILP_STATUS_COLUMNS))


MILP_LIMIT_COLUMNS = ("family", "config", "at_time_limit", "with_incumbent",
                      "with_bound", "gap_median", "gap_max", "runtime_median_s")


def milp_time_limit(df: pd.DataFrame) -> pd.DataFrame:
    """The MILP's remaining relative gap when it hit its time limit."""
    sub = df[(df["algorithm"] == "milp") & (df["status"] == "time_limit")] \
        if not df.empty else df
    if sub.empty:
        return _empty(MILP_LIMIT_COLUMNS)
    rows = []
    for (fam, cfg), g in sub.groupby(["family", "config"], sort=True):
        gp = g["gap"].dropna()
        rows.append({"family": fam, "config": cfg, "at_time_limit": len(g),
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
                    "ratio_min", "ratio_max", "property3_bound", "within_bound")


def property3_bound(eta, epsilon):
    """The ratio Property 3 claims, (1/η)(1 + ε) (vectorised)."""
    return (1.0 / np.asarray(eta, float)) * (1.0 + np.asarray(epsilon, float))


def ratio_vs(ratios: pd.DataFrame, epsilon_default: float | None = None) -> pd.DataFrame:
    """Competitive ratio for every (algorithm, η, ε) measured.

    Parameters
    ----------
    ratios : pandas.DataFrame
        :func:`~deplbench.reports.stats.with_ratios` output.
    epsilon_default : float, optional
        ε to assume where a row records η but not ε (the solver's default);
        None leaves ε = NaN and the bound undefined for those rows.

    Returns
    -------
    pandas.DataFrame
        Rows with an η and a known optimum only; ``within_bound`` is the
        share of instances whose ratio is ≤ Property 3's (1/η)(1+ε).
    """
    if ratios.empty:
        return _empty(RATIO_VS_COLUMNS)
    sub = ratios[ratios["eta"].notna() & ratios["ratio"].notna()].copy()
    if sub.empty:
        return _empty(RATIO_VS_COLUMNS)
    if epsilon_default is not None:
        sub["epsilon"] = sub["epsilon"].fillna(float(epsilon_default))
    sub["_eps"] = sub["epsilon"].fillna(-1.0)  # groupby key; NaN restored below
    rows = []
    for (alg, eta, eps), g in sub.groupby(["algorithm", "eta", "_eps"], sort=True):
        eps = math.nan if eps == -1.0 else eps
        bound = float(property3_bound(eta, eps))
        r = g["ratio"]
        rows.append({"algorithm": alg, "eta": eta, "epsilon": eps, "instances": len(r),
                     "ratio_median": float(r.median()), "ratio_min": float(r.min()),
                     "ratio_max": float(r.max()), "property3_bound": bound,
                     "within_bound": float((r <= bound * (1 + RATIO_RTOL)).mean())
                     if math.isfinite(bound) else math.nan})
    return pd.DataFrame(rows, columns=list(RATIO_VS_COLUMNS))


# --------------------------------------------------------------------------
# Section 4: complexity

FIT_COLUMNS = ("source", "family", "series", "algorithm", "parameter", "fixed", "points",
               "distinct_values", "min_value", "max_value", "slope", "ci_low", "ci_high",
               "r2", "claimed_exponent", "implied_exponent", "verdict")

#: Columns kept beside FIT_COLUMNS for drawing (not written to the CSV).
FIT_EXTRA_COLUMNS = ("intercept", "x_values", "y_values")

#: Statuses whose runtime is a completed solve (time limits are censored at
#: the limit and errors measure nothing, so both would bend the slope).
_TIMED_STATUSES = frozenset({"optimal", "feasible", "infeasible"})


#: Fewest runs behind a slope before it is compared with a claim: with 3
#: points the t-interval has 1 degree of freedom (t ≈ 12.7) and is so wide
#: that "consistent" would mean nothing.
MIN_VERDICT_POINTS = 4


def exponent_verdict(fit, claimed: float | None, regime: str = "large") -> str:
    """Compare a fitted slope with a big-O exponent.

    O(p^c) is an upper bound. For p → ∞ (``regime="large"``) a slope below c
    is consistent and one whose whole 95 % interval lies above c
    contradicts it. For p → 0 (``"small"``, ε) the inequality flips: runtime
    ≤ C·p^c as p → 0 needs slope ≥ c, so an interval wholly below c
    contradicts. Fewer than :data:`MIN_VERDICT_POINTS` runs give
    "too few points".
    """
    if claimed is None:
        return "no claim"
    if fit is None or not math.isfinite(fit.ci_low) or fit.n < MIN_VERDICT_POINTS:
        return "too few points"
    if regime == "small":
        return "contradicts" if fit.ci_high < claimed else "consistent"
    return "contradicts" if fit.ci_low > claimed else "consistent"


def _fit_rows(source, frame, alg_col, time_col, sig_col_fn) -> list[dict]:
    rows = []
    for p in SIZE_PARAMETERS:
        sub = frame[frame[p].notna() & frame[time_col].notna() & (frame[time_col] > 0)]
        if sub.empty:
            continue
        sig = [sig_col_fn(r, p) for r in sub.to_dict("records")]
        sub = sub.assign(_sig=sig)
        for (fam, alg, s), g in sub.groupby(["family", alg_col, "_sig"], sort=True):
            if g[p].nunique() < 3:
                continue  # a slope through two sizes has no interval
            fit = loglog_fit(g[p], g[time_col])
            if fit is None:
                continue
            claimed, implied, _ = CLAIMED_EXPONENTS[p]
            # series = family plus the generator's string parameters (a knapsack
            # class, a network), so fits of one family stay distinguishable
            ip = g["instance_params_d"].iloc[0] if "instance_params_d" in g else {}
            tags = [str(v) for k, v in sorted(ip.items())
                    if isinstance(v, str) and k not in SIZE_PARAMETERS[p][1]]
            rows.append({
                "source": source, "family": fam, "series": "/".join([str(fam), *tags]),
                "algorithm": alg, "parameter": p,
                "fixed": s, "points": fit.n, "distinct_values": int(g[p].nunique()),
                "min_value": float(g[p].min()), "max_value": float(g[p].max()),
                "slope": fit.slope, "ci_low": fit.ci_low, "ci_high": fit.ci_high,
                "r2": fit.r2,
                "claimed_exponent": math.nan if claimed is None else claimed,
                "implied_exponent": math.nan if implied is None else implied,
                "verdict": exponent_verdict(fit, claimed,
                                            ASYMPTOTIC_REGIME.get(p, "large")),
                # for the figure only (not in the CSV)
                "intercept": fit.intercept, "x_values": g[p].to_numpy(float),
                "y_values": g[time_col].to_numpy(float)})
    return rows


def _strip(d: dict, p: str) -> dict:
    aliases = set(SIZE_PARAMETERS[p][1])
    return {k: v for k, v in d.items()
            if k not in aliases and k not in ("seed", "samples", "eval_seed")}


def complexity_fits(df: pd.DataFrame, bench: pd.DataFrame | None = None) -> pd.DataFrame:
    """Log-log runtime slopes against every size parameter that varies.

    A fit pools the runs of one family and algorithm whose *other* instance
    and solver parameters are identical (``fixed`` shows them), so a slope
    in |M| is never confounded with a change in η; seeds, repetitions and
    targets are replicates. Needs ≥ 3 distinct sizes. Benchmark JSON rows (median
    time) are fitted the same way with ``source = "bench"``.
    """
    rows: list[dict] = []
    if not df.empty:
        timed = df[df["status"].isin(_TIMED_STATUSES)]

        # Targets are not part of the signature: generators derive ℓmax from
        # the instance size (scaling, knapsack), so keying on it would put
        # every size in a group of its own. Targets a sweep sets explicitly
        # are balanced across the grid and act as replicates.
        def sig(r, p):
            return "; ".join(x for x in (
                _canonical(_strip(r["instance_params_d"], p)),
                _canonical(_strip(r["params_d"], p))) if x != "{}")

        rows += _fit_rows("store", timed, "algorithm", "runtime_s", sig)
    if bench is not None and not bench.empty:
        b = bench.copy()
        b["family"] = b["file"]
        b["series"] = [bench_algorithm(n, f, g) for n, f, g in
                       zip(b["name"], b["fullname"], b["group"])]

        def bsig(r, p):
            import json
            return _canonical(_strip(json.loads(r["param_json"]), p))

        rows += _fit_rows("bench", b, "series", "median_s", bsig)
    if not rows:
        return _empty(FIT_COLUMNS + FIT_EXTRA_COLUMNS)
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS + FIT_EXTRA_COLUMNS))


def best_fits(fits: pd.DataFrame, algorithm: str | None = None,
              by_family: bool = False) -> pd.DataFrame:
    """One fit per (source, algorithm, parameter) — per series (family and
    class) too with ``by_family`` — choosing the one with the most points, then the widest
    size range (what the claims audit quotes and the figures draw)."""
    if fits.empty:
        return fits
    f = fits if algorithm is None else fits[fits["algorithm"] == algorithm]
    if f.empty:
        return f
    f = f.assign(_span=np.log(f["max_value"].astype(float) / f["min_value"].astype(float)))
    f = f.sort_values(["points", "_span"], ascending=False)
    keys = ["source", "series", "algorithm", "parameter"] if by_family else [
        "source", "algorithm", "parameter"]
    return f.groupby(keys, sort=False).head(1).drop(columns="_span")


BENCH_COLUMNS = ("file", "group", "name", "median_s", "mean_s", "stddev_s", "min_s",
                 "rounds")


def bench_summary(bench: pd.DataFrame | None) -> pd.DataFrame:
    """The pytest-benchmark entries, as measured."""
    if bench is None or bench.empty:
        return _empty(BENCH_COLUMNS)
    return bench[list(BENCH_COLUMNS)].sort_values(["file", "group", "name"])


# --------------------------------------------------------------------------
# Section 5: out-of-sample quantiles

def _judged_plans(df: pd.DataFrame) -> pd.DataFrame:
    """Rows holding a plan to judge: a cost, and a stored plan or evaluation.

    Oracle rows (``knapsack-dp``) carry an optimal cost but no plan; they
    prove a value, they are not plans, so they are left out here.
    """
    if df.empty:
        return df
    has_plan_text = [bool(p) or bool(e) for p, e in zip(df["plan_d"], df["evaluation_d"])]
    return df[df["has_plan"] & np.asarray(has_plan_text, bool)]


OOS_COLUMNS = ("family", "instance_name", "instance_seed", "algorithm", "config",
               "status", "loss_max", "omega", "quantile_oos", "quantile_ci_low",
               "quantile_ci_high", "verdict", "met_target")


def oos_quantiles(df: pd.DataFrame) -> pd.DataFrame:
    """The out-of-sample ω-quantile of every plan, with its interval.

    ``met_target`` is "yes" when the point estimate is ≤ ℓmax, "no" when it
    is above, "n/a" when the plan was not evaluated.
    """
    sub = _judged_plans(df)
    if sub.empty:
        return _empty(OOS_COLUMNS)
    met = np.where(sub["quantile_oos"].isna() | sub["loss_max"].isna(), "n/a",
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
