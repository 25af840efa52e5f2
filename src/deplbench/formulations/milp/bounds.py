"""Structural bounds for the MILP: the range of K, an incumbent plan, tight big-M values.

What is computed (all valid for every SAA-feasible plan not dearer than the
incumbent, the only plans the search needs; the incumbent is kept apart)
-------------------------------------------------------------------------
* K_min — per scenario a min-plus DP over the epoch × model state graph gives
  the fewest epochs after which *some* plan reaches ℓmax; a feasible plan
  satisfies at least S − p scenarios (p = ⌊(1−ω)S⌋, eq. (3) as an SAA), so
  K ≥ the (p+1)-th largest (K ≥ 1 when p ≥ S: the quantile is then vacuous).
* K_max — Tmax over the fastest usable epoch (eqs. (4)–(5)), and the λ cuts:
  K·min_j g_j(λ) − λ Tmax ≤ cost ≤ UB.
* The incumbent — :func:`block_heuristic`: the best plan of at most three
  model blocks on one cluster, checked exactly in-sample and costed exactly
  with ``allocate``; it bounds the search and warm-starts the solver.
  Exactness never depends on it.
* M_s — a Lagrangian longest-path DP per scenario (:func:`tight_bigm`),
  M_s = min_{μ,ν≥0} max_plans [ℓ_s − μ(ℓ̄ − ℓmax − δ) − ν(cut − UB)] − ℓmax,
  with ℓ̄ the scenario-average loss (feasible plans have ℓ̄ ≤ ℓmax + δ,
  δ = sum of the p largest M_t / S, iterated) and "cut" the linear cost
  lower bound; M_s ≤ 0 turns row s into a hard constraint.

References
----------
DepL paper eqs. (3)–(8); J. Luedtke, S. Ahmed, SIAM J. Optim. 19 (2008)
(big-M values of chance-constrained SAA); docs/DESIGN.md ("Model semantics").
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from deplbench import limits
from deplbench.formulations.milp.data import Choice, Data
from deplbench.formulations.milp.options import BIGM_SLACK, BuildTimeout
from deplbench.formulations.model.allocation import sqrt_product
from deplbench.formulations.model.last_block import shortest_last_block
from deplbench.formulations.model.scenarios import loss_threshold


def _best_gamma_amount(data: Data, k_hi: int | None = None) -> np.ndarray:
    """max_σ γ_σ·a[s,k,m] for k < k_hi: the most favourable run term of each node."""
    g = data.gam
    a = data.a if k_hi is None else data.a[:, :k_hi, :]
    return np.maximum(g.max() * a, g.min() * a)


def min_epochs(data: Data, k_hi: int | None = None) -> np.ndarray:
    """Per scenario, the fewest epochs after which some plan reaches ℓmax.

    Returns K_s with K_s = K̄+1 when no plan of at most ``k_hi`` (default K̄)
    epochs reaches ℓmax in scenario s. A min-plus DP over the state graph;
    longer plans than Tmax allows need not be looked at.

    Raises
    ------
    BuildTimeout
        When the deadline of :func:`deplbench.limits.deadline` passes.
    """
    S, K = data.S, data.K
    k_hi = K if k_hi is None else min(K, int(k_hi))
    amt = _best_gamma_amount(data, max(k_hi, 1))
    best = data.l0 - amt[:, 0, :]
    reach = np.full(S, K + 1)
    hit = best.min(axis=1) <= loss_threshold(data.lmax)
    reach[hit] = 1
    for k in range(1, k_hi):
        if (reach <= K).all():
            break
        if limits.expired():
            raise BuildTimeout("the K range (fewest epochs per scenario)")
        cand = best.copy()
        for p, (i, j) in enumerate(data.pairs):
            np.minimum(cand[:, j], best[:, i] + data.J[:, k, p], out=cand[:, j])
        best = cand - amt[:, k, :]
        new = (reach > K) & (best.min(axis=1) <= loss_threshold(data.lmax))
        reach[new] = k + 1
    return reach


def quantile_ok(losses: np.ndarray, p: int, lmax: float) -> np.ndarray:
    """SAA feasibility per column: at most p of the S rows exceed ℓmax."""
    return np.count_nonzero(losses > loss_threshold(lmax), axis=0) <= p


def cumulative_by_model(data: Data, s_idx: int) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative improvement of data class ``s_idx``: (cum (S, K+1, M), cum_t (M, K+1, S)).

    ``cum_t`` is the same numbers laid out so that one model's value at a set
    of epochs is a block of contiguous rows: the bisection of
    :func:`shortest_last_block` gathers whole scenario rows instead of strided
    elements (strided, those gathers take about half the time of an SAA solve
    at S = 20 000).
    """
    S, M = data.S, data.M
    cum = np.concatenate([np.zeros((S, 1, M)), np.cumsum(data.gam[s_idx] * data.a, axis=1)], axis=1)
    return cum, np.ascontiguousarray(cum.transpose(2, 1, 0))


