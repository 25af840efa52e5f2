"""Complexity: log-log slopes of runtime and of work counters (Property 2).

A slope is fitted by OLS on log(measure) against log(size) over the runs of
one family and solver whose *other* parameters are identical, for each size
parameter of :data:`~deplbench.reports.data.SIZE_PARAMETERS`. Two kinds of
measure are fitted side by side:

* ``time``: the solver's wall time ``runtime_s`` (noisy on a shared machine;
  the t-interval says how much);
* ``work``: each counter of ``diagnostics["work"]`` (vertices created,
  branch-and-bound nodes, ...). Counters are exact and deterministic, so
  their slope has no measurement noise: its interval only reflects how far
  the counts bend away from a power law.

Each slope is compared with the exponent Property 2 prints and with the one
the algorithm's own structure implies (DepL paper Sec. V).

A counter is exact per instance, so its fit has per-instance intercepts
(a within-instance, "fixed effects" OLS: rows of one instance — same seed
and targets — share an intercept, and only how each instance's count moves
with the size enters the slope); pooling instances with different counts
into one intercept would turn their differences into a spurious interval.
Rows of a sweep entry labelled ``*-counts`` (:data:`COUNTS_SUFFIX`,
``complexity.toml``'s larger, unrepeated points) count work only: their
runtimes are left out of the time fits.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from deplbench.reports.data import (
    NON_CONFIG_KEYS,
    SIZE_LABELS,
    SIZE_PARAMETERS,
    bench_algorithm,
    canonical,
)
from deplbench.reports.stats import SlopeFit, loglog_fit

#: Property 2's exponents per size parameter for the *runtime*, as printed,
#: and the exponent its own vertex count implies (V = |M|·K·η², O(V²) ⇒
#: η⁺⁴); None = no term.
CLAIMED_EXPONENTS: dict[str, tuple[float | None, float | None, str]] = {
    "eta": (-4.0, 4.0, "η⁻⁴ as printed; |M|Kη² vertices with O(V²) imply η⁺⁴"),
    "epsilon": (-1.0, -1.0, "1/ε (VNF placement stage)"),
    "n_models": (2.0, 2.0, "|M|²"),
    "horizon": (2.0, 2.0, "K²"),
    "n_datasets": (2.0, 2.0, "|D|²"),
    "n_clusters": (None, None, "no |N| term in Property 2"),
    "scenarios": (None, None, "no S term (DepL uses no scenarios)"),
}

#: The exponent the expanded graph's size implies for a counter of vertices
#: or edges (a name containing "vertices" or "edges"): DepL paper Sec. V, the
#: count printed above Property 2, |M|·K·η² vertices in this package's η
#: (solvers/expanded/graph.py: |M|·K̄·(η+1)·J with J ∝ η). The reports take
#: a counter's implied exponent only from the solver's declaration,
#: ``diagnostics["work_exponents"][counter][parameter]`` (DepL and best-exp
#: declare these, PACT its own graph's); this table draws the reference
#: line of the work figures.
VERTEX_EXPONENTS: dict[str, float] = {"eta": 2.0, "n_models": 1.0, "horizon": 1.0}

#: Suffix of a counter divided by the graphs built (:func:`work_counters`).
PER_GRAPH = "_per_graph"

#: Label suffix of a sweep entry that runs for its work counters only
#: (``complexity.toml``: larger sizes, one seed): its runtimes stay out of
#: the time fits, whose points are the repeated, comparable ones.
COUNTS_SUFFIX = "-counts"

#: Direction in which each big-O bound is asymptotic: sizes grow ("large"),
#: but ε is an accuracy that shrinks ("small": O(1/ε) bounds the cost of
#: ε → 0, so a runtime falling *faster* than ε⁻¹ as ε grows is the violation).
ASYMPTOTIC_REGIME: dict[str, str] = {"epsilon": "small"}

FIT_COLUMNS = ("source", "family", "series", "algorithm", "measure", "parameter", "fixed",
               "points", "distinct_values", "min_value", "max_value", "slope", "ci_low",
               "ci_high", "r2", "method", "claimed_exponent", "implied_exponent", "verdict",
               "ci_level", "ci_kind")

#: Columns kept beside FIT_COLUMNS for drawing (not written to the CSV).
FIT_EXTRA_COLUMNS = ("intercept", "x_values", "y_values")

#: Statuses whose runtime is a completed solve (time limits are censored at
#: the limit and errors measure nothing, so both would bend the slope).
TIMED_STATUSES = frozenset({"optimal", "feasible", "infeasible", "no_solution"})

#: Fewest runs behind a slope before it is compared with a claim: with 3
#: points the t-interval has 1 degree of freedom (t ≈ 12.7) and is so wide
#: that "consistent" would mean nothing.
MIN_VERDICT_POINTS = 4

#: The measure of a runtime fit (a counter's fit is named after the counter).
TIME = "time"

#: Level of the interval on every slope (two-sided, t with n − 2 degrees of freedom).
SLOPE_LEVEL = 0.95
#: What [ci_low, ci_high] is (column ``ci_kind``): on runtimes a t confidence
#: interval (timing noise is a sampling error); on work counters, exact and
#: deterministic, there is no sampling error, and the same computation is
#: only a band measuring the departure from a power law.
CI_KIND_TIME = "t confidence interval (n − 2 dof)"
CI_KIND_COUNTER = "fit-residual band (t, n − 2 dof; exact counts, not a confidence interval)"


def _empty(columns) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def exponent_verdict(fit, claimed: float | None, regime: str = "large") -> str:
    """Compare a fitted slope with a big-O exponent.

    O(p^c) is an upper bound. For p → ∞ (``regime="large"``) a slope below c
    is consistent and one whose whole 95 % interval lies above it
    contradicts it. For p → 0 (``"small"``, ε) the inequality flips: a
    measure ≤ C·p^c as p → 0 needs slope ≥ c, so an interval wholly below c
    contradicts. Fewer than :data:`MIN_VERDICT_POINTS` runs give
    "too few points".
    """
    if claimed is None:
        return "no claim"
    if fit is None or fit.n < MIN_VERDICT_POINTS:
        return "too few points"
    if not math.isfinite(fit.ci_low):
        return "too few points"
    if regime == "small":
        return "contradicts" if fit.ci_high < claimed else "consistent"
    return "contradicts" if fit.ci_low > claimed else "consistent"


def work_counters(diagnostics: dict) -> dict[str, float]:
    """The numeric counters of ``diagnostics["work"]`` (positive and finite),
    plus ``<counter>_per_graph`` for every ``graph_*`` counter when ``graphs``
    is counted.

    DepL builds one expanded graph per surrogate and retry, and how many it
    builds changes with η (a retry at η = 25 doubles the total), which bends
    the totals' slope away from any power law. The size of one graph is what
    Sec. V's vertex count |M|·K·(Tmax/η)(ℓmax/η) describes, so the per-graph
    counters carry the exponent the claim is about (exactly η² for the nominal
    vertices: 195001, 765001, 3030001 at η = 25, 50, 100 on AlexNet).
    """
    work = diagnostics.get("work") if isinstance(diagnostics, dict) else None
    if not isinstance(work, dict):
        return {}
    out = {}
    for k, v in work.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            out[str(k)] = float(v)
    graphs = out.get("graphs", 0.0)
    if graphs > 0:
        for k in [k for k in out if k.startswith("graph_")]:
            out[f"{k}{PER_GRAPH}"] = out[k] / graphs
    return out


def _lockstep_keys(dicts: list[dict], sizes: np.ndarray) -> set[str]:
    """Keys whose values correspond one-to-one with the size's values.

    A generator may name the size differently from the record column (the
    knapsack family's ``n_items`` is |M|, Property 1's reduction). Such a
    key moves with the size and must not split the fit; a key that merely
    varies across sizes (a class name) does not correspond one-to-one and
    stays part of the fixed signature.
    """
    keys = {k for d in dicts for k in d}
    out = set()
    for k in keys:
        pairs = {(canonical(d[k]), s) for d, s in zip(dicts, sizes) if k in d}
        vals = {v for v, _ in pairs}
        szs = {s for _, s in pairs}
        if len(vals) >= 2 and len(pairs) == len(vals) == len(szs):
            out.add(k)
    return out


def _signatures(g: pd.DataFrame, p: str, ip_col: str, par_col: str | None) -> list[str]:
    """The fixed part of every row of ``g`` for a fit against ``p``."""
    sizes = g[p].to_numpy(float)
    ips = list(g[ip_col])
    drop_ip = _lockstep_keys(ips, sizes)
    out_ip = [canonical({k: v for k, v in d.items() if k not in drop_ip}) for d in ips]
    if par_col is None:
        return out_ip
    pars = [{k: v for k, v in d.items() if k not in NON_CONFIG_KEYS} for d in g[par_col]]
    drop_par = _lockstep_keys(pars, sizes)
    out_par = [canonical({k: v for k, v in d.items() if k not in drop_par}) for d in pars]
    return ["; ".join(x for x in (a, b) if x != "{}") for a, b in zip(out_ip, out_par)]


def _implied(p: str, measure: str, declared: dict) -> float | None:
    """Implied exponent of ``measure`` in ``p``: the claim for runtimes, else
    the solver's declaration (``diagnostics["work_exponents"]``; a
    ``*_per_graph`` counter takes its total's), else None."""
    if measure == TIME:
        return CLAIMED_EXPONENTS[p][1]
    if not isinstance(declared, dict):
        return None
    entry = declared.get(measure) or declared.get(measure.removesuffix(PER_GRAPH)) or {}
    got = entry.get(p) if isinstance(entry, dict) else None
    if isinstance(got, (int, float)) and not isinstance(got, bool):
        return float(got)
    return None


