"""Every plan of at most three blocks, exactly: the incumbent, and what the search may skip.

Why
---
The block branch-and-bound of :mod:`.search` prunes against the
incumbent and prices time with the incumbent's λ (the λ-dual cost bound of
the ``general`` module docstring). Without this module its first
incumbents come from DP paths of the group multipliers and from a
depth-first dive, and its bound is the scenario-group Lagrangian bound over
*all* completions. On the cyclic AlexNet (K̄ = 100, ℓmax = 9, S = 1000) that
bound is 1609 at the root against the optimum 1802.63, and it stays there:
the LP behind it (``groups``) mixes cheap infeasible two-block plans
(i21–s25 violates 87 of the 91 scenarios of a group) with dear feasible
three-block plans, and branching on blocks does not stop the mixing below
the branched blocks, so such a search stalls far from the optimum
(docs/performance.md, "Measurements behind design choices").

What
----
1. :func:`block_candidates`: for one data assignment, every sequence of at
   most ``MAX_BLOCKS`` = 3 virtual models the switch graph allows (cycles
   included: v → u → v is a three-block plan) and every choice of all block
   lengths but the last, the shortest SAA-feasible last block — the
   in-sample test of the enumeration formulation
   (:func:`shortest_last_block`, bisection over the length).
   With non-negative improvements only the shortest can be optimal: a
   longer last block, or more blocks after a block at least that long, has
   componentwise larger counts, and F grows with the counts.
2. :func:`seed_incumbent`: two-block plans first (their incumbent caps the
   horizon and prunes the three-block loop), then three; the candidates
   are evaluated exactly with
   :class:`~.leaves.Leaves` (feasible real-x plan, exact
   ``allocate`` cost, a valid lower bound over cluster splits) in
   increasing order of their λ-dual bound maximised over a λ grid
   (:func:`dual_bounds`; every λ ≥ 0 is valid) until that bound reaches the
   incumbent. On the cyclic AlexNet the first candidate is the optimum.
3. :func:`cover`: when that run is *complete* — the enumeration finished,
   improvements are non-negative, evaluation stopped only on the bound, and
   every evaluated plan's exact lower bound reached the incumbent — every
   plan of ≤ 3 blocks of the assignment (and of every assignment using a
   subset of its clusters with the same classes when the left-out clusters
   have β = 0, ``search.covered_blocks``) provably costs at least the
   incumbent, hence at least the final incumbent. The search then skips
   those plans (``BlockSearch.min_blocks`` = 4: no leaf of depth ≤ 3) and
   bounds only completions that make ≥ 4 blocks: the group bound with a
   switch counter (``groups``, item 3 of the proof). The returned
   lower bound stays valid: every plan is covered (cost ≥ incumbent), or in
   a discarded subtree whose bound counted it, or the incumbent.

In effect this branches once on the number of switches (≤ 2: closed by
exact enumeration; ≥ 3: the search with a bound for that branch only), in
the spirit of Luedtke (2014)'s decomposition: what is cheap to solve exactly
is solved exactly, and the relaxation is asked to bound only the rest.

Measured effect: ``perf/general_targets.py``; the numbers are in
docs/performance.md.

Limits: only for non-negative improvement draws (signed draws keep every
block length; the enumeration is still an incumbent heuristic there, never
recorded as coverage), and within the work budgets of ``GeneralSettings``
(``enumeration_steps``, ``enumeration_steps_total``); an assignment left
uncovered keeps the group bound over all completions.

References
----------
DepL paper eqs. (2)–(6); the enumeration formulation (``enumeration.py``)
for the shortest-last-block rule; J. Luedtke, S. Ahmed, SIAM J. Optim. 19
(2008) (the SAA test); J. Luedtke, Math. Prog. 146 (2014) 219–244; S.
Ahmed, J. Luedtke, Y. Song, W. Xie, Math. Prog. 162 (2017) 51–81.
"""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import numpy as np

from deplbench import limits
from deplbench.formulations.general.search import (
    BlockSearch,
    config_key,
    covered_blocks,
)
from deplbench.formulations.model.last_block import shortest_last_block