def block_heuristic(data: Data, k_min: int, k_max: int):
    """Best plan of at most three model blocks on one cluster (exact check).

    Blocks follow allowed switches (m1 → m2 → m3). For every data class and
    every choice of the first block lengths, the shortest final block meeting
    the in-sample quantile is found (:func:`shortest_last_block`); candidates
    are costed exactly with ``allocate`` on every cluster, after a closed-form
    lower bound has discarded the hopeless ones. Returns the best
    :class:`Choice` or None (also when the :mod:`deplbench.limits` deadline passes first).
    """
    best: list[Choice | None] = [None]
    idx = [0]

    def consider(models):
        s_idx = idx[0]
        if limits.expired():
            raise BuildTimeout("heuristic")
        classes = np.full(models.size, s_idx)
        for n in range(data.Nn):
            if n % 256 == 255 and limits.expired():   # 20,000 clusters
                raise BuildTimeout("heuristic")
            if not data.usable[models, n, s_idx].all():
                continue
            c = data.c[models, n, s_idx]
            kap = data.kap[models, n, s_idx]
            slack = data.T - data.comm[models, n, s_idx].sum()
            if slack <= 0:
                continue
            # the real-x cost (Σ sqrt(c·κ))²/slack of these models on n; a square past
            # binary64 is inf (no plan on n is cheaper than the best found)
            with np.errstate(over="ignore"):
                bound = np.sum(sqrt_product(c, kap)) ** 2 / slack
            if best[0] is not None and bound >= best[0].cost:
                continue
            ch = data.evaluate(models, classes, np.full(models.size, n), {n: s_idx})
            if ch.violations <= data.p and ch.feasible_time and (best[0] is None or ch.cost < best[0].cost):
                best[0] = ch

    try:
        _blocks(data, k_min, k_max, consider, idx)
    except BuildTimeout:
        pass
    return best[0]


def _blocks(data: Data, k_min: int, k_max: int, consider, idx: list) -> None:
    """Generate the block plans of :func:`block_heuristic` (``idx[0]`` is the
    current data class, read by ``consider``)."""
    S, M = data.S, data.M
    allowed = data.inst.allowed
    for s_idx in range(data.Sig):
        idx[0] = s_idx
        cum, cum_t = cumulative_by_model(data, s_idx)
        for m1 in range(M):
            # one block
            L = shortest_last_block(data, np.full((S, 1), data.l0), np.array([0]), m1, cum_t, k_min, k_max)
            if L[0]:
                consider(np.full(L[0], m1))
            for m2 in range(M):
                if m2 == m1 or not allowed[m1, m2]:
                    continue
                p12 = data.inst.switch_index[(m1, m2)]
                k1 = np.arange(1, k_max)
                pre = data.l0 - cum[:, k1, m1] + data.J[:, k1, p12]
                L = shortest_last_block(data, pre, k1, m2, cum_t, k_min, k_max)
                a: int | np.integer           # numpy integers from k1 here, ints below
                for a, l2 in zip(k1, L):
                    if l2:
                        consider(np.array([m1] * a + [m2] * l2))
                for m3 in range(M):
                    if m3 == m2 or not allowed[m2, m3]:
                        continue
                    p23 = data.inst.switch_index[(m2, m3)]
                    for a in range(1, k_max - 1):
                        if limits.expired():
                            return
                        k2 = np.arange(1, k_max - a)
                        st = a + k2
                        pre = (data.l0 - cum[:, a, m1][:, None] + data.J[:, a, p12][:, None]
                               - (cum[:, st, m2] - cum[:, a, m2][:, None]) + data.J[:, st, p23])
                        L = shortest_last_block(data, pre, st, m3, cum_t, k_min, k_max)
                        for b, l3 in zip(k2, L):
                            if l3:
                                consider(np.array([m1] * a + [m2] * b + [m3] * l3))