def within_fit(x, y, groups, confidence: float = 0.95) -> SlopeFit | None:
    """Common log-log slope with one intercept per group (fixed effects).

    Fits log(y) = a_g + b·log(x) by OLS: log x and log y are centred within
    each group and b is the slope of the centred values, with a two-sided
    t-interval on n − G − 1 degrees of freedom (G groups that contribute,
    i.e. hold ≥ 2 distinct sizes; singletons carry no information on b and
    are dropped).

    Parameters
    ----------
    x, y : array_like
        Positive sizes and measures; other pairs are dropped.
    groups : array_like
        Group label of each pair (an instance: seed and targets).
    confidence : float, optional
        Level of the interval.

    Returns
    -------
    SlopeFit or None
        None when no group has two distinct sizes. ``intercept`` is the
        mean of the per-group intercepts (for drawing); ``r2`` is the
        within-group R².

    Notes
    -----
    For exact counts that follow C_g·p^b on every instance the interval
    collapses to b; its width measures only how far the counts bend away
    from one power law, not the spread between instances.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    g = np.asarray([str(v) for v in groups], dtype=object)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    lx, ly, g = np.log(x[ok]), np.log(y[ok]), g[ok]
    if lx.size == 0:
        return None
    _, inv = np.unique(g, return_inverse=True)
    cnt = np.bincount(inv)
    mx = np.bincount(inv, lx) / cnt
    my = np.bincount(inv, ly) / cnt
    dx, dy = lx - mx[inv], ly - my[inv]
    spread = np.bincount(inv, dx ** 2)
    keep = spread[inv] > 1e-24          # groups holding ≥ 2 distinct sizes
    if not keep.any():
        return None
    dx, dy, inv_k = dx[keep], dy[keep], inv[keep]
    n, n_groups = int(dx.size), int(np.unique(inv_k).size)
    sxx = float((dx ** 2).sum())
    slope = float((dx * dy).sum() / sxx)
    resid = dy - slope * dx
    sse, sst = float((resid ** 2).sum()), float((dy ** 2).sum())
    r2 = 1.0 - sse / sst if sst > 0 else 1.0
    used = np.unique(inv_k)
    intercept = float(np.mean(my[used] - slope * mx[used]))
    dof = n - n_groups - 1
    if dof < 1:
        return SlopeFit(slope, intercept, math.nan, math.nan, math.nan, n, r2)
    stderr = math.sqrt(sse / dof / sxx)
    t = float(sps.t.ppf(0.5 + confidence / 2, dof))
    return SlopeFit(slope, intercept, slope - t * stderr, slope + t * stderr, stderr, n, r2)


def _contributing(x, groups) -> np.ndarray:
    """Labels of the groups holding ≥ 2 distinct sizes (those a
    :func:`within_fit` uses)."""
    seen: dict[str, set] = {}
    for xi, gi in zip(np.asarray(x, float), groups):
        seen.setdefault(str(gi), set()).add(float(xi))
    return np.array([k for k, v in seen.items() if len(v) >= 2], dtype=object)


#: Size parameters that are solver settings: varying them leaves the instance
#: as it is, so rows of one instance (``instance_sha``) are the replicates.
SOLVER_SIZES = frozenset({"eta", "epsilon", "scenarios"})


def _replicate_labels(g: pd.DataFrame, p: str) -> list[list[str]]:
    """Candidate labels of the instance each row of a fit group measures,
    apart from the size ``p``, most specific first.

    For a solver setting (:data:`SOLVER_SIZES`) the instance solved is the
    replicate. For an instance size the instance changes with the size, so
    a replicate is its generator seed and targets — or the seed alone, since
    the scaling generators derive ℓmax from the size (then no target is
    shared by two sizes and the first labelling leaves nothing to fit).
    """
    if p in SOLVER_SIZES:
        return [[str(v) for v in g["instance_key"]]]
    # Not the sweep group: a counts-only group (complexity.toml) regenerates
    # the same family and seed at other sizes, one series with its timed twin.
    seeds = [str(v) for v in g["instance_seed"]]
    targets = [f"{lm!r}|{om!r}" for lm, om in zip(g["loss_max"], g["omega"])]
    return [[f"{a}|{b}" for a, b in zip(seeds, targets)], seeds]


def _fit_group(source, fam, alg, p, measure, s, g, x, y, ip, declared,
               replicates=None) -> dict | None:
    fit = None
    method = "pooled OLS"
    for labels in replicates or ():
        reps = np.asarray([str(v) for v in labels], dtype=object)
        fit = within_fit(x, y, reps)
        used = np.isin(reps, _contributing(x, reps))
        if fit is not None and fit.n >= 3 and np.unique(np.asarray(x, float)[used]).size >= 3:
            method = "within-instance OLS"
            break
        fit = None
    if fit is None:
        fit = loglog_fit(x, y)
    if fit is None:
        return None
    claimed = CLAIMED_EXPONENTS[p][0]
    implied = _implied(p, measure, declared)
    # series = family plus the generator's string parameters (a knapsack
    # class, a network), so fits of one family stay distinguishable
    tags = [str(v) for k, v in sorted(ip.items()) if isinstance(v, str)]
    return {
        "source": source, "family": fam, "series": "/".join([str(fam), *tags]),
        "algorithm": alg, "measure": measure, "parameter": p, "fixed": s, "points": fit.n,
        "distinct_values": int(np.unique(x).size), "min_value": float(np.min(x)),
        "max_value": float(np.max(x)), "slope": fit.slope, "ci_low": fit.ci_low,
        "ci_high": fit.ci_high, "r2": fit.r2, "method": method,
        "claimed_exponent": math.nan if claimed is None else claimed,
        "implied_exponent": math.nan if implied is None else implied,
        # Property 2 bounds the runtime; a counter is judged against the
        # same exponent (the runtime is at least the work counted)
        "verdict": exponent_verdict(fit, claimed, ASYMPTOTIC_REGIME.get(p, "large")),
        "ci_level": SLOPE_LEVEL, "ci_kind": CI_KIND_TIME if measure == TIME else CI_KIND_COUNTER,
        "intercept": fit.intercept, "x_values": np.asarray(x, float),
        "y_values": np.asarray(y, float)}


def _store_fits(df: pd.DataFrame) -> list[dict]:
    rows = []
    timed = df[df["status"].isin(TIMED_STATUSES)]
    if timed.empty:
        return rows
    counters = [work_counters(d) for d in timed["diagnostics_d"]]
    timed = timed.assign(_work=pd.Series(counters, index=timed.index, dtype=object))
    for p in SIZE_PARAMETERS:
        sub = timed[timed[p].notna() & (timed[p] > 0)]
        if sub.empty:
            continue
        for (fam, alg), ga in sub.groupby(["family", "solver"], sort=True):
            if ga[p].nunique() < 3:
                continue  # a slope through two sizes has no interval
            # Targets are not part of the signature: generators derive ℓmax
            # from the instance size (scaling, knapsack), so keying on it would
            # put every size in a group of its own; targets a sweep sets
            # explicitly are balanced across the grid and act as replicates.
            ga = ga.assign(_sig=_signatures(ga, p, "instance_params_d", "params_d"))
            for s, g in ga.groupby("_sig", sort=True):
                if g[p].nunique() < 3:
                    continue
                ip = g["instance_params_d"].iloc[0]
                x = g[p].to_numpy(float)
                t = g["runtime_s"].to_numpy(float)
                counts_only = np.array([str(a).endswith(COUNTS_SUFFIX) for a in g["algorithm"]],
                                       dtype=bool)
                ok = np.isfinite(t) & (t > 0) & ~counts_only
                if np.unique(x[ok]).size >= 3:
                    r = _fit_group("store", fam, alg, p, TIME, s, g, x[ok], t[ok], ip, {})
                    if r is not None:
                        rows.append(r)
                reps = [np.asarray(r, dtype=object) for r in _replicate_labels(g, p)]
                names = sorted({k for w in g["_work"] for k in w})
                declared = next((d.get("work_exponents") for d in g["diagnostics_d"]
                                 if isinstance(d.get("work_exponents"), dict)), {})
                for name in names:
                    vals = np.array([w.get(name, np.nan) for w in g["_work"]], float)
                    ok = np.isfinite(vals) & (vals > 0)
                    if np.unique(x[ok]).size < 3:
                        continue
                    r = _fit_group("store", fam, alg, p, name, s, g, x[ok], vals[ok], ip,
                                   declared, replicates=[r[ok] for r in reps])
                    if r is not None:
                        rows.append(r)
    return rows


def _bench_fits(bench: pd.DataFrame) -> list[dict]:
    rows = []
    b = bench.copy()
    b["family"] = b["file"]
    b["algorithm"] = [bench_algorithm(n, f, g) for n, f, g in
                      zip(b["name"], b["fullname"], b["group"])]
    b["_params"] = [json.loads(t) if isinstance(t, str) and t else {} for t in b["param_json"]]
    for p in SIZE_PARAMETERS:
        sub = b[b[p].notna() & (b[p] > 0) & b["median_s"].notna() & (b["median_s"] > 0)]
        for (fam, alg), ga in sub.groupby(["family", "algorithm"], sort=True):
            if ga[p].nunique() < 3:
                continue
            ga = ga.assign(_sig=_signatures(ga, p, "_params", None))
            for s, g in ga.groupby("_sig", sort=True):
                if g[p].nunique() < 3:
                    continue
                r = _fit_group("bench", fam, alg, p, TIME, s, g, g[p].to_numpy(float),
                               g["median_s"].to_numpy(float), {}, {})
                if r is not None:
                    rows.append(r)
    return rows


def complexity_fits(df: pd.DataFrame, bench: pd.DataFrame | None = None) -> pd.DataFrame:
    """Log-log slopes of runtime and work counters against every size
    parameter that varies.

    A fit pools the runs of one family and solver whose *other* instance
    and solver parameters are identical (``fixed`` shows them), so a slope
    in |M| is never confounded with a change in η; seeds, repetitions and
    targets are replicates. Needs ≥ 3 distinct sizes. Benchmark JSON rows
    (median time) are fitted the same way with ``source = "bench"``.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`FIT_COLUMNS` plus :data:`FIT_EXTRA_COLUMNS`;
        ``measure`` is ``"time"`` or the counter's name.
    """
    rows: list[dict] = []
    if not df.empty:
        rows += _store_fits(df)
    if bench is not None and not bench.empty:
        rows += _bench_fits(bench)
    if not rows:
        return _empty(FIT_COLUMNS + FIT_EXTRA_COLUMNS)
    return pd.DataFrame(rows, columns=list(FIT_COLUMNS + FIT_EXTRA_COLUMNS))


def best_fits(fits: pd.DataFrame, algorithm: str | None = None, by_family: bool = False,
              measure: str | None = TIME) -> pd.DataFrame:
    """One fit per (source, algorithm, measure, parameter) — per series
    (family and class) too with ``by_family`` — choosing the one with the
    most points, then the widest size range, then the largest measured
    values (the instances nearest the asymptotic regime a big-O bound is
    about; what the claims audit quotes and the figures draw).
    ``measure=None`` keeps every measure."""
    if fits.empty:
        return fits
    f = fits if algorithm is None else fits[fits["algorithm"] == algorithm]
    if measure is not None:
        f = f[f["measure"] == measure]
    if f.empty:
        return f
    f = f.assign(_span=np.log(f["max_value"].astype(float) / f["min_value"].astype(float)),
                 _top=[float(np.max(y)) if "y_values" in f and np.size(y) else 0.0
                       for y in (f["y_values"] if "y_values" in f else [[]] * len(f))])
    f = f.sort_values(["points", "_span", "_top"], ascending=False, kind="stable")
    keys = ["source", "algorithm", "measure", "parameter"]
    if by_family:
        keys.insert(1, "series")
    return f.groupby(keys, sort=False).head(1).drop(columns=["_span", "_top"])


COUNTER_COLUMNS = ("algorithm", "parameter", "counter", "counter_slope", "counter_ci",
                   "counter_points", "time_slope", "time_ci", "time_points",
                   "claimed_exponent", "implied_exponent", "verdict")


def counter_vs_time(fits: pd.DataFrame) -> pd.DataFrame:
    """Per solver and size parameter: each counter's slope beside the
    runtime's slope on the same runs' family and signature.

    The counter slope is exact (no measurement noise); the runtime's is
    what a stopwatch on a shared machine gives. Both are compared with the
    exponent Property 2 prints and with the implied one.
    """
    if fits.empty:
        return _empty(COUNTER_COLUMNS)
    store = fits[fits["source"] == "store"]
    work = store[store["measure"] != TIME]
    if work.empty:
        return _empty(COUNTER_COLUMNS)
    best = best_fits(work, measure=None)
    times = store[store["measure"] == TIME].set_index(["family", "algorithm", "parameter",
                                                       "fixed"])
    rows = []

    def ci(lo, hi):
        return f"[{lo:.3f}, {hi:.3f}]" if math.isfinite(lo) else "n/a"

    for r in best.itertuples(index=False):
        key = (r.family, r.algorithm, r.parameter, r.fixed)
        t = times.loc[[key]].iloc[0] if key in times.index else None
        rows.append({
            "algorithm": r.algorithm, "parameter": SIZE_LABELS.get(r.parameter, r.parameter),
            "counter": r.measure, "counter_slope": r.slope, "counter_ci": ci(r.ci_low, r.ci_high),
            "counter_points": r.points,
            "time_slope": float(t["slope"]) if t is not None else math.nan,
            "time_ci": ci(float(t["ci_low"]), float(t["ci_high"])) if t is not None else "n/a",
            "time_points": int(t["points"]) if t is not None else 0,
            "claimed_exponent": r.claimed_exponent, "implied_exponent": r.implied_exponent,
            "verdict": r.verdict})
    return pd.DataFrame(rows, columns=list(COUNTER_COLUMNS))


BENCH_COLUMNS = ("file", "group", "name", "median_s", "mean_s", "stddev_s", "min_s",
                 "rounds")


def bench_summary(bench: pd.DataFrame | None) -> pd.DataFrame:
    """The pytest-benchmark entries, as measured."""
    if bench is None or bench.empty:
        return _empty(BENCH_COLUMNS)
    return bench[list(BENCH_COLUMNS)].sort_values(["file", "group", "name"])