#: Blocks per enumerated plan by default (``GeneralSettings.max_blocks``; three covers the
#: realistic families' optima).
MAX_BLOCKS = 3
#: Time prices (relative to the search's λ) of the candidates' cost bound.
LAMBDA_GRID = 1.07 ** np.arange(-40, 41)


def _virtual_cum(prob, search) -> np.ndarray:
    """Cumulative improvement per virtual model, laid out (nv, kmax+1, S)."""
    K = search.kmax
    cum = prob.cumA[:, :K + 1, :]                                  # (S, K+1, M)
    out = cum[:, :, search.vm] * search.vgamma[None, None, :]      # (S, K+1, nv)
    return np.ascontiguousarray(out.transpose(2, 1, 0))


class Steps:
    """A work budget in units (one last-block search or one exact leaf evaluation each)."""

    __slots__ = ("left", "used")

    def __init__(self, left: float):
        self.left, self.used = left, 0

    def take(self) -> bool:
        """Spend one unit; False (nothing spent) when the budget is exhausted."""
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


def block_candidates(prob, search, max_blocks: int = MAX_BLOCKS, ub: float = math.inf,
                     steps: Steps | None = None):
    """SAA-feasible plans of at most ``max_blocks`` blocks with the shortest last block.

    Parameters
    ----------
    prob : search.Problem
    search : search.BlockSearch
        Gives the virtual models, their successors, weights and ``kmax``.
    max_blocks : int
        1, 2 or 3.
    ub : float
        Plans whose λ-dual lower bound W + const reaches this are skipped.
    steps : Steps, optional
        Work budget: one unit per last-block search; exhausted, the
        enumeration stops unfinished (deterministically, unlike the time limit).

    Returns
    -------
    ndarray (C, 6) of int
        One plan per row: virtual models (v1, v2, v3) and lengths (n1, n2,
        n3), −1 / 0 for absent blocks.
    bool
        Whether the enumeration finished (False: ``steps`` or the time limit stopped it).
    """
    P, s = prob, search
    K, S = s.kmax, P.S
    wmin = float(s.w.min())
    if math.isfinite(ub) and wmin > 0:
        # longer plans have W + const > ub, so they cannot beat (or tie) the incumbent
        K = min(K, int(math.floor((ub - s.const) / wmin * (1 + 1e-9) + 1e-9)))
    rows: list = []
    steps = steps if steps is not None else Steps(math.inf)
    if K < 1:
        return np.zeros((0, 6), dtype=np.int64), True
    cum_t = _virtual_cum(P, s)
    data = SimpleNamespace(lmax=P.lmax, p=P.p, nonneg=P.nonneg)

    def add(vs, n1, n2, n3):
        # vectorised over the last arrays; keeps plans whose λ-dual bound is below ub
        n1, n2, n3 = np.broadcast_arrays(np.asarray(n1), np.asarray(n2), np.asarray(n3))
        w = [s.w[v] if v >= 0 else 0.0 for v in vs]
        lb = n1 * w[0] + n2 * w[1] + n3 * w[2] + s.const
        keep = (n1 > 0) & ((n2 > 0) | (vs[1] < 0)) & ((n3 > 0) | (vs[2] < 0)) & (lb < ub)
        if keep.any():
            m = int(keep.sum())
            rows.append(np.column_stack([np.full(m, vs[0]), np.full(m, vs[1]), np.full(m, vs[2]),
                                         n1[keep], n2[keep], n3[keep]]))

    def last(pre, start, v):
        steps.take()
        return shortest_last_block(data, pre, start, v, cum_t, 1, K)

    def done(finished):
        out = np.concatenate(rows).astype(np.int64) if rows else np.zeros((0, 6), dtype=np.int64)
        return out, finished

    for v1 in range(s.nv):
        if steps.left <= 0 or limits.expired():
            return done(False)
        L = last(np.full((S, 1), P.l0), np.array([0]), v1)
        add((v1, -1, -1), L, 0, 0)
        if max_blocks < 2:
            continue
        for v2, p12 in s.succ[v1]:
            a = np.arange(1, K)
            if a.size == 0:
                continue
            pre = P.l0 - (cum_t[v1][a] - cum_t[v1][0]).T
            if p12 >= 0:
                pre = pre + P.J[:, a, p12]
            if steps.left <= 0:
                return done(False)
            add((v1, v2, -1), a, last(pre, a, v2), 0)
            if max_blocks < 3:
                continue
            for v3, p23 in s.succ[v2]:
                for ai in range(1, K - 1):
                    if steps.left <= 0 or limits.expired():
                        return done(False)
                    # prefix weight already at the bound: longer first blocks only cost more
                    if ai * s.w[v1] + s.w[v2] + s.w[v3] + s.const >= ub:
                        break
                    b = np.arange(1, K - ai)
                    st = ai + b
                    pre = (P.l0 - (cum_t[v1][ai] - cum_t[v1][0]))[:, None] - (cum_t[v2][st] - cum_t[v2][ai]).T
                    if p12 >= 0:
                        pre = pre + P.J[:, ai, p12][:, None]
                    if p23 >= 0:
                        pre = pre + P.J[:, st, p23]
                    add((v1, v2, v3), ai, b, last(pre, st, v3))
    return done(True)


