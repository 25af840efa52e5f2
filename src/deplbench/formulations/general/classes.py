"""Class assignments of the ``general`` formulation: one leaf each, all bounded at once.

Why
---
A plan of the ``general`` formulation first fixes an *assignment*: which
clusters train and which data class σ (a Pareto-optimal dataset subset, see
``boxes.cluster_classes``) each of them holds. Searching the assignments
best-first over *boxes* of classes, each bounded by its optimistic corner
(largest γ, smallest V, smallest β of the box), stalls because a corner is
never a real class: on the |D| = 10 datasets instance (79 and 74 classes on
two clusters, 153 single-cluster and 5846 two-cluster assignments) the
corner of a box of four classes per cluster is still bounded near 680
against an incumbent of 1475.6, and such a search ends at a 40.6 % gap
without reaching a single two-cluster leaf.

What this module does instead
-----------------------------
While the assignments are few (at most ``GeneralSettings.assignment_limit``; the product
Π_n (1 + |classes of n|) − 1 under the intended data rule), every assignment
becomes its own leaf and all of them are bounded by **one vectorised
min-plus DP**: the scenario-group bound of ``groups`` (one backward
DP over (epoch, model) per multiplier vector π of the shared pool, p + 1
disjoint scenario groups, the (p+1)-th largest group bound), evaluated with
each assignment's exact classes instead of a box corner. Leaves are then
searched best-first by that bound with the unchanged exact leaf search
(``search.BlockSearch``), and a time limit leaves the smallest
bound of the leaves not yet searched as the global lower bound.

Where the multipliers are tuned. The pool's π come from Kelley's method on
one configuration; tuned on the optimistic root corner they bounded the
real assignments near 127 (probe). :func:`seed_assignment` picks instead
the single-cluster assignment whose mean-draw plan is cheapest, with that
plan's time price as λ; after the first incumbent, :func:`rebound_leaves`
adds π tuned on the incumbent's assignment at its price and raises every
open leaf's bound. Both are heuristics for strength only.

Why the DP may merge clusters per model. The block search's virtual models
are (model m, γ-group g); a step between two virtual models of the same
model has no jump and is always allowed, a step between models m → m' pays
the switch jump whatever the groups. So the DP value at (k, (m, g)) does not
depend on g, and one state per model with node weight
min_g [w_{m,g}(λ) − γ_g·(π-aggregated improvement)] gives exactly the same
numbers (``tests/formulations/general/test_milp_general_datasets.py`` checks equality with
``GroupTables.root`` leaf by leaf). This is what makes the DP cheap enough to
run for thousands of assignments at once: (assignments × π × |M|) per epoch.

Validity (every discarded leaf keeps its bound). For one assignment the
value is the group bound of ``groups`` (proof there: Lagrangian
relaxation of "one completion satisfies every scenario of the group", at
most p groups hold a violated scenario) plus the assignment's constant
(−λ·Tmax and the one-time transfers Σ β, eqs. (2), (4) with the λ-dual of
the package docstring). Every π and every λ ≥ 0 gives a valid bound, so the
bounds may be recomputed with a better λ or a larger pool and the larger
value kept (:func:`rebound`). The horizon of each assignment is its own
Tmax/(fastest epoch) cap, as in ``boxes.horizon_cap`` without the incumbent
term, so the bound holds for every plan of the assignment, not only for
plans cheaper than some incumbent.

Strength (|D| = 10 datasets instance, S = 200)
----------------------------------------------
All 5999 leaf bounds equal the per-leaf ``GroupTables`` values (tested)
and cost a small fraction of a box search each.
They are still weak: the group bound is a path LP that mixes plans with
independent draws, so it stays about 8 % below the optimum even on the
optimum's own assignment, and about 200 leaves (almost all two-cluster) lie
below the incumbent. What proves them is the search that follows, not this
bound: a two-cluster leaf is searched over model blocks with epoch counts
per cluster, without enumerating interleavings (``pairs``: tens of block
nodes per leaf where the interleaving search, ``pair_search=False``, takes
tens of thousands), and
blocks of neighbouring two-cluster assignments are discarded together by
their corner (``pair_groups``). The optimum, 1469.43, is a
two-cluster plan (43 epochs of "intermediate", 6 of them on B1 holding d8
and d9); the best single-cluster plan costs 1475.61. Timings:
docs/performance.md (``perf/general_targets.py``).

References
----------
DepL paper eqs. (2)–(6); J. Luedtke, Math. Prog. 146 (2014) 219–244
(single-scenario subproblems); W. Xie, S. Ahmed, Math. Prog. 172 (2018)
621–646 (the quantile order statistic); S. Ahmed, J. Luedtke, Y. Song,
W. Xie, Math. Prog. 162 (2017) 51–81 and Y. Deng et al., INFORMS J. Comput.
33 (2021) 757–773 (scenario grouping).
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from deplbench import limits
from deplbench.formulations.general.boxes import ClusterTables, horizon_cap, leaf_ranges
from deplbench.formulations.general.search import phi

#: Largest number of assignments enumerated as leaves by default (beyond it: boxes;
#: a solve's limit is ``GeneralSettings.assignment_limit``).
ASSIGNMENT_LIMIT = 20_000
#: Assignments per block of the vectorised DP (memory ≈ CHUNK·R·|M|² floats).
CHUNK = 1024


def count_assignments(instance, lists) -> int:
    """How many assignments there are (used clusters × one class each)."""
    sizes = [len(x) for x in lists]
    if instance.data_rule == "printed":      # eq. (6) as printed: one training cluster
        return int(sum(sizes))
    total = 1
    for c in sizes:
        total *= 1 + c
    return total - 1


def leaf_assignments(instance, lists, limit: int = ASSIGNMENT_LIMIT) -> list | None:
    """Every assignment as per-cluster ranges ((i, i+1) or None), or None if more than ``limit``.

    The ranges are those of a leaf ``boxes._Box``, so the general
    search handles each assignment exactly as a leaf of its box search.
    """
    if count_assignments(instance, lists) > limit:
        return None
    return list(leaf_ranges(instance, lists))


def dominated_assignments(prob, ranges_list, tables: ClusterTables) -> set:
    """The assignments of ``ranges_list`` whose plans are all plans of another one in it.

    Assignment A is dominated by B when B trains the same clusters with the
    same classes plus one more cluster whose class has no transfer cost
    (β = 0), and the data rule (6) allows B. Every plan of A is then a plan
    of B with that cluster idle, at the same cost (a leaf pays β only for
    the clusters it uses, ``leaves``); B's γ-groups contain A's, so its
    search enumerates A's virtual-model sequences, and its bounds (the
    cheapest cluster of each group, the transfers Σβ of its clusters, the
    same as A's) hold for them. Searching B, or keeping its open bound,
    therefore covers A, which is not searched. Dominance is transitive, so
    one extra cluster at a time is enough. Under the printed rule no
    multi-cluster assignment holds plans, and nothing is dominated.
    """
    if prob.single_cluster:
        return set()
    present = set(ranges_list)
    lists, beta = tables.lists, tables.beta
    free = [[i for i, cls in enumerate(lists[n]) if beta[cls, n] == 0.0] for n in range(len(lists))]
    out = set()
    for rng in ranges_list:
        if any(rng[:n] + ((i, i + 1),) + rng[n + 1:] in present
               for n, r in enumerate(rng) if r is None for i in free[n]):
            out.add(rng)
    return out


def _tables(prob, lam: float, ranges_list, tables: ClusterTables):
    """Per assignment: weights (A, U, M) (+∞ on unused slots), γ (A, U), horizon (A,), constant (A,)."""
    lists, vol, gam, beta = tables.lists, tables.vol, tables.gam, tables.beta
    P = prob
    N = len(lists)
    A = len(ranges_list)
    W = np.full((A, N, P.M), np.inf)
    G = np.zeros((A, N))
    fastest = np.full(A, np.inf)
    bsum = np.zeros(A)
    for n in range(N):
        idx = np.array([-1 if r[n] is None else lists[n][r[n][0]] for r in ranges_list])
        on = idx >= 0
        if not on.any():
            continue
        cls = idx[on]
        c = P.c_m[None, :] * vol[cls][:, None]                              # (a, M)
        w = phi(lam, c, P.kap[n], P.cap[n]) + lam * P.comm[None, :, n]
        W[on, n] = w
        G[on, n] = gam[cls]
        tmin = c / P.cap[n] + P.comm[None, :, n]
        fastest[on] = np.minimum(fastest[on], tmin.min(axis=1))
        bsum[on] += beta[cls, n]
    if P.per_epoch:
        # the printed eq. (2) pays every holder's β in every epoch (Problem.weights)
        W = W + bsum[:, None, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        kcap = np.where(fastest > 0, np.floor(P.T / fastest * (1 + 1e-12) + 1e-9), P.K)
    kmax = np.clip(np.nan_to_num(kcap, nan=0.0, posinf=P.K), 0, P.K).astype(int)
    const = -lam * P.T + (0.0 if P.per_epoch else bsum)
    return W, G, kmax, np.broadcast_to(const, (A,)).astype(float)


def assignment_bounds(prob, pool, lam: float, ranges_list, tables: ClusterTables) -> np.ndarray:
    """The scenario-group root bound of every assignment (module docstring), shape (A,).

    ``+inf`` marks an assignment with no epoch that fits Tmax. Equals
    ``BlockSearch(prob, cfg, lam, kmax).groups.root() + const`` of the same
    assignment with the same pool (tested), at a fraction of the cost.
    Assignments not reached before the time limit (:mod:`deplbench.limits`) get 0 (the first ``CHUNK``
    are always bounded), a valid bound since every cost of eq. (2) is
    non-negative (κ, x, β ≥ 0).
    """
    P = prob
    A = len(ranges_list)
    out = np.full(A, np.inf)
    if A == 0 or pool is None or pool.Pi.shape[0] == 0:
        return out
    W, G, kmax, const = _tables(P, lam, ranges_list, tables)
    a = pool.a                                                  # (R, K̄, M)
    # allowed model switches (m → m2) with their jump index; staying costs no jump
    moves = [(m, m2, P.switch_index[(m, m2)]) for m in range(P.M) for m2 in range(P.M)
             if m2 != m and P.allowed[m, m2]]
    slack = pool.Pi.sum(axis=1) * (P.l0 - P.lmax)               # (R,)
    Kb = min(int(kmax.max()), P.K)
    for lo in range(0, A, CHUNK):
        sl = slice(lo, min(A, lo + CHUNK))
        # The first chunk is always bounded, so that a time limit still
        # leaves a positive bound.
        if lo > 0 and limits.expired():
            out[lo:] = 0.0
            break
        Wc, Gc, kc = W[sl], G[sl], kmax[sl]
        used = np.nonzero(np.isfinite(Wc).any(axis=(0, 2)))[0]
        # model-major (M, a, R): every per-model slice below is contiguous; the work
        # arrays are allocated once per chunk (a fresh one per epoch cost more than the sums)
        WT = np.ascontiguousarray(Wc.transpose(1, 2, 0))        # (N, M, a)
        shape = (P.M, Wc.shape[0], a.shape[0])
        V = np.zeros(shape)                                     # V[k+1]: completions after epoch k
        Vk, node, enter, t = np.empty(shape), np.empty(shape), np.empty(shape), np.empty(shape)
        root = None
        for k in range(Kb - 1, -1, -1):
            aT = a[:, k, :].T                                     # (M, R)
            for i, u in enumerate(used):
                # W − γ·a; +inf on unused slots stays +inf (γ = 0 there)
                np.multiply(Gc[None, :, u, None], aT[:, None, :], out=t)
                np.subtract(WT[u][:, :, None], t, out=node if i == 0 else t)
                if i > 0:
                    np.minimum(node, t, out=node)
            np.add(node, V, out=enter)
            if k == 0:
                root = enter.min(axis=0)                          # at least one epoch
                break
            np.copyto(Vk, enter)                                  # stay on the model
            Jk = pool.J[:, k, :]
            for m, m2, pj in moves:
                np.minimum(Vk[m], enter[m2] + Jk[None, :, pj], out=Vk[m])
            np.minimum(Vk, 0.0, out=Vk)
            short = k >= kc
            if short.any():
                Vk[:, short] = 0.0
            V, Vk = Vk, V
        if root is None:
            continue
        val = root + slack[None, :]                                # (a, R)
        h = np.maximum(np.maximum.reduceat(val, pool.starts, axis=1), 0.0)   # per group
        b = h.min(axis=1) + const[sl]
        out[sl] = np.where(kc >= 1, b, np.inf)
    return out


def rebound_leaves(heap: list, prob, pool, leaves, tables: ClusterTables) -> int:
    """After the first incumbent: Kelley on its assignment at its time price, then :func:`rebound`.

    The new multipliers join the shared pool (every π stays valid):
    ``GeneralSettings.rebound_kelley_iterations`` Kelley iterations per group
    (a work budget; the time limit is only the solve's outer stop).
    """
    from deplbench.formulations.general.search import BlockSearch, Config

    models, clusters, held, alloc = leaves.best
    used = sorted(held)
    cls = [held[n] for n in used]
    cfg = Config(np.array(used), cls, tables.gam[cls], tables.vol[cls],
                 np.array([tables.beta[c, n] for c, n in zip(cls, used)]))
    lam = leaves.best_price if leaves.best_price > 0 else 1.0
    # Kelley tunes π for completions of at most kmax epochs: the horizon the
    # incumbent's cost allows (as the root pool's), not K̄ — π tuned for
    # K̄-epoch completions gave negative bounds on shorter searches.
    const = prob.dual_constant(cfg, lam)
    kmax = max(1, horizon_cap(prob, prob.weights(cfg, lam), prob.tmin(cfg), const, leaves.best_cost))
    search = BlockSearch(prob, cfg, lam, kmax, leaves.best_cost / prob.loss_span)
    iters = prob.settings.rebound_kelley_iterations
    if iters > 0:
        pool.extend(search, iters=iters)
    return rebound(heap, prob, pool, lam, tables, above=leaves.best_cost)


def rebound(heap: list, prob, pool, lam: float, tables: ClusterTables,
            above: float = math.inf) -> int:
    """Raise the bounds of the open leaves of ``heap`` (items (bound, tie, box)) in place.

    Any λ and any π give valid bounds, so each leaf keeps the larger of its
    old and new value; the heap is re-heapified. Leaves whose bound already
    reaches ``above`` (the incumbent's cost: they are never searched) are
    left as they are — on |D| = 10 seed 2, more than half of them. Returns
    how many rose.
    """
    leaves = [i for i, item in enumerate(heap) if item[2].is_leaf() and item[0] < above]
    if not leaves:
        return 0
    new = assignment_bounds(prob, pool, lam, [heap[i][2].ranges for i in leaves], tables)
    raised = 0
    for i, b in zip(leaves, new):
        old, tie, box = heap[i]
        if b > old:
            heap[i] = (float(b), tie, box)
            raised += 1
    heapq.heapify(heap)
    return raised





def seed_assignment(prob, tables: ClusterTables):
    """The single-cluster assignment whose mean-draw plan is cheapest: where to tune the pool.

    For every (cluster n, class σ) and model m, N = the fewest epochs of m
    after which the scenario-average loss l0 − γ_σ·Σ ā reaches ℓmax, costed
    by the uncapped closed form β + κ_n c_m V_σ N² / (Tmax − N·comm)
    (allocation module docstring). Only a heuristic choice (where the
    multipliers are tuned and which λ to start with): no bound depends on it.

    Returns ``(cluster, class, proxy cost, time price λ)`` or None.
    """
    P = prob
    lists, vol, gam, beta = tables.lists, tables.vol, tables.gam, tables.beta
    cumbar = P.cumA.mean(axis=0)                                         # (K̄+1, M)
    best = None
    for n, cls in enumerate(lists):
        if len(cls) == 0:
            continue
        g = gam[cls]
        # (C, K̄+1, M): mean loss after k epochs of model m only
        reach = P.l0 - g[:, None, None] * cumbar[None, :, :] <= P.lmax
        reach[:, 0, :] = False
        ok = reach.any(axis=1)                                           # (C, M)
        N = np.where(ok, reach.argmax(axis=1), 0).astype(float)          # (C, M)
        slack = P.T - N * P.comm[None, :, n]
        with np.errstate(divide="ignore", invalid="ignore"):
            cost = P.kap[n] * P.c_m[None, :] * vol[cls][:, None] * N ** 2 / slack
        cost = np.where(ok & (slack > 0), cost, np.inf) + beta[cls, n][:, None]
        i, m = np.unravel_index(int(np.argmin(cost)), cost.shape)
        if math.isfinite(cost[i, m]) and (best is None or cost[i, m] < best[2]):
            theta = math.sqrt(P.kap[n] * P.c_m[m] * vol[cls[i]]) * N[i, m] / slack[i, m]
            best = (n, int(cls[i]), float(cost[i, m]), theta ** 2)
    return best

__all__ = [
    "ASSIGNMENT_LIMIT",
    "assignment_bounds",
    "dominated_assignments",
    "count_assignments",
    "leaf_assignments",
    "rebound",
    "rebound_leaves",
    "seed_assignment",
]
