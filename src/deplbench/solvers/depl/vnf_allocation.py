"""DepL stage 3: cluster selection and resource allocation, a (1+ε) scheme.

Once the datasets D̂ and the model sequence m_1..m_K are fixed, what is left is
(DepL paper Sec. IV-C): choose the cluster n_k of every epoch and its
allocation x_k to

    min Σ_k κ(n_k) x_k + transfer(clusters used)
    s.t. Σ_k c_k / x_k + s(m_k)/b(n_k) ≤ Tmax,   0 < x_k ≤ r(n_k),

which the paper maps to VNF placement (clusters = servers, models = VNFs,
model complexity = VNF demand) and solves with the (1+ε) scheme of ref. [22].
We make the (1+ε) factor explicit with two roundings, each worth
(1 + ε') where (1 + ε')² = 1 + ε:

1. **Geometric allocation levels.** x is restricted to
   r(n)·(1+ε')^{−j}, j = 0, 1, …. Rounding any feasible real allocation *up*
   to the next level keeps every time constraint (more compute, less time)
   and costs at most (1+ε') more, so the best level choice costs at most
   (1+ε')·OPT_real. Each epoch now has a finite menu of (time, cost)
   options, one per (cluster, level), pruned to its Pareto front: a
   multiple-choice knapsack with the deadline as capacity.
2. **Cost rounding (FPTAS).** With a lower bound LB ≤ OPT_grid from the
   Lagrangian (LP) relaxation and unit u = ε'·LB/K, option costs are rounded
   up to multiples of u and a dynamic program computes, for every rounded
   total cost, the least total time. The cheapest rounded total whose time
   fits is within K·u = ε'·LB ≤ ε'·OPT_grid of OPT_grid.

Hence cost ≤ (1+ε')²·OPT_real = (1+ε)·OPT_real for the fixed model sequence
and data. The DP has O(K²·(UB/LB)/ε') states and O(log(r·Tmax/c)/ε') options
per epoch, so its work grows like 1/ε² (not the O(1/ε) of the paper's
Property 2, which counts only one rounding). Finally DepL re-optimises x in
closed form for the chosen clusters (``formulations.model.allocation.allocate``),
which can only lower the cost; the DP's own "grid" cost is reported too so
the effect of ε stays visible.

Transfer costs couple epochs through the *set* of clusters used; we
enumerate the allowed cluster sets (all of them for |N| ≤ 6; only
single clusters under the printed eq. (6), where the data-holding cluster
must train every epoch) and add each set's transfer cost. When every β is 0
one DP over all clusters suffices.

References
----------
DepL paper Sec. IV-C and Properties 2–3; H. Feng, J. Llorca, A. M. Tulino,
D. Raz, A. F. Molisch, "Approximation algorithms for the NFV service
distribution problem", IEEE INFOCOM 2017 (ref. [22]); H. Kellerer,
U. Pferschy, D. Pisinger, *Knapsack Problems*, Springer 2004, ch. 11
(multiple-choice knapsack, LP relaxation and FPTAS).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import SolverError
from deplbench.formulations.model.allocation import allocate
from deplbench.limits import check_memory, check_time
from deplbench.params import Param

#: Largest DP table (rounded-cost buckets) before the cost unit is coarsened
#: (the (1+ε) guarantee is then reported as lost).
MAX_BUCKETS = 200_000
#: Largest number of allocation levels per (epoch group, cluster).
MAX_LEVELS = 5_000
#: Largest options × buckets table gathered at once in the DP.
_GATHER_MAX = 1_000_000
#: Enumerate cluster subsets up to this many clusters.
MAX_SUBSET_CLUSTERS = 6


@dataclass
class PlacementResult:
    """Outcome of :func:`place_and_allocate`.

    Attributes
    ----------
    feasible : bool
    clusters : ndarray of int, shape (K,)
        Cluster index per epoch.
    x : ndarray, shape (K,)
        Allocation on the geometric grid (before exact re-optimisation).
    grid_cost : float
        Σ κ x + transfer of the DP's choice.
    lower_bound : float
        A lower bound on OPT_real for the fixed sequence (LB_LP/(1+ε')),
        transfer included.
    guarantee : bool
        Whether the (1+ε) factor is proven for this run.
    states : int
        DP work: Σ over epochs of options × buckets.
    """

    feasible: bool
    clusters: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    x: np.ndarray = field(default_factory=lambda: np.zeros(0))
    grid_cost: float = math.inf
    lower_bound: float = 0.0
    guarantee: bool = True
    states: int = 0
    buckets: int = 0
    options: int = 0
    subsets_tried: int = 0
    reason: str = ""
    seconds: float = 0.0


def _options(c: float, comm: np.ndarray, kappa: np.ndarray, cap: np.ndarray, clusters,
             time_max: float, eps1: float, upper: float = math.inf):
    """Pareto-optimal (time, cost, cluster, x) options of one epoch.

    ``upper`` is the cost of a known feasible solution: in a solution no
    dearer, every epoch has κx ≤ upper, so levels above upper·(1+ε')/κ can
    be dropped without touching the (1+ε') argument.
    """
    ts, ps, ns, xs = [], [], [], []
    log_step = math.log1p(eps1)
    for i, n in enumerate(clusters):
        if i % 1024 == 0:
            check_time(f"(1+ε) allocation options, cluster {i} of {len(clusters)}")
        avail = time_max - comm[n]
        if avail <= 0 or c / cap[n] > avail:
            continue
        top = float(cap[n])
        if kappa[n] > 0 and math.isfinite(upper):
            top = min(top, upper * (1.0 + eps1) / kappa[n])
        if not top > 0:
            continue  # a paid cluster when a free one gives cost 0 (upper = 0): never in a solution as cheap
        # Levels from the slowest allocation that still fits alone, x_lo =
        # c/(Tmax − comm), up by factors (1+ε'), and r(n) itself: every real
        # x in [x_lo, r] rounds up to a level within (1+ε'). Anchored at the
        # bottom so that a huge capacity (1e300) does not push every level
        # above the useful range (MAX_LEVELS would stop 10^103 short of it).
        # Logs are summed, never taken of a product that can overflow.
        log_lo = math.log(c) - math.log(avail) if c > 0 else math.log(top)
        span = math.log(top) - log_lo
        n_up = int(min(math.ceil(span / log_step), MAX_LEVELS)) if span > 0 else 0
        x = np.exp(log_lo + log_step * np.arange(n_up, dtype=float))
        x = np.concatenate([[top], x[x < top][::-1]])  # fastest useful level first
        if kappa[n] == 0:
            x = x[:1]  # a free cluster: full capacity is both fastest and free
        ts.append(c / x + comm[n])
        # κ(n)·x past binary64 (a huge unit cost) is inf: such an option is never
        # cheaper than a finite one, and a plan left with an inf cost is reported
        # as an error by the solve's cost check (solvers.run), not as a number
        with np.errstate(over="ignore"):
            ps.append(kappa[n] * x)
        ns.append(np.full(x.size, n))
        xs.append(x)
    if not ts:
        return None
    t, p, nn, x = (np.concatenate(a) for a in (ts, ps, ns, xs))
    order = np.lexsort((p, t))
    t, p, nn, x = t[order], p[order], nn[order], x[order]
    # Pareto front: keep an option only if it is cheaper than every faster one.
    run_min = np.minimum.accumulate(np.concatenate([[np.inf], p[:-1]]))
    keep = p < run_min
    return t[keep], p[keep], nn[keep], x[keep]


def _lagrangian(groups, counts, time_max: float):
    """LP bound and a feasible UB for the multiple-choice knapsack.

    L(λ) = Σ_g n_g·min_o (p_o + λ t_o) − λ·Tmax is a lower bound for every
    λ ≥ 0 (weak duality); bisection on λ finds the best one. The choice at
    the smallest time-feasible λ found gives the UB.

    Times are measured in units of Tmax and costs in units of the cheapest
    total, so the price λ searched is of order 1 whatever the instance's
    scale (with Tmax = 1e300 the unscaled λ ≈ 1e-595 underflows, the
    bisection never reaches it and the DP loses its guarantee).
    """
    pscale = float(sum(n * float(g[1].min()) for g, n in zip(groups, counts)))
    if not (math.isfinite(pscale) and pscale > 0):
        pscale = 1.0
    scaled = [(t / time_max, p / pscale, nn, x) for (t, p, nn, x) in groups]
    res = _lagrangian_unit(scaled, counts)
    if res is None:
        return None
    lb, ub = res
    with np.errstate(over="ignore"):    # costs past binary64: inf, reported by the solve's cost check
        return lb * pscale, ub * pscale


def _lagrangian_unit(groups, counts):
    """:func:`_lagrangian` with Tmax = 1 (the caller scales)."""
    time_max = 1.0

    def evaluate(lam):
        val = 0.0
        tot_t = 0.0
        tot_p = 0.0
        for (t, p, _, _), n in zip(groups, counts):
            o = int(np.argmin(p + lam * t))
            val += n * (p[o] + lam * t[o])
            tot_t += n * t[o]
            tot_p += n * p[o]
        return val - lam * time_max, tot_t, tot_p

    fastest = sum(n * g[0][0] for g, n in zip(groups, counts))
    if fastest > time_max * (1 + 1e-9):
        return None
    lb, t0, p0 = evaluate(0.0)
    if t0 <= time_max * (1 + 1e-9):
        return max(lb, 0.0), p0  # the cheapest options already fit
    lo, hi = 0.0, 1.0
    while True:
        val, t, p = evaluate(hi)
        lb = max(lb, val)
        if t <= time_max * (1 + 1e-9):
            ub = p
            break
        lo, hi = hi, hi * 4.0
        if hi > 1e300:
            return None
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        val, t, p = evaluate(mid)
        lb = max(lb, val)
        if t <= time_max * (1 + 1e-9):
            hi, ub = mid, min(ub, p)
        else:
            lo = mid
        if hi - lo <= 1e-12 * hi:
            break
    return max(lb, 0.0), ub


def _dp(groups, epoch_group, time_max: float, eps2: float, lb: float, ub: float):
    """FPTAS dynamic program over rounded costs; returns (option per epoch, states, buckets, guarantee)."""
    K = len(epoch_group)
    guarantee = True
    u = eps2 * lb / K if lb > 0 else 0.0
    if u <= 0:
        # A zero lower bound: every option of some group is free; round on UB.
        u = max(ub, 1e-300) * eps2 / K
        guarantee = lb > 0 or ub == 0
    # may be inf for a tiny unit, and nan when the bounds are inf (costs past binary64): both
    # take the capped branch below, compared before any int(); an inf plan cost is then
    # reported by the solve's cost check (solvers.run)
    with np.errstate(invalid="ignore"):
        ratio = ub / u if ub > 0 else 0.0
    n_buckets = int(math.ceil(ratio)) + K + 1 if ratio < MAX_BUCKETS else MAX_BUCKETS + 1
    if n_buckets > MAX_BUCKETS:
        u = ub / (MAX_BUCKETS - K - 1)
        n_buckets = MAX_BUCKETS
        guarantee = False
    # A rounded cost at or beyond the last bucket can never be part of a
    # solution: clip there before the int64 cast, which would otherwise turn
    # huge or non-finite quotients into garbage indices.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        rounded = [np.nan_to_num(np.minimum(np.ceil(g[1] / u - 1e-9), n_buckets), nan=n_buckets).astype(np.int64)
                   if u > 0 else np.zeros(g[1].size, dtype=np.int64) for g in groups]
    # The choice table is K × buckets int32: refuse before allocating it.
    check_memory(4 * K * n_buckets, f"the (1+ε) allocation table ({K} epochs × {n_buckets} cost buckets)",
                 "use a larger epsilon or a smaller horizon")
    dp = np.full(n_buckets, np.inf)
    dp[0] = 0.0
    choices = np.empty((K, n_buckets), dtype=np.int32)
    states = 0
    buckets = np.arange(n_buckets)
    gathers = {}
    for k in range(K):
        check_time(f"(1+ε) allocation DP, epoch {k} of {K}")
        g = epoch_group[k]
        t, q = groups[g][0], rounded[g]
        if t.size * n_buckets <= _GATHER_MAX:
            # One vectorised min over options: gather dp[b − q_o] (O × B).
            if g not in gathers:
                src = buckets[None, :] - q[:, None]
                valid = src >= 0
                gathers[g] = (np.where(valid, src, 0), valid, int(valid.sum()))
            src, valid, n_valid = gathers[g]
            with np.errstate(over="ignore"):    # a sum of times past binary64 is inf: beyond Tmax, as it truly is
                cand = np.where(valid, dp[src] + t[:, None], np.inf)
            o = np.argmin(cand, axis=0)
            dp = cand[o, buckets]
            choices[k] = o
            states += n_valid
            continue
        # Large tables: loop over options to bound memory.
        new = np.full(n_buckets, np.inf)
        ch = choices[k]
        ch.fill(0)
        for o in range(t.size):
            if o % 256 == 0:   # one layer of 20,000 clusters' options can take seconds: check inside it
                check_time(f"(1+ε) allocation DP, epoch {k} of {K}, option {o} of {t.size}")
            sft = int(q[o])
            if sft >= n_buckets:
                continue
            with np.errstate(over="ignore"):    # as above: a sum of times past binary64 is inf
                cand = dp[: n_buckets - sft] + t[o]
            view = new[sft:]
            better = cand < view
            np.copyto(view, cand, where=better)
            ch[sft:][better] = o
            states += n_buckets - sft
        dp = new
    fits = np.nonzero(dp <= time_max * (1 + 1e-9))[0]
    if fits.size == 0:
        return None, states, n_buckets, guarantee
    b = int(fits[0])
    picks = np.empty(K, dtype=np.int64)
    for k in range(K - 1, -1, -1):
        o = int(choices[k, b])
        picks[k] = o
        b -= int(rounded[epoch_group[k]][o])
    return picks, states, n_buckets, guarantee


def _place_subset(compute, comm, kappa, cap, clusters, time_max, eps, epoch_group_key):
    """(1+ε) placement restricted to ``clusters`` (no transfer cost)."""
    eps1 = math.sqrt(1.0 + eps) - 1.0
    # A feasible solution's cost bounds every useful level (see _options):
    # the exact allocation with every epoch on one cluster, best cluster.
    upper = math.inf
    compute = np.asarray(compute, dtype=float)
    for i, n in enumerate(clusters):
        if i % 64 == 0:
            check_time(f"(1+ε) allocation, one-cluster upper bound {i} of {len(clusters)}")
        one = allocate(compute, comm[:, n], np.full(compute.size, kappa[n]), np.full(compute.size, cap[n]), time_max)
        if one.feasible:
            upper = min(upper, float(one.cost))
    keys = sorted(set(epoch_group_key))
    key_index = {k: i for i, k in enumerate(keys)}
    epoch_group = [key_index[k] for k in epoch_group_key]
    groups = []
    for key in keys:
        k = epoch_group_key.index(key)
        opt = _options(float(compute[k]), comm[k], kappa, cap, clusters, time_max, eps1, upper)
        if opt is None:
            return PlacementResult(False, reason="an epoch fits on none of the allowed clusters")
        groups.append(opt)
    counts = [epoch_group.count(g) for g in range(len(groups))]
    lag = _lagrangian(groups, counts, time_max)
    if lag is None:
        return PlacementResult(False, reason="even the fastest allocations miss Tmax")
    lb, ub = lag
    picks, states, n_buckets, guarantee = _dp(groups, epoch_group, time_max, eps1, lb, ub)
    if picks is None:
        return PlacementResult(False, reason="no rounded-cost solution fits Tmax", states=states)
    cl = np.array([groups[g][2][o] for g, o in zip(epoch_group, picks)], dtype=int)
    x = np.array([groups[g][3][o] for g, o in zip(epoch_group, picks)], dtype=float)
    with np.errstate(over="ignore"):    # past binary64: inf, reported by the solve's cost check
        cost = float(np.sum(kappa[cl] * x))
    return PlacementResult(
        True, clusters=cl, x=x, grid_cost=cost, lower_bound=lb / (1.0 + eps1), guarantee=guarantee,
        states=states, buckets=n_buckets, options=sum(g[0].size for g in groups),
    )


#: Smallest ε: the levels grow by 1 + ε' = √(1 + ε), which must stay above 1 in
#: binary64 (below ε ≈ 2.2e-16 it rounds to 1 and the grid has no step); 1e-12
#: keeps a margin of a thousand, as ``MIN_OMEGA`` does for ω.
MIN_EPSILON = 1e-12
#: The approximation parameter ε: the one declaration of its default and limits,
#: shared by DepL's parameter table (``epsilon``) and :func:`validate_epsilon`.
EPSILON = Param(0.1, float, "(1+ε) approximation of the cluster/allocation stage", low=MIN_EPSILON, high=10.0)


def validate_epsilon(epsilon: float) -> float:
    """ε as a float, checked against :data:`EPSILON` (:data:`MIN_EPSILON` ≤ ε ≤ 10).

    Raises
    ------
    SolverError
        Naming ``epsilon``, with the message ``--param epsilon=`` gives.
    """
    return EPSILON.convert("epsilon", epsilon)


def place_and_allocate(compute, comm, kappa, cap, time_max: float, epsilon: float,
                       subset_cost=None, single_cluster: bool = False,
                       group_key=None) -> PlacementResult:
    """Choose a cluster and a grid allocation per epoch, within (1+ε) of optimal.

    Parameters
    ----------
    compute : array_like, shape (K,)
        c_k = c(m_k, D̂) > 0.
    comm : array_like, shape (K, N)
        s(m_k)/b(n) for every epoch and cluster.
    kappa, cap : array_like, shape (N,)
        κ(n) and r(n).
    time_max : float
    epsilon : float
        Approximation parameter ε > 0.
    subset_cost : callable, optional
        ``subset_cost(tuple_of_cluster_indices) -> float``: transfer cost of
        using exactly that set of clusters. ``None`` (or always 0) means no
        transfer costs: a single DP over all clusters.
    single_cluster : bool
        Only one cluster may train (eq. (6) as printed).
    group_key : sequence, optional
        Epochs with equal keys have identical options (e.g. the model index);
        defaults to the compute value.

    Returns
    -------
    PlacementResult

    Raises
    ------
    SolverError
        If ε is out of range.
    """
    t0 = time.perf_counter()
    # a direct call is checked as the parameter table checks it (the same Param)
    epsilon = validate_epsilon(epsilon)
    compute = np.asarray(compute, dtype=float)
    comm = np.asarray(comm, dtype=float)
    kappa = np.asarray(kappa, dtype=float)
    cap = np.asarray(cap, dtype=float)
    K, N = comm.shape
    if compute.shape != (K,) or kappa.shape != (N,) or cap.shape != (N,):
        raise SolverError("placement: inconsistent shapes of compute / comm / kappa / capacity")
    if K == 0:
        return PlacementResult(True, grid_cost=0.0)
    key = list(group_key) if group_key is not None else [float(c) for c in compute]
    key = [(k, tuple(comm[i])) for i, k in enumerate(key)]
    subsets: list[tuple[int, ...]]
    if single_cluster:
        subsets = [(n,) for n in range(N)]
    elif subset_cost is None:
        subsets = [tuple(range(N))]
    elif N <= MAX_SUBSET_CLUSTERS:
        subsets = [s for r in range(1, N + 1) for s in itertools.combinations(range(N), r)]
    else:
        subsets = [tuple(range(N))] + [(n,) for n in range(N)]
    best = PlacementResult(False, reason="no cluster set admits a feasible placement")
    tried = 0
    exhaustive = single_cluster or subset_cost is None or N <= MAX_SUBSET_CLUSTERS
    # LB over all cluster sequences = min over the used set S of
    # (LB_S + transfer(S)); a subset skipped because its transfer cost alone
    # exceeds the incumbent contributes transfer(S) (LB_S >= 0).
    lower = math.inf

    def transfer(clusters) -> float:
        # transfer costs summing past binary64 are inf: such a set is never chosen over a
        # finite one, and an inf plan cost is reported by the solve's cost check (solvers.run)
        with np.errstate(over="ignore"):
            return float(subset_cost(clusters)) if subset_cost is not None else 0.0

    for sub in subsets:
        fixed = transfer(sub)
        if best.feasible and fixed >= best.grid_cost:
            lower = min(lower, fixed)
            continue
        res = _place_subset(compute, comm, kappa, cap, list(sub), time_max, epsilon, key)
        tried += 1
        best.states = max(best.states, res.states)
        if not res.feasible:
            continue
        lower = min(lower, res.lower_bound + fixed)
        used = tuple(sorted(set(res.clusters.tolist())))
        # Charge what is actually used (a subset of ``sub``).
        res.grid_cost += transfer(used)
        if not best.feasible or res.grid_cost < best.grid_cost:
            res.states = max(res.states, best.states)
            best = res
    if best.feasible:
        best.lower_bound = lower if exhaustive else 0.0
    best.subsets_tried = tried
    best.seconds = time.perf_counter() - t0
    return best


__all__ = ["EPSILON", "PlacementResult", "place_and_allocate", "validate_epsilon", "MAX_BUCKETS"]