def _sequence(row) -> np.ndarray:
    """The virtual-model sequence of one :func:`block_candidates` row."""
    vs, ns = row[:3], row[3:]
    keep = vs >= 0
    return np.repeat(vs[keep], ns[keep])


def dual_bounds(prob, search, counts: np.ndarray) -> np.ndarray:
    """max over a λ grid of the λ-dual cost bound Σ_v w_v(λ) n_v − λT (+ β) per count row.

    Every λ ≥ 0 gives a valid lower bound on the real-x cost (``general``
    module docstring, item 3), so the maximum over any grid does; a grid of
    ratio 1.07 around the search's λ makes it close to the continuous-split
    optimum, which orders the candidates almost by their exact cost.
    """
    P, cfg = prob, search.cfg
    best = counts @ search.w + search.const
    for lam in search.lam * LAMBDA_GRID:
        wm = P.weights(cfg, lam)
        w = np.array([min(wm[m, i] for i in cfg.groups[g]) for m, g in zip(search.vm, search.vg)])
        const = P.dual_constant(cfg, lam)
        np.maximum(best, counts @ w + const, out=best)
    return best


def seed_incumbent(prob, search, leaves, tol: float, max_blocks: int = MAX_BLOCKS,
                   steps: Steps | None = None) -> dict:
    """Evaluate the ≤ ``max_blocks``-block plans of ``search``'s assignment exactly.

    Candidates are evaluated in increasing order of their λ-dual lower bound
    (:func:`dual_bounds`) until it reaches the incumbent
    (``leaves.best_cost``); ``leaves`` keeps the best plan and its time price.
    ``steps`` (default unlimited) budgets the work: one unit per last-block
    search and per evaluation.

    Returns
    -------
    dict
        Diagnostics: ``candidates``, ``evaluated``, ``seconds``, ``cost`` and
        ``complete``: True when every plan of at most ``max_blocks`` blocks
        (and at most ``search.kmax`` epochs) provably costs at least the
        incumbent — the enumeration finished, improvements are non-negative
        (the shortest-last-block rule), evaluation stopped only because the
        bound reached the incumbent, and every evaluated plan's exact lower
        bound (``Leaves.evaluate``) reached it too.
    """
    t0 = time.perf_counter()
    steps = steps if steps is not None else Steps(math.inf)
    done = 0
    exact_lbs: list = []
    stopped = finished = False
    n_rows = 0
    # two blocks first (cheap): their incumbent caps the horizon and prunes the three-block loop
    for blocks in sorted({min(2, max_blocks), max_blocks}):
        rows, finished = block_candidates(prob, search, blocks, ub=leaves.best_cost, steps=steps)
        n_rows += rows.shape[0]
        counts = np.zeros((rows.shape[0], search.nv))
        for j in range(3):
            has = rows[:, j] >= 0
            np.add.at(counts, (np.nonzero(has)[0], rows[has, j]), rows[has, 3 + j])
        lbs = dual_bounds(prob, search, counts)
        for i in np.argsort(lbs, kind="stable"):
            lb, vseq = float(lbs[i]), _sequence(rows[i])
            best = leaves.best_cost
            # no tolerance here: the plans left out must cost at least the incumbent
            if math.isfinite(best) and lb >= best:
                break
            if limits.expired() or not steps.take():
                stopped = True
                break
            exact_lbs.append(leaves.evaluate(search, vseq, tol)[0])
            done += 1
        if stopped or not finished:
            break
    best = leaves.best_cost
    complete = (finished and not stopped and bool(prob.nonneg)
                and all(b >= best * (1 - 1e-12) - 1e-12 for b in exact_lbs))
    return {"candidates": n_rows, "evaluated": done, "steps": steps.used,
            "seconds": time.perf_counter() - t0, "cost": best, "complete": complete}


