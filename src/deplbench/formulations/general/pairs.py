"""Two γ-groups without enumerating interleavings: the ``general`` search over model blocks.

Why
---
When an assignment's used clusters hold classes with two different learning
multipliers γ_hi > γ_lo (two γ-groups, e.g. the two clusters of the
|D| = 10 datasets instance with different classes), the block search of
:class:`~.search.BlockSearch` branches on *virtual* models
(model, γ-group). Moving between the two groups on the same model is free
(no switch jump), so it enumerates every interleaving of the two clusters'
epochs: one such assignment took 20–35 k nodes (``classes``
docstring). Yet the cost of eqs. (2), (4), (5) depends on the epoch counts
only, not on their order.

What this module does
---------------------
:class:`PairSearch` branches on *model* blocks: a maximal run of one model
m over epochs k..k+ℓ−1 with j of them on the γ_hi group and ℓ − j on the
γ_lo group, without fixing which. Each plan lies in exactly one such
sequence of blocks (consecutive blocks change model, so they pay a switch
jump, eq. (3) and Sec. III).

*Optimistic placement (the relaxation).* For scenario s the block lowers the
loss by γ_lo·Σ a_s + (γ_hi − γ_lo)·Σ_{j chosen epochs} a_s, which is largest
when the γ_hi epochs are the j largest draws of the block in *that*
scenario (rearrangement inequality). Every interleaving with these counts
has, scenario by scenario, a loss at least this optimistic one, so
every bound of :class:`BlockSearch` evaluated at the optimistic losses is a
valid bound for all of them (each bound is non-decreasing in the losses).
With non-negative improvement draws the optimistic loss falls when either
count grows (one more epoch in the block: keep the old placement and add
the new epoch to either group), and so does the real-x cost F grow, so a
last block needs only its Pareto-minimal feasible counts, the
two-dimensional form of the enumeration formulation's shortest-last-block
rule.

*Leaves are realised, not assumed.* A relaxed leaf whose optimistic losses
meet the quantile fixes the counts, hence the exact cost, but not the
order. :func:`.placement.realise` tries two guesses (each block's
γ_hi epochs on the epochs that help the most critical scenarios, then on
the earliest epochs), then the exact placement search
:func:`.placement.place`, and hands the first SAA-feasible order to
the exact leaf evaluation. Three outcomes:

* an order is found: the leaf is a plan, costed exactly;
* no order exists (proved): the cell is infeasible after all, so it
  becomes an inner child (another block may follow) and the cells above
  it in the same block become candidate leaves in turn
  (``diagnostics["unplaceable_cells"]``);
* undecided (the placement search kept more than
  ``GeneralSettings.max_placements`` partial placements at one level):
  the leaf keeps its bound, the λ-dual of its counts
  (``leaves.Leaves.counts_bound``), valid for every order and for
  every cell above it; the search's lower bound includes it, so it can only
  widen the reported gap, never fake optimality
  (``diagnostics["unrealised_leaves"]``).

*The other bounds.* A completion after a model block must switch model
first, so the group bound of ``groups`` is taken over those
completions only (``_forced_table``). When every switch out of the block's
model leads to a terminal model, the completion is one block, and its
per-scenario cheapest cell is found exactly (``last_block_bound``); the
(p+1)-th largest of these bounds it. Cells whose linear weight already
reaches the incumbent are not formed; their bound is recorded.

Measured (|D| = 10 datasets instance, S = 200): docs/performance.md and
``perf/general_targets.py``.

References
----------
DepL paper eqs. (2)–(6), Sec. III; J. Luedtke, Math. Prog. 146 (2014)
219–244; G. H. Hardy, J. E. Littlewood, G. Pólya, *Inequalities* (1934),
Thm. 368 (rearrangement inequality).
"""

from __future__ import annotations

import math

import numpy as np

from deplbench.formulations.general.caches import ArrayCache, problem_cache
from deplbench.formulations.general.cells import block_cells, block_sums, cell_index
from deplbench.formulations.general.minplus import largest_decrease
from deplbench.formulations.general.node_groups import combined_bound, node_tuner, tune_children
from deplbench.formulations.general.placement import placements, realise, sequence
from deplbench.formulations.general.search import (
    BlockSearch,
    SearchStats,
    depth_first,
    order_invariant,
    prunable,
)
from deplbench.formulations.model.scenarios import loss_threshold