def k_max_from_cost(data: Data, ub: float, lams: np.ndarray) -> int:
    """Largest K any plan of cost ≤ ub can have: K·min_j g_j(λ) − λT ≤ ub."""
    best = data.K
    for lam in lams:
        gmin = data.g_min(lam)
        if 0 < gmin < math.inf:
            with np.errstate(over="ignore"):    # λ·Tmax past binary64 (a Tmax of 1e308): no finite bound, skipped
                bound = (ub + lam * data.T) / gmin * (1 + 1e-12) + 1e-9
            if math.isfinite(bound):
                best = min(best, int(math.floor(bound)))
    return max(best, 0)


def dp_max(node, arc, pairs, k_lo: int, k_hi: int) -> np.ndarray:
    """Longest prefix path over the epoch × model graph, lengths k_lo..k_hi.

    Parameters
    ----------
    node : callable k -> ndarray (..., M)
        Weight of training model m at epoch k (0-based).
    arc : callable k -> ndarray (..., P)
        Extra weight of switch pair p entering epoch k.
    pairs : list of (i, j)
        Allowed switches (staying on a model is always allowed).

    Returns
    -------
    ndarray (...)
        The maximum total weight over all paths whose length is in the range.
    """
    best = np.array(node(0), dtype=float)
    top = best.max(axis=-1) if k_lo <= 1 else np.full(best.shape[:-1], -np.inf)
    for k in range(1, k_hi):
        if limits.expired():
            raise BuildTimeout("big-M values (longest-path DP)")
        cand = best.copy()
        if pairs:
            jump = arc(k)
            for p, (i, j) in enumerate(pairs):
                np.maximum(cand[..., j], best[..., i] + jump[..., p], out=cand[..., j])
        best = cand + node(k)
        if k + 1 >= k_lo:
            np.maximum(top, best.max(axis=-1), out=top)
    return top


def tight_bigm(data: Data, k_min: int, k_max: int, ub: float | None, lam: float | None,
                rounds: int = 3) -> np.ndarray:
    """Per-scenario big-M from a Lagrangian longest-path DP (see module doc).

    For μ, ν ≥ 0 and every SAA-feasible plan x with K ∈ [k_min, k_max] and
    exact cost ≤ ub:  ℓ_s(x) ≤ ℓ_s(x) − μ(ℓ̄(x) − ℓmax − δ) − ν(cut(x) − ub),
    because the average-scenario loss ℓ̄ exceeds ℓmax by at most δ (the p
    violated scenarios exceed it by at most their own M_t, the others not at
    all) and the λ cut is a lower bound on the compute cost. The right-hand
    side is a path length, so its maximum over all plans is one DP; the
    minimum over a grid of (μ, ν) is the bound. δ is re-derived from the new
    M values for a few rounds (each round's values are valid by induction).
    """
    S = data.S
    abar = data.a.mean(axis=0)
    Jbar = data.J.mean(axis=0)
    mus = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 8.0])
    if ub is not None and lam is not None:
        gmin = data.g(lam).min(axis=1)  # (M, Σ): cheapest cluster per (model, class)
        nu0 = (data.l0 - data.lmax) / max(ub + lam * data.T, 1e-12)
        nus = nu0 * np.array([0.0, 0.1, 0.3, 1.0, 3.0, 10.0])
        cost_const = ub + lam * data.T
    else:
        gmin = np.zeros((data.M, data.Sig))
        nus = np.array([0.0])
        cost_const = 0.0
    mu = np.repeat(mus, nus.size)
    nu = np.tile(nus, mus.size)
    gams = data.gam

    def crude_node(k):
        # max over classes of −γ·a (the loss rises least with the smallest γ
        # when a ≥ 0; with signed draws take the larger of both extremes)
        ak = data.a[:, k, :]
        return np.maximum(-gams.max() * ak, -gams.min() * ak)

    M_s = data.l0 + dp_max(crude_node, lambda k: data.J[:, k, :], data.pairs, k_min, k_max) - data.lmax
    M_s = np.maximum(M_s, 0.0)

    for _ in range(rounds):
        delta = np.sort(M_s)[S - data.p:].sum() / S if data.p > 0 else 0.0

        def node(k):
            ak = data.a[:, k, :][:, None, :]                       # (S, 1, M)
            base = -ak + mu[None, :, None] * abar[k][None, None, :]  # (S, G, M)
            out = None
            for s_idx, gam in enumerate(gams):
                w = gam * base - nu[None, :, None] * gmin[None, None, :, s_idx]
                out = w if out is None else np.maximum(out, w)
            return out

        def arc(k):
            return data.J[:, k, :][:, None, :] - mu[None, :, None] * Jbar[k][None, None, :]

        const = data.l0 - mu * (data.l0 - data.lmax - delta) + nu * cost_const
        h = const[None, :] + dp_max(node, arc, data.pairs, k_min, k_max)
        new = np.minimum(M_s, np.maximum(h.min(axis=1) - data.lmax, 0.0))
        done = np.allclose(new, M_s, rtol=1e-6, atol=1e-9)
        M_s = new
        if done:
            break
    # round-off margin on the soft rows (hard rows: every such plan has ℓ_s ≤ ℓmax)
    return np.where(M_s > 0, M_s + BIGM_SLACK * (1.0 + abs(data.lmax)), 0.0)