def seed_root(prob, cfg, leaves, lam: float, tol: float, kmax_of) -> dict:
    """:func:`cover` on a leaf configuration ``cfg`` at time price ``lam``
    (``kmax_of`` is ``boxes.horizon_cap``: the most epochs Tmax allows)."""
    k0 = kmax_of(prob, prob.weights(cfg, lam), prob.tmin(cfg), -lam * prob.T, math.inf)
    if k0 < 1:
        return {"candidates": 0, "evaluated": 0, "seconds": 0.0, "cost": leaves.best_cost, "complete": False}
    return cover(prob, BlockSearch(prob, cfg, lam, k0, 1.0), leaves, tol)


def cover(prob, search, leaves, tol: float) -> dict:
    """:func:`seed_incumbent` on ``search``'s assignment, once; when complete, record it.

    The time limit (:mod:`deplbench.limits`) is the solve's outer stop. The work is budgeted in units
    (``GeneralSettings.enumeration_steps`` per run,
    ``enumeration_steps_total`` for all runs together), so whether a run
    completes does not depend on the machine. An assignment inside a covered one (``search.covered_blocks``)
    is not enumerated again.

    A complete run proves that every plan of this assignment with at most
    ``max_blocks`` blocks costs at least the incumbent (so at least the final
    one), hence ``prob.covered[config_key] = max_blocks + 1`` and
    ``search.min_blocks`` is raised: the search's bounds then count only
    completions making a plan of ≥ MAX_BLOCKS + 1 blocks (the block-counting
    group bound of ``groups``), and it skips the covered leaves.
    """
    opts = prob.settings
    if not opts.short_plans:
        return {"complete": False, "skipped": "disabled"}
    if not prob.allows(search.cfg):
        # the data rule (6) forbids this configuration: recording it as covered would
        # wrongly cover its sub-assignments (search.covered_blocks)
        return {"complete": False, "skipped": "data rule"}
    key = config_key(search.cfg)
    known = covered_blocks(prob, search.cfg)
    if known > 1 or key in prob.tried:
        search.min_blocks = max(search.min_blocks, known)
        return {"complete": known > 1, "skipped": "seen"}
    left = opts.enumeration_steps_total - prob.cover_spent
    if left <= 0:
        return {"complete": False, "skipped": "budget"}
    prob.tried.add(key)
    steps = Steps(min(opts.enumeration_steps, left))
    out = seed_incumbent(prob, search, leaves, tol, opts.max_blocks, steps=steps)
    prob.cover_spent += steps.used
    if out["complete"]:
        prob.covered_beta[key] = tuple(float(b) for b in search.cfg.beta)
        prob.covered[key] = opts.max_blocks + 1
        search.min_blocks = opts.max_blocks + 1
    prob.cover_log.append(out)
    return out


__all__ = [
    "MAX_BLOCKS",
    "Steps",
    "block_candidates",
    "cover",
    "dual_bounds",
    "seed_incumbent",
    "seed_root",
]