#: Largest gain table of one block start (bounded by S·K̄·(K̄+1) floats) for which PairSearch is used.
PAIR_TABLE_BYTES = 64 * 2**20
#: Largest last-block table per terminal model (about S·K̄³/6 floats); beyond it
#: ``last_block_bound`` is not used (the group bound alone, weaker and still valid).
LAST_TABLE_BYTES = 256 * 2**20
#: Bytes one PairSearch may keep of its optimistic gain tables (``_gains``), oldest dropped first.
GAIN_CACHE_BYTES = 96 * 2**20
#: Need lowered by this before the shifted searchsorted of ``last_block_bound`` (covers rounding).
SHIFT_SLACK = 1e-9
#: Bytes the per-problem largest-decrease tables (``PairSearch.Dn``) may keep.
DECREASE_CACHE_BYTES = 64 * 2**20
#: Scenarios (of largest prefix loss) that screen candidates in ``last_block_bound``:
#: at least SCREEN, and SCREEN_PER_VIOLATION·(p + 1) (the screen takes the (p+1)-th largest).
SCREEN = 16
SCREEN_PER_VIOLATION = 2


def pair_applies(prob, cfg) -> bool:
    """True when :class:`PairSearch` is exact for ``cfg`` and its tables fit.

    Two γ-groups with γ ≥ 0 and non-negative draws (the rearrangement
    argument and the monotone cells of the module docstring need both), real
    classes (leaves are costed), and not the order-invariant structure
    (there :class:`BlockSearch` keeps only increasing virtual-model orders
    and its tables, which PairSearch reuses, cover only those). The gain
    table of one block start, S·K̄(K̄+3)/2 floats (checked as S·K̄·(K̄+1)), must fit
    ``PAIR_TABLE_BYTES``; otherwise the interleaving search is used.
    """
    return (len(cfg.groups) == 2 and cfg.gamma[cfg.groups[0][0]] >= cfg.gamma[cfg.groups[1][0]]
            and bool(prob.nonneg) and bool(np.all(np.asarray(cfg.gamma) >= 0))
            and all(c is not None for c in cfg.classes) and not order_invariant(prob)
            and 8 * prob.S * prob.K * (prob.K + 1) <= PAIR_TABLE_BYTES)