@dataclass
class Bounds:
    k_min: int
    k_max: int
    bigm: np.ndarray | None
    incumbent: Choice | None
    lam: float
    infeasible: str = ""
    seconds: dict = field(default_factory=dict)


def structural_bounds(data: Data, tight: bool = True, bigm: bool = True,
                      heuristic_budget: float = 3.0) -> Bounds:
    """K range, incumbent and big-M values; or the reason the SAA is infeasible.

    The block heuristic gets at most ``heuristic_budget`` seconds (it only
    provides an incumbent; exactness never depends on it).

    Raises
    ------
    BuildTimeout
        When the :mod:`deplbench.limits` deadline passes before the K range is known.
    """
    t0 = time.perf_counter()
    fastest = data.fastest
    if not math.isfinite(fastest):
        return Bounds(0, 0, np.zeros(0), None, 0.0, infeasible=(
            f"no configuration fits Tmax = {data.T:g}: even one epoch of every (model, cluster, data) "
            "choice at full capacity takes longer"))
    # plans longer than Tmax allows at the fastest epoch are never feasible (eqs. (4)–(5))
    # (guarded: a capacity of 1e308 can make the fastest epoch 0 or 1e-300)
    k_time = data.K if fastest * data.K <= data.T else min(data.K, int(math.floor(data.T / fastest * (1 + 1e-12)
                                                                               + 1e-9)))
    reach = min_epochs(data, k_time)
    if data.p >= data.S:
        k_min = 1  # every scenario may exceed ℓmax: the SAA quantile is vacuous
    else:
        k_min = int(np.sort(reach)[::-1][data.p])  # (p+1)-th largest
    if k_min > k_time:
        unreachable = int(np.count_nonzero(reach > data.K))
        if k_time < data.K:
            return Bounds(0, 0, np.zeros(0), None, 0.0, infeasible=(
                f"even the fastest plan misses Tmax: at most {k_time} epochs fit in Tmax = {data.T:g} "
                f"(the fastest epoch at full capacity takes {fastest:.6g}), but with at most that many "
                f"epochs {unreachable} of {data.S} in-sample scenarios stay above ℓmax = {data.lmax:g} "
                f"while at most {data.p} may (the quantile)"))
        return Bounds(0, 0, np.zeros(0), None, 0.0, infeasible=(
            f"no plan of at most K̄ = {data.K} epochs meets the quantile on the scenarios: in "
            f"{unreachable} of {data.S} in-sample scenarios even the most favourable model sequence "
            f"stays above ℓmax = {data.lmax:g}, but at most {data.p} may"))
    k_max = k_time
    t1 = time.perf_counter()
    inc = None
    if tight and heuristic_budget > 0:
        # the heuristic's own budget, within the solve's deadline (nested scopes keep the earlier one)
        with limits.deadline(heuristic_budget if math.isfinite(heuristic_budget) else None):
            inc = block_heuristic(data, k_min, k_max)
    t2 = time.perf_counter()
    lam = data.lam_reference(k_min)
    ub = None
    if inc is not None:
        ub = inc.cost
        lam = inc.alloc.time_price if inc.alloc.time_price > 0 else lam
        k_max = min(k_max, k_max_from_cost(data, ub, data.cut_grid(lam)[::8]))
        k_max = max(k_max, inc.models.size)
    bigm_values = (tight_bigm(data, k_min, k_max, ub, lam if ub is not None else None)
                   if (tight and bigm) else None)
    t3 = time.perf_counter()
    return Bounds(k_min, k_max, bigm_values, inc, lam,
                   seconds={"k_range": t1 - t0, "heuristic": t2 - t1, "bigm": t3 - t2})



__all__ = ["Bounds", "structural_bounds", "tight_bigm", "block_heuristic", "min_epochs",
           "shortest_last_block", "cumulative_by_model", "quantile_ok", "k_max_from_cost", "dp_max"]