class PairSearch(BlockSearch):
    """Depth-first search over model blocks (model, #γ_hi epochs, #γ_lo epochs).

    Same constructor and bounds as :class:`BlockSearch`; the group order of
    ``Config`` puts the larger γ first (group 0). Plans of few blocks that
    ``incumbent.cover`` evaluated are not skipped here (their block
    count in this search differs), so ``min_blocks`` stays 1: every bound
    counts every completion.
    """

    def __init__(self, prob, cfg, lam, kmax, mu_ref):
        super().__init__(prob, cfg, lam, kmax, mu_ref)
        if (len(cfg.groups) != 2 or not prob.nonneg or not np.all(np.asarray(cfg.gamma) >= 0)
                or order_invariant(prob) or self.vgamma[0] < self.vgamma[1]):
            raise ValueError("cfg: PairSearch needs exactly two γ-groups with γ ≥ 0, the larger first, "
                             "non-negative improvement draws and an order-dependent loss")
        self.gamma_hi, self.gamma_lo = float(self.vgamma[0]), float(self.vgamma[1])
        self.w_hi = self.w[0::2].copy()          # (M,): virtual model v = 2m + g
        self.w_lo = self.w[1::2].copy()
        self._forced = None      # the group tables with a switch forced first, built on first use
        self._last_cache: dict = {}        # per terminal model: last_block_bound's tables
        self._dn = None
        self._gain_cache = ArrayCache(GAIN_CACHE_BYTES)     # (start, model) -> _gains table
        # models whose blocks end every plan (no allowed switch out of them)
        #: per model, the models an allowed switch leads to (a block is followed by another model)
        self.next_models = [[u for u in range(prob.M) if u != m and prob.allowed[m, u]] for m in range(prob.M)]
        self.terminal = np.array([not nxt for nxt in self.next_models])
        # models every switch out of which leads to a terminal model (one block left after them);
        # none when the last-block tables would not fit LAST_TABLE_BYTES
        K = self.kmax
        fits = 8 * prob.S * (K * (K + 1) * (K + 5) // 6) <= LAST_TABLE_BYTES
        self.last_only = fits & np.array([(not self.terminal[m]) and all(self.terminal[u] for u in self.next_models[m])
                                          for m in range(prob.M)])

    # the covered short plans are counted in virtual blocks: not usable here
    @property
    def min_blocks(self) -> int:
        return 1

    @min_blocks.setter
    def min_blocks(self, value) -> None:
        pass

    # -------------------------------------------------------------- bounds
    def _forced_table(self) -> np.ndarray:
        """V^π_f(k, m) (K+1, M, R): the group DP's completions from a model block of m
        that ends before epoch k, i.e. that stop or *switch* model first.

        A model block is maximal, so its completion cannot continue with m on
        either group; ``GroupTables.V`` allows that (it is the completion set of
        a virtual model), this one does not: one more DP step over the
        successors u with m → model(u) an allowed switch (eq. (3)'s jump paid),
        on the pool's π-aggregated draws. Valid by the proof of
        ``groups`` (a minimum over a subset of completions).
        """
        if self._forced is not None:
            return self._forced
        P, T = self.prob, self.groups
        K = self.kmax
        R = T.Pi.shape[0]
        a, J = T._a, T._J                                        # (R, K, M), (R, K, P)
        Vf = np.zeros((K + 1, P.M, R))
        for k in range(K):
            enter = self.w[None, :] - self.vgamma[None, :] * a[:, k, self.vm] + T.V[k + 1].T    # (R, nv)
            for m in range(P.M):
                best = np.zeros(R)
                for u in range(self.nv):
                    mu_ = int(self.vm[u])
                    if mu_ not in self.next_models[m]:
                        continue
                    np.minimum(best, enter[:, u] + J[:, k, P.switch_index[(m, mu_)]], out=best)
                Vf[k, m] = best
        self._forced = np.ascontiguousarray(Vf)
        return self._forced

    def pool_values(self, k: np.ndarray, v, need: int = 0) -> np.ndarray:
        """V^π of every pool row over the completions that switch model first (``_forced_table``)."""
        return self._forced_table()[k, self.vm[v], :]

    def _node_virtual(self, last: int) -> int:
        # a node holds its last block's model m; the bounds are read at virtual model 2m
        return 2 * int(last)

    def completion_bound(self, k: np.ndarray, v: int, L: np.ndarray, skip=None, need: int = 0,
                         tuned=()) -> np.ndarray:
        """Group bound over completions that switch model first (``_forced_table``),
        plus the unreachable-scenario test of :meth:`BlockSearch.completion_bound`;
        without group tables, the inherited bound. ``v`` is a virtual model of the
        block's model; ``tuned``: rows re-tuned at ancestors (``node_groups``)."""
        if self.groups is None:
            return super().completion_bound(k, v, L, skip, need)
        return self.mark_unreachable(combined_bound(self, k, v, L, 0, tuned, skip), k, v, L, skip)

    def root_bound(self, cutoff: float = math.inf) -> float:
        """The group bound of every plan of the assignment (:meth:`BlockSearch.root_bound`
        without the per-scenario tables, whose bound the search does not use)."""
        if self.groups is None:
            return super().root_bound(cutoff)
        if self.kmax < 1:
            return math.inf
        return self.groups.root(0) + self.const

    @property
    def Dn(self) -> np.ndarray:
        """(kmax+1, S, nv): the largest loss decrease any completion from (k, v) can
        make, per scenario (``minplus.largest_decrease``), without the μ
        tables of :meth:`BlockSearch._table`, which this search does not use.

        With a ≥ 0 and γ_hi ≥ γ_lo the most negative completion puts every epoch
        on γ_hi (the relaxation allows j = ℓ), and both groups of a model have the
        same successors and jumps, so the table depends on γ_hi and kmax only
        (bit for bit: rounding is monotone). It is kept on the problem under
        that key (|D| = 10 seed 2: 33 distinct keys in 349 searches), within
        ``DECREASE_CACHE_BYTES``, oldest dropped first.
        """
        if self._dn is None:
            cache = problem_cache(self.prob, "_pair_decrease", DECREASE_CACHE_BYTES)
            key = (self.gamma_hi, self.kmax)
            self._dn = cache.get(key)
            if self._dn is None:
                self._dn = largest_decrease(self)
                self._dn.setflags(write=False)          # shared by every search with this key
                cache[key] = self._dn
        return self._dn

    # ----------------------------------------------------------- one block
    def _gains(self, k: int, m: int, maxlen: int | None = None) -> np.ndarray:
        """Optimistic loss decrease of every cell (ℓ, j) of a block of model m from epoch k.

        (S, n): the cells of :func:`block_cells` (``maxlen``), maxlen ≤ kmax − k
        (default: kmax − k): γ_lo·Σ a + (γ_hi − γ_lo)·(the j largest a of the
        block), scenario by scenario (module docstring).
        """
        maxlen = self.kmax - k if maxlen is None else maxlen
        n = cell_index(maxlen, 0)
        hit = self._gain_cache.get((k, m))
        if hit is not None and hit.shape[1] >= n:
            # the same elementwise sums as below, so a prefix of a longer table is bit-identical
            return hit[:, :n]
        total, top = block_sums(self.prob, k, m)
        G = self._gain(total[:, :n], top[:, :n])
        # a search meets the same (start, model) at about 4 nodes (|D| = 6 datasets, S = 200)
        self._gain_cache[(k, m)] = G
        return G

    def _gain(self, total: np.ndarray, top: np.ndarray) -> np.ndarray:
        """γ_lo·Σ a + (γ_hi − γ_lo)·(the j largest a), elementwise (``block_sums``' arrays)."""
        return self.gamma_lo * total + (self.gamma_hi - self.gamma_lo) * top

    def _block(self, k: int, m: int, pre: np.ndarray, maxlen: int) -> np.ndarray:
        """Optimistic losses (S, n) of every cell (ℓ, j) of :func:`block_cells` (``maxlen``)
        of a block of m from epoch k after prefix losses ``pre``."""
        return pre[:, None] - self._gains(k, m, maxlen)

    def _last_tables(self, u: int, starts, rows=None) -> dict:
        """Per terminal model u, one sorted array holding, for every filled row (start k',
        scenario s), the running maximum of the block's optimistic gains over its cells
        (ℓ, j) sorted by linear weight. Rows are filled as the starts ``starts`` and
        scenarios ``rows`` (None: all) are first needed — the screen of
        ``last_block_bound`` reads a few scenarios and almost never the rest — and
        appended in that order: the row in slot i is shifted by i·span, so the
        whole array stays sorted and one searchsorted answers every (child,
        scenario) query of a node. Only filled rows are stored."""
        P = self.prob
        T = self._last_cache.get(u)
        if T is None:
            K = self.kmax
            gmax = max(self.gamma_hi, self.gamma_lo) * float(P.cumA[:, -1, u].max()) + 1.0
            ncell = np.array([(K - k) * (K - k + 3) // 2 for k in range(K + 1)], dtype=np.int64)
            T = {"ncell": ncell, "wpos0": np.concatenate([[0], np.cumsum(ncell)]), "span": 2.0 * gmax + 1.0,
                 "gmax": gmax, "weight": np.full(int(ncell.sum()), np.inf), "cells": {},
                 "slot": np.full((K + 1, P.S), -1, dtype=np.int64),     # (k', s) -> slot, −1: not filled
                 "first": np.zeros(64, dtype=np.int64),                  # slot -> its first position
                 "flat": np.empty(min(1024, int(P.S * ncell.sum()))), "used": 0, "slots": 0,
                 "cap": int(P.S * ncell.sum())}
            self._last_cache[u] = T
        srows = np.arange(P.S) if rows is None else np.asarray(rows)
        for k in (int(x) for x in starts):
            if k >= self.kmax:
                continue
            todo = srows[T["slot"][k, srows] < 0]
            if todo.size == 0:
                continue
            if k not in T["cells"]:
                ll, jj = block_cells(self.kmax - k)
                weight = jj * self.w_hi[u] + (ll + 1 - jj) * self.w_lo[u]
                order = np.argsort(weight, kind="stable")
                T["cells"][k] = order
                T["weight"][T["wpos0"][k]:T["wpos0"][k + 1]] = weight[order]
            order = T["cells"][k]
            # the _gains entries (the same elementwise sums as _gain), in weight order,
            # written straight into the table's next rows
            total, top = block_sums(P, k, u)
            slots, Mx = _new_rows(T, todo.size, order.size)                           # (rows, C) view
            # (rows first, then cells: twice as fast as one two-dimensional fancy index)
            np.multiply(self.gamma_lo, np.take(total[todo], order, axis=1), out=Mx)
            Mx += (self.gamma_hi - self.gamma_lo) * np.take(top[todo], order, axis=1)
            np.maximum.accumulate(Mx, axis=1, out=Mx)                                 # non-decreasing
            Mx += (slots * T["span"])[:, None]
            T["slot"][k, todo] = slots
        return T

    def last_block_bound(self, kc: np.ndarray, m: int, L: np.ndarray, cut=None) -> np.ndarray:
        """Bound on completions that are exactly one block of a terminal successor of m.

        ``kc`` (C,) epochs done per candidate, ``L`` (S, C) prefix losses after a
        block of m. A completion that is one block of u must satisfy at least
        S − p scenarios, and satisfying scenario s needs a cell whose optimistic
        gain reaches L_s + jump − ℓmax; the cheapest such cell (by linear
        weight) per scenario is found on the running maximum of the
        weight-sorted gains, and the (p+1)-th largest of these per-scenario
        minima bounds the completion's weight (Luedtke 2014's single-scenario
        subproblems, here solved exactly because the completion is one block).
        The minimum over the successors u bounds the completion. Returns (C,)
        (+∞: none).

        ``cut`` (C,), optional: values at which a candidate is pruned. The
        bound is then first computed on the ``SCREEN`` (at least
        ``SCREEN_PER_VIOLATION``·(p + 1)) scenarios of largest
        loss only — the (p+1)-th largest over a subset of scenarios is at most
        the one over all, so that screen is a valid (weaker) bound — and on
        all scenarios only for the candidates the screen leaves below ``cut``.
        """
        screen = max(SCREEN, SCREEN_PER_VIOLATION * (self.prob.p + 1))
        if cut is not None and self.prob.S > 2 * screen:
            rows = np.argsort(-L.max(axis=1), kind="stable")[:screen]
            out = self._last_block_bound(kc, m, L, rows)
            rest = np.nonzero(out < cut)[0]
            if rest.size:
                out[rest] = self._last_block_bound(kc[rest], m, L[:, rest], None)
            return out
        return self._last_block_bound(kc, m, L, None)

    def _last_block_bound(self, kc: np.ndarray, m: int, L: np.ndarray, rows) -> np.ndarray:
        """:meth:`last_block_bound` over the scenarios ``rows`` (None: all)."""
        P = self.prob
        C = L.shape[1]
        srows = np.arange(P.S) if rows is None else np.asarray(rows)
        nrow = srows.size
        # the (p+1)-th largest over the rows: over a subset this is never above the full one
        q_at = nrow - P.p - 1
        best = np.full(C, np.inf)
        live = kc < self.kmax
        if not live.any():
            return best
        kc_l, L_l = kc[live], L[:, live]
        out = np.full(kc_l.size, np.inf)
        for u in self.next_models[m]:
            T = self._last_tables(u, np.unique(kc_l), rows)
            need = (L_l[srows] + P.J[srows][:, kc_l, P.switch_index[(m, u)]]
                    - loss_threshold(P.lmax))                                                    # (rows, C')
            # table and query add the same shift (same integer times the same float) and
            # rounding to nearest is monotone, so a cell can only be found earlier (cheaper);
            # SHIFT_SLACK lowers the need further, which can only lower the bound
            slot = T["slot"][kc_l[None, :], srows[:, None]]                                # (rows, C'), filled
            q = np.clip(need - SHIFT_SLACK, -1.0, T["gmax"]) + slot * T["span"]
            idx = np.searchsorted(T["flat"][:T["used"]], q.ravel(), side="left").reshape(q.shape)
            cell = idx - T["first"][slot]
            ok = cell < T["ncell"][kc_l][None, :]
            per = np.where(ok, T["weight"][np.where(ok, T["wpos0"][kc_l][None, :] + cell, 0)], np.inf)
            if q_at < 0:
                q_p = np.zeros(per.shape[1])    # fewer rows than p + 1: no bound from them
            else:
                q_p = np.partition(per, q_at, axis=0)[q_at]
            np.minimum(out, q_p, out=out)
        best[live] = out
        return best

    # ------------------------------------------------------------- search
    def _leaves(self, m: int, k: int, seq: tuple, losses: np.ndarray, feas: np.ndarray, Wl: np.ndarray,
                stats: SearchStats, prune_tol: float, on_leaf, leaf_bound, bound_only: bool) -> np.ndarray:
        """The leaves of one model block: its Pareto-minimal feasible cells (n_hi = j, n_lo = ℓ − j:
        neither one fewer γ_hi epoch (ℓ−1, j−1) nor one fewer γ_lo epoch (ℓ−1, j) is feasible),
        realised and evaluated; returns the cells proved to have no feasible order (``dead``).
        Sets ``stats.aborted`` when the caller asked for a restart."""
        dead = np.zeros_like(feas)       # relaxed-feasible, but no placement is (proved)
        seen = np.zeros_like(feas)
        while True:
            ok = feas & ~dead
            fewer_hi = np.zeros_like(ok)
            fewer_hi[1:, 1:] = ok[:-1, :-1]
            fewer_lo = np.zeros_like(ok)
            fewer_lo[1:, :] = ok[:-1, :]
            leaf = ok & ~fewer_hi & ~fewer_lo & ~seen
            if not leaf.any():
                break
            seen |= leaf
            for li, j in zip(*np.nonzero(leaf)):
                lb_leaf = float(Wl[li, j]) + self.const
                if prunable(lb_leaf, stats.ub, prune_tol):
                    stats.discard(lb_leaf)
                    continue
                stats.leaves += 1
                if bound_only:
                    # a box corner: its leaves are no plans, only bounds on the box's
                    stats.discard(lb_leaf)
                    continue
                full = seq + ((m, k, int(j), int(li) + 1),)
                vseq, decided = realise(self, full, losses[:, cell_index(li, j)])
                if vseq is None and decided:
                    # no order of these counts meets the quantile: an infeasible
                    # cell, so the cells above it and its continuations are searched
                    dead[li, j] = True
                    stats.dead += 1
                    continue
                if vseq is None:
                    # undecided: its bound holds for it and for every cell above it
                    stats.unrealised += 1
                    pick = placements(self, full, losses[:, cell_index(li, j)])[0]
                    lb_u = lb_leaf if leaf_bound is None else max(
                        lb_leaf, leaf_bound(sequence(self, full, pick)))
                    stats.discard(lb_u)
                    continue
                lb_exact, ub_new = on_leaf(vseq)
                stats.discard(lb_exact)
                stats.ub = min(stats.ub, ub_new)
                if self.abort:
                    stats.aborted = True
                    return dead
        return dead

    def run(self, ub: float, prune_tol: float, on_leaf, nodes_left: float = math.inf,
            leaf_bound=None, bound_only: bool = False) -> SearchStats:
        """Depth-first search over model blocks; same contract as :meth:`BlockSearch.run`.

        ``leaf_bound(vseq) -> float``: a lower bound on the cost of the
        counts of ``vseq`` whatever their order (used for unrealised leaves;
        default: the linear weight of the counts, valid at any λ).
        """
        P = self.prob
        tuner = node_tuner(self)

        def expand(node, stats):
            bound, k, m_last, L, W, seq, tuned = node

            def thr():
                return stats.threshold(prune_tol)

            children: list = []
            maxlen = self.kmax - k
            if maxlen <= 0:
                return children
            nxt = range(P.M) if m_last < 0 else self.next_models[m_last]
            for m in nxt:
                # cells of linear weight at or above the threshold can be neither leaves nor
                # inner children (both are pruned on that weight): only shorter blocks are formed
                wmin = min(float(self.w_hi[m]), float(self.w_lo[m]))
                room = thr() - self.const - W
                span = maxlen if wmin <= 0 or not math.isfinite(room) else min(maxlen, int(math.floor(room / wmin)))
                if span < maxlen:
                    # the longer blocks are not formed: their bound is what discards them
                    stats.discard(W + (span + 1) * wmin + self.const)
                if span < 1:
                    continue
                jj = np.arange(span + 1)[None, :]
                ll = np.arange(1, span + 1)[:, None]
                valid = jj <= ll                                               # (span, span+1)
                pre = L + P.J[:, k, P.switch_index[(m_last, m)]] if m_last >= 0 else L
                losses = self._block(k, m, pre, span)                         # (S, cells)
                feas = np.zeros(valid.shape, bool)                             # (ℓ, j)
                feas[valid] = np.count_nonzero(losses > loss_threshold(P.lmax), axis=0) <= P.p
                Wl = W + jj * self.w_hi[m] + (ll - jj) * self.w_lo[m]           # (ℓ, j)
                dead = self._leaves(m, k, seq, losses, feas, Wl, stats, prune_tol, on_leaf, leaf_bound, bound_only)
                if bound_only and stats.lb < thr():
                    # a corner with a leaf below the incumbent cannot discard its block,
                    # whatever the rest of its search finds: stop (pair_groups)
                    stats.aborted = True
                if stats.aborted:
                    return []
                feas = feas & ~dead
                # inner children: not yet feasible, room for another block of another model
                if self.terminal[m]:
                    continue
                inner = valid & ~feas & (ll < maxlen)
                li, ji = np.nonzero(inner)
                if li.size == 0:
                    continue
                base = Wl[li, ji] + self.const
                t = thr()
                keep = base < t
                if not keep.all():
                    stats.discard(float(base[~keep].min()))
                li, ji, base = li[keep], ji[keep], base[keep]
                if li.size == 0:
                    continue
                Lc = losses[:, cell_index(li, ji)]                              # (S, C)
                cbs = self.completion_bound(k + li + 1, 2 * m, Lc,
                                            skip=lambda b, base=base: base + b >= thr(), tuned=tuned)
                if self.last_only[m]:
                    # every continuation is one block of a terminal model: bound it exactly per
                    # scenario (last_block_bound) where the group bound does not prune
                    sel = np.nonzero(base + cbs < t)[0]
                    if sel.size:
                        cbs[sel] = np.maximum(cbs[sel], self.last_block_bound(k + li[sel] + 1, m, Lc[:, sel],
                                                                              cut=t - base[sel]))
                bounds = np.maximum(base + cbs, bound)
                pruned = bounds >= t
                if pruned.any():
                    stats.discard(float(bounds[pruned].min()))
                for c in np.nonzero(~pruned)[0]:
                    children.append((float(bounds[c]), k + int(li[c]) + 1, m, Lc[:, c].copy(),
                                     float(W + ji[c] * self.w_hi[m] + (li[c] + 1 - ji[c]) * self.w_lo[m]),
                                     seq + ((m, k, int(ji[c]), int(li[c]) + 1),), tuned))
            if tuner is not None and children:
                children = tune_children(self, children, thr(), 0, stats.discard)
            return children

        root = (self.root_bound(), 0, -1, np.full(P.S, P.l0), 0.0, (), ())
        return depth_first(root, expand, ub, prune_tol, nodes_left)


def _new_rows(T: dict, n: int, C: int):
    """Reserve the next ``n`` slots of ``C`` cells of the last-block table ``T``
    (``PairSearch._last_tables``); the arrays grow by doubling, never beyond every
    row of every start (``cap``, what ``LAST_TABLE_BYTES`` admitted). Returns the
    slots and the (n, C) view of the flat array they occupy."""
    used, end = T["used"], T["used"] + n * C
    if end > T["flat"].size:
        grown = np.empty(max(end, min(2 * T["flat"].size, T["cap"])))
        grown[:used] = T["flat"][:used]
        T["flat"] = grown
    if T["slots"] + n > T["first"].size:
        first = np.zeros(max(T["slots"] + n, 2 * T["first"].size), dtype=np.int64)
        first[:T["slots"]] = T["first"][:T["slots"]]
        T["first"] = first
    slots = T["slots"] + np.arange(n)
    T["first"][slots] = used + C * np.arange(n)
    T["used"], T["slots"] = end, T["slots"] + n
    return slots, T["flat"][used:end].reshape(n, C)


__all__ = ["PairSearch", "pair_applies"]
