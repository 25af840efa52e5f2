"""Scenario-group multipliers re-tuned at a search node (the group bound where it is used).

Why
---
The multipliers π of the group bound (``groups``) are tuned once, by
Kelley's method at the *root* state (every scenario at ℓ0). Deep in the
tree the prefix has already lowered each scenario's loss by a different
amount, and the right π puts its weight on the scenarios that still have
far to go. On the cyclic AlexNet (K̄ = 100, ℓmax = 9, S = 3000; 12 nodes
sampled at depths 3–5 of the first 3000, a one-off development measurement;
the maintained numbers are ``perf/general_targets.py``'s): the root pool bounds
them at 1812–1833 against the incumbent 1835.70, while eight Kelley
iterations per group at the node itself give 1895–2051. Those nodes are
pruned at once, where the root pool keeps them open and the search needs
96,126 nodes.

What is computed
----------------
A batch is the children of one expanded node (k0 epochs done, last
virtual model v0, losses L each). The bound of one group G at a child is,
for any π ≥ 0 on G (``groups`` module docstring, item 1; item 3 for
``need`` > 0 switches still required),

    h_G(π) = max(0, V^π(k0, v0; need) + π·(L_G − ℓmax)),

V^π the backward min-plus DP over (epoch, virtual model, switches still
required) on the π-aggregated draws; for the model-block search of
``pairs`` the completion must switch model first (its ``_forced_table``).
Every (child, group) pair below the value that would prune the child is a
*row*; the DP runs for all rows at once (a leading axis), from the
earliest child's epoch. A row's argmin path c* gives the cut
t ≤ h_G(π_c*) + (L_G − ℓmax − Δ_G(c*))·(π − π_c*) of the concave h_G, and
Kelley's master LP over all rows' cuts (separable, one HiGHS model) gives
the next π, smoothed towards the best so far as in ``groups._kelley``;
every iterate is a valid multiplier, the best one per row is kept. A child
then takes, per group, the larger of the pool's bound and its row's, and
the smallest over the groups (the (p+1)-th largest of p + 1, ``groups``
item 2).

*Warm starts.* Searches of neighbouring assignments meet the same nodes
(the same blocks on the same epochs): above all the corner searches of
``pair_groups``, which differ in one cluster's class only. A row's Kelley
iterations start from the π last tuned for the same node and group in any
search of the solve (:class:`WarmStarts`), where there is one; any π ≥ 0 in
the box is a valid multiplier, so the start changes how soon a row reaches
its target, never validity (``GeneralSettings.node_warm_start``).

The DP table of the kept π covers every state from the batch's earliest
epoch on, so a child's own rows (and its parent's) also bound its children,
at the cost of one product per candidate. The work is counted, not timed
(``GeneralSettings.node_iterations`` DP passes and LPs per batch, at most
``node_rows`` rows); the wall clock only stops a batch early.

References
----------
J. Kelley, J. SIAM 8 (1960) 703–712; P. Wentges, Int. Trans. Oper. Res. 4
(1997) 151–162 (in-out smoothing); S. Ahmed, J. Luedtke, Y. Song, W. Xie,
Math. Prog. 162 (2017) 51–81 (scenario grouping); J. Luedtke, Math. Prog.
146 (2014) 219–244.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from deplbench import limits
from deplbench.formulations.general.caches import ArrayCache
from deplbench.formulations.general.groups import KelleyMaster, switch_tables

#: Bytes of π one solve's :class:`WarmStarts` may keep, oldest dropped first.
WARM_BYTES = 64 * 2**20
#: Bytes counted per stored π beyond its array (its key, a tuple of blocks, and the dict entry; an estimate).
WARM_ENTRY_BYTES = 512


class WarmStarts:
    """The π last tuned for each (search kind, node, group) in one solve, to start Kelley from.

    A node is named by its block sequence (``seq`` of the search's node tuple),
    which does not depend on the assignment searched; the group index is the
    pool's, shared by every search of the solve. Kept on the problem
    (:func:`warm_starts`), within ``WARM_BYTES``, oldest dropped first: the
    same solve order gives the same starts on any machine.
    """

    def __init__(self, limit: int = WARM_BYTES):
        self.store = ArrayCache(limit, overhead=WARM_ENTRY_BYTES)
        self.started = 0        # rows started from a stored π (diagnostics["node_warm_starts"])

    @property
    def bytes(self) -> int:
        """Bytes counted for the stored π (``WARM_ENTRY_BYTES`` per entry included)."""
        return int(self.store.currsize)

    def get(self, key):
        """The stored π of ``key`` (counted as a warm start), or None."""
        pi = self.store.get(key)
        self.started += pi is not None
        return pi

    def put(self, key, pi: np.ndarray) -> None:
        """Keep ``pi`` for ``key`` (replacing an older one), dropping the oldest beyond the limit."""
        self.store[key] = np.array(pi, dtype=float)


def warm_starts(prob) -> WarmStarts:
    """The solve's :class:`WarmStarts`, kept on its problem (one per solve)."""
    store = prob.__dict__.get("_warm_starts")
    if store is None:
        store = prob.__dict__["_warm_starts"] = WarmStarts()
    return store


@dataclass
class TunedRows:
    """Multipliers tuned at a batch of nodes, one row per (node, group), with their DP table.

    ``group`` (nr,): the group of each row, sorted; ``pi`` (nr, n): π on the
    group's (padded) members; ``V`` (K+1−k0, nr, nv, C): V^π(k, v, c) for
    k = k0..K and c = 0..C−1 switches still required. Every row is a valid
    multiplier of its group at every state from epoch k0 on (``groups`` item 1),
    not only at the node it was tuned for.
    """

    group: np.ndarray
    pi: np.ndarray
    V: np.ndarray
    k0: int
    node: np.ndarray      # (nr,) the candidate of the batch each row was tuned at
    #: (K+1−k0, nr, M) for a model-block search: V^π over completions that switch model
    #: first (``pairs.PairSearch._forced_table``); None for a block search
    Vf: np.ndarray | None = None

    def __post_init__(self) -> None:
        #: the first row of each group present (``group`` is sorted), for one reduceat
        self.starts = np.nonzero(np.concatenate([[True], self.group[1:] != self.group[:-1]]))[0]

    def subset(self, keep: np.ndarray) -> TunedRows | None:
        """The rows ``keep`` (a mask) as their own table; None when it keeps none."""
        if not keep.any():
            return None
        return TunedRows(self.group[keep], self.pi[keep], self.V[:, keep], self.k0, self.node[keep],
                         None if self.Vf is None else self.Vf[:, keep])

    def values(self, ng: NodeGroups, k: np.ndarray, v, L: np.ndarray, need: int):
        """V^π + π·(L_G − ℓmax) of every row at every candidate (nr, B); None when the
        table does not reach the candidates (an earlier epoch, or more switches required)."""
        if need >= self.V.shape[3] or np.any(k < self.k0):
            return None
        if ng.forced:
            assert self.Vf is not None      # a model-block search's rows carry their switch-first table
            Vk = self.Vf[k - self.k0, :, ng.search.vm[v]]                      # (B, nr)
        else:
            Vk = self.V[k - self.k0, :, v, need]                               # (B, nr)
        LG = L[ng.members[self.group]] - ng.lmax                               # (nr, n, B)
        return np.einsum("rn,rnb->rb", self.pi, LG) + Vk.T

    def bounds(self, ng: NodeGroups, k: np.ndarray, v, L: np.ndarray, need: int) -> np.ndarray:
        """Per group and candidate, the largest max(0, V^π(k, v, need) + π·(L_G − ℓmax)) over
        the group's rows (0 for a group without rows): (r, B)."""
        out = np.zeros((ng.r, k.size))
        val = self.values(ng, k, v, L, need)
        if val is None:
            return out
        out[self.group[self.starts]] = np.maximum(np.maximum.reduceat(val, self.starts, axis=0), 0.0)
        return out


class NodeGroups:
    """The group bound of one search re-tuned at its nodes, a batch of nodes at a time
    (module docstring).

    Parameters
    ----------
    search : BlockSearch
        Its ``groups`` (a ``GroupTables``) supplies the groups and the
        starting multipliers.
    """

    def __init__(self, search):
        self.search = s = search
        P = s.prob
        T = s.groups
        self.r = len(T.pool.groups)
        self.n = max(G.size for G in T.pool.groups)
        self.members = np.zeros((self.r, self.n), dtype=np.intp)
        self.mask = np.zeros((self.r, self.n))
        for g, G in enumerate(T.pool.groups):
            self.members[g, :G.size] = G
            self.mask[g, :G.size] = 1.0
        K = s.kmax
        flat = self.members.ravel()
        self.M, self.npair = P.M, P.J.shape[2]
        # per group, its members' draws with epoch-major columns (one product per group)
        self.aG = np.ascontiguousarray(P.a[flat, :K].reshape(self.r, self.n, K * P.M))
        self.JG = np.ascontiguousarray(P.J[flat, :K].reshape(self.r, self.n, K * self.npair))
        self.jidx = s.jump_index()
        self.box = P.settings.pi_box * max(s.mu_ref, 1e-12)
        # the switch column of v → u per virtual-model pair (−1: same model, no jump)
        self.pair = np.where(self.jidx < self.npair, self.jidx, -1)
        self.lmax = P.lmax
        self.iters = P.settings.node_iterations
        self.max_rows = P.settings.node_rows
        self.rows_tuned = 0     # (candidate, group) pairs tuned so far (diagnostics["tuned_rows"])
        self.warm = warm_starts(P) if P.settings.node_warm_start else None
        #: a model-block search (pairs.PairSearch): a completion switches model first
        self.forced = hasattr(s, "_forced_table")
        if self.forced:
            # per model m: the targets a switch out of m may enter (another model, allowed)
            self.exits = np.array([[int(s.vm[u]) in s.next_models[m] for u in range(s.nv)] for m in range(P.M)])
        ends = list(T.starts[1:]) + [T.Pi.shape[0]]
        self.pool_rows = list(zip(T.starts, ends))

    # --------------------------------------------------------------- the DP
    def _table(self, pi: np.ndarray, group: np.ndarray, k0: int, C: int):
        """V^π(k, v, c) (K+1−k0, nr, nv, C) of every row's π, and the argmin choices."""
        s = self.search
        K, nv, nr = s.kmax, s.nv, pi.shape[0]
        steps = K - k0
        a = np.empty((nr, steps * self.M))
        J = np.empty((nr, steps * self.npair))
        for g in np.unique(group):
            idx = np.nonzero(group == g)[0]
            a[idx] = pi[idx] @ self.aG[g][:, k0 * self.M:]
            J[idx] = pi[idx] @ self.JG[g][:, k0 * self.npair:]
        a = a.reshape(nr, steps, self.M)
        J = J.reshape(nr, steps, self.npair)
        enter_all = s.w[None, None, :] - s.vgamma[None, None, :] * a[:, :, s.vm]        # (nr, steps, nv)
        tail = np.broadcast_to(np.array([0.0, np.inf]), (nr, steps, 2))
        Jx_all = np.concatenate([J, tail], axis=2)[:, :, self.jidx]                      # (nr, steps, nv, nv)
        V = np.full((steps + 1, nr, nv, C), np.inf)
        V[-1, :, :, 0] = 0.0
        ch = np.full((steps, nr, nv, C), -1)
        rr, cc = np.arange(nr)[:, None], np.arange(nv)[None, :]       # (row, from) grids of the argmin pick
        for i in range(steps - 1, -1, -1):
            if C == 1:
                # every switch or stay, stopping allowed (groups._path): one min over targets
                tot = Jx_all[:, i] + (enter_all[:, i] + V[i + 1, :, :, 0])[:, None, :]
                arg = tot.argmin(axis=2)
                # the entry at the argmin is the minimum (one pass over tot instead of two)
                val = tot[rr, cc, arg]
                stop = val >= 0
                val[stop] = 0.0
                arg[stop] = -1
                V[i, :, :, 0] = val
                ch[i, :, :, 0] = arg
                continue
            val, arg = switch_tables(s, V[i + 1], enter_all[:, i], Jx_all[:, i])
            stop = val[..., 0] >= 0
            val[..., 0] = np.where(stop, 0.0, val[..., 0])
            arg[..., 0] = np.where(stop, -1, arg[..., 0])
            V[i], ch[i] = val, arg
        return V, ch, enter_all, Jx_all

    def _decrease(self, ch, group, k0_row, v0_row, need: int, k0: int, first=None) -> np.ndarray:
        """Δ_G(c*) (nr, n): loss decrease of every row's argmin completion from its own
        (k0_row, v0_row, need), on the table ``ch`` that starts at epoch k0; ``first``
        (nr,), optional: the choice at each row's first epoch (−1: stop)."""
        s = self.search
        steps, nr = ch.shape[0], ch.shape[1]
        rows = np.arange(nr)
        v, c = v0_row.copy(), np.full(nr, need)
        alive = np.ones(nr, dtype=bool)
        path = np.full((nr, steps), -1)
        for i in range(steps):
            act = alive & (k0_row <= k0 + i)
            if not act.any():
                if not alive.any():
                    break
                continue
            u = np.where(act, ch[i, rows, np.maximum(v, 0), c], -1)
            if first is not None:
                u = np.where(act & (k0_row == k0 + i), first, u)
            path[act, i] = u[act]
            alive &= ~(act & (u < 0))
            moved = act & (u >= 0)
            if need:
                c = np.where(moved & (u != v), np.maximum(c - 1, 0), c)
            v = np.where(moved, u, v)
        on = path >= 0
        pv = np.maximum(path, 0)
        prev = np.concatenate([np.full((nr, 1), -1), path[:, :-1]], axis=1)
        prev[rows, k0_row - k0] = v0_row
        col = self.pair[np.maximum(prev, 0), pv]
        jump = on & (prev >= 0) & (col >= 0)
        # one-hot weights of the path's (epoch, model) terms, then one product per group
        X = np.zeros((nr, steps, self.M))
        ii, kk = np.nonzero(on)
        X[ii, kk, s.vm[pv[ii, kk]]] = s.vgamma[pv[ii, kk]]
        XJ = np.zeros((nr, steps, max(self.npair, 1)))
        ii, kk = np.nonzero(jump)
        XJ[ii, kk, col[ii, kk]] = 1.0
        X, XJ = X.reshape(nr, -1), XJ[:, :, :self.npair].reshape(nr, -1)
        dec = np.empty((nr, self.n))
        for g in np.unique(group):
            idx = np.nonzero(group == g)[0]
            dec[idx] = X[idx] @ self.aG[g][:, k0 * self.M:].T - XJ[idx] @ self.JG[g][:, k0 * self.npair:].T
        return dec

    def _forced_first(self, V, enter_all, Jx_all, rows, e0, v0):
        """Value and first choice of completions that switch model first from
        (epoch k0 + e0, block of model vm[v0]) per row: (value (nr,), choice (nr,), −1: stop)."""
        s = self.search
        m = s.vm[v0]
        tot = Jx_all[rows, e0, v0] + enter_all[rows, e0] + V[e0 + 1, rows, :, 0]          # (nr, nv)
        tot = np.where(self.exits[m], tot, np.inf)
        u = tot.argmin(axis=1)
        val = tot[rows, u]
        stop = ~(val < 0)
        return np.where(stop, 0.0, val), np.where(stop, -1, u)

    def _forced_table(self, V, enter_all, Jx_all) -> np.ndarray:
        """(steps+1, nr, M): the switch-first values at every epoch and model (0 at the end)."""
        s = self.search
        P = s.prob
        steps, nr = enter_all.shape[1], enter_all.shape[0]
        out = np.zeros((steps + 1, nr, P.M))
        after = enter_all + V[1:, :, :, 0].transpose(1, 0, 2)                            # (nr, steps, nv)
        for m in range(P.M):
            tot = Jx_all[:, :, 2 * m, :] + after                                          # from block of m
            tot = np.where(self.exits[m][None, None, :], tot, np.inf)
            out[:steps, :, m] = np.minimum(tot.min(axis=2), 0.0).T
        return out

    # -------------------------------------------------------------- tuning
    def start(self, k: np.ndarray, v: np.ndarray, L: np.ndarray, need: int, inherited=()):
        """The best known π per (candidate, group) and its value: the pool's rows and the
        rows inherited from ancestors' batches. Returns (π (B, r, n), h (B, r))."""
        T = self.search.groups
        B = k.size
        val = self.search.pool_values(k, v, need) + (T.Pi @ (L - self.lmax)).T     # (B, R)
        pi = np.zeros((B, self.r, self.n))
        best = np.empty((B, self.r))
        for g, (a0, b0) in enumerate(self.pool_rows):
            j = a0 + np.argmax(val[:, a0:b0], axis=1)
            G = T.pool.groups[g]
            pi[:, g, :G.size] = T.Pi[j][:, G]
            best[:, g] = val[np.arange(B), j]
        for rows in inherited:
            rv = rows.values(self, k, v, L, need)
            if rv is None:
                continue
            for a0, b0 in zip(rows.starts, list(rows.starts[1:]) + [rows.group.size]):
                g = rows.group[a0]
                j = a0 + np.argmax(rv[a0:b0], axis=0)                                  # (B,)
                h = rv[j, np.arange(B)]
                better = h > best[:, g]
                pi[better, g] = rows.pi[j[better]]
                best[better, g] = h[better]
        return pi, best

    def tune(self, k: np.ndarray, v: np.ndarray, L: np.ndarray, need: int, target: np.ndarray, inherited=(),
             keys=None):
        """Kelley's method on h_G of every (candidate, group) still below its candidate's
        ``target``, all at once (one DP pass and one LP per iteration).

        ``k``, ``v`` (B,), ``L`` (S, B): the candidates' states, ``need``: switches their
        completions still make; ``keys`` (B,), optional: the candidates' names for the
        warm starts (:class:`WarmStarts`). Returns (h (B, r), :class:`TunedRows` of the
        tuned rows, or None when none needed tuning). A row stops once it reaches its target.
        """
        opts = self.search.prob.settings
        pi0, h = self.start(k, v, L, need, inherited)
        b_row, g_row = np.nonzero(h < target[:, None])
        if b_row.size == 0 or self.iters == 0:
            return np.maximum(h, 0.0), None
        if b_row.size > self.max_rows:
            # the rows nearest their target first: the likeliest to prune their candidate
            near = np.argsort(target[b_row] - h[b_row, g_row], kind="stable")[:self.max_rows]
            b_row, g_row = b_row[near], g_row[near]
        order = np.argsort(g_row, kind="stable")
        b_row, g_row = b_row[order], g_row[order]
        self.rows_tuned += int(b_row.size)
        pi = pi0[b_row, g_row]
        mask = self.mask[g_row]
        warm = self.warm if keys is not None else None
        if warm is not None:
            # the first iterate: the π last tuned for this node and group, else the pool's best
            for i, (b, g) in enumerate(zip(b_row.tolist(), g_row.tolist())):
                start = warm.get((keys[b], g))
                if start is not None:
                    pi[i] = np.minimum(start, self.box) * mask[i]     # the box may have moved since
        slack = (L[self.members[g_row], b_row[:, None]] - self.lmax) * mask
        k_row, v_row, t_row = k[b_row], v[b_row], target[b_row]
        k0, C, nr = int(k_row.min()), need + 1, b_row.size
        best_h, best_pi = np.full(nr, -np.inf), pi.copy()
        best_V = None
        live = np.ones(nr, dtype=bool)
        master = None
        first = None
        for _ in range(self.iters):
            # the DP of the rows still short of their target only
            on = np.nonzero(live)[0]
            V, ch, enter_all, Jx_all = self._table(pi[on], g_row[on], k0, C)
            sub = np.arange(on.size)
            if self.forced:
                val, first = self._forced_first(V, enter_all, Jx_all, sub, k_row[on] - k0, v_row[on])
            else:
                val = V[k_row[on] - k0, sub, v_row[on], need]
            f = val + (pi[on] * slack[on]).sum(axis=1)
            if best_V is None:
                best_V = V.copy()
            better = f > best_h[on]
            best_h[on[better]], best_pi[on[better]] = f[better], pi[on[better]]
            best_V[:, on[better]] = V[:, better]
            live[on] = (best_h[on] < t_row[on]) & np.isfinite(f)
            if not live.any() or limits.expired():
                break
            grad = (slack[on] - self._decrease(ch, g_row[on], k_row[on], v_row[on], need, k0, first)) * mask[on]
            # every row gets a cut in the first round (an uncut row would leave the LP unbounded)
            cut = np.ones(on.size, dtype=bool) if master is None else live[on]
            master = KelleyMaster(mask, self.box, presolve=False) if master is None else master
            master.add_cuts(on[cut], grad[cut], f[cut] - (pi[on][cut] * grad[cut]).sum(axis=1))
            solved = master.solve()
            if solved is None:
                break
            top, x = solved
            live &= top - best_h > opts.kelley_rel_tol * np.maximum(np.abs(best_h), 1e-12)
            # in-out smoothing (groups._kelley): between the best π so far and the LP's
            w = opts.kelley_smoothing
            pi = np.where(live[:, None], (w * best_pi + (1.0 - w) * np.clip(x, 0.0, self.box)) * mask, best_pi)
        if warm is not None:
            # the better of the best iterate and the pool's start is kept for the next search
            kept = np.where((best_h >= h[b_row, g_row])[:, None], best_pi, pi0[b_row, g_row])
            for i, (b, g) in enumerate(zip(b_row.tolist(), g_row.tolist())):
                warm.put((keys[b], g), kept[i])
        h[b_row, g_row] = np.maximum(h[b_row, g_row], best_h)
        assert best_V is not None       # the first iteration runs the DP of every row
        Vf = None
        if self.forced:
            # the switch-first table of the kept π (one more DP pass on them)
            Vb, _, enter_b, Jx_b = self._table(best_pi, g_row, k0, C)
            Vf = self._forced_table(Vb, enter_b, Jx_b)
        return np.maximum(h, 0.0), TunedRows(g_row, best_pi, best_V, k0, b_row, Vf)


def node_tuner(search) -> NodeGroups | None:
    """The node re-tuning of ``search``, built on first use; None without a filled pool
    or with ``node_iterations`` = 0. The solve's time limit (:mod:`deplbench.limits`) only
    ends a batch early."""
    if search.groups is not None and search.prob.settings.node_iterations > 0 and search.node_groups is None:
        search.node_groups = NodeGroups(search)
    return search.node_groups


def tune_children(search, children: list, threshold: float, need: int, discard) -> list:
    """The group multipliers re-tuned at a node's children, all at once.

    ``children``: the search's node tuples (bound, k, last, L, W, seq, tuned);
    ``threshold``: bounds at or above it cannot beat the incumbent; ``discard(bound)``
    records the bound of the children this proves cannot (they are dropped). The
    others get the raised bound and, for their own children, the rows tuned at them.
    """
    if not math.isfinite(threshold):
        return children         # no incumbent yet: nothing to prune against
    k = np.array([c[1] for c in children])
    v = np.array([search._node_virtual(c[2]) for c in children])
    L = np.stack([c[3] for c in children], axis=1)
    W = np.array([c[4] for c in children])
    keys = [(type(search).__name__, c[5]) for c in children]        # a node is named by its blocks
    h, rows = search.node_groups.tune(k, v, L, need, threshold - W - search.const, children[0][6], keys)
    bounds = np.maximum(W + search.const + h.min(axis=1), [c[0] for c in children])
    pruned = bounds >= threshold
    if pruned.any():
        discard(float(bounds[pruned].min()))
    # a child is bounded with the rows tuned at its parent and at itself (older ones
    # were tuned for states further from its subtree's)
    kept = children[0][6][-1:]
    out = []
    for b in np.nonzero(~pruned)[0]:
        # each child keeps the rows tuned at it: its subtree's states are near its own
        mine = rows.subset(rows.node == b) if rows is not None else None
        out.append((float(bounds[b]), *children[b][1:6], kept + (mine,) if mine is not None else children[b][6]))
    return out


def combined_bound(search, k: np.ndarray, v: int, L: np.ndarray, need: int, tuned, skip=None) -> np.ndarray:
    """Per candidate, the smallest over groups of the largest group bound of the
    pool and of every batch in ``tuned`` (each valid, ``groups`` item 1).

    ``skip(bound) -> bool mask``, optional: candidates that ``bound`` already
    prunes. The rows tuned at ancestors are read first (they were tuned for
    states near these); candidates they prune keep that bound (valid, and
    enough to prune) and the pool's rows are read for the others only.
    """
    h = None
    for rows in tuned:
        b = rows.bounds(search.node_groups, k, v, L, need)                    # (r, C)
        h = b if h is None else np.maximum(h, b, out=h)
    out = np.zeros(k.size) if h is None else h.min(axis=0)
    todo = np.arange(k.size) if skip is None or h is None else np.nonzero(~skip(out))[0]
    if todo.size:
        def skip_todo(b):
            full = np.full(k.size, -np.inf)
            full[todo] = b
            return skip(full)[todo]

        hp = search.groups.group_bounds(search.pool_values(k[todo], v, need), L[:, todo],
                                        None if h is None else h[:, todo], None if skip is None else skip_todo)
        out[todo] = hp.min(axis=0)
    return out


__all__ = ["WARM_BYTES", "WARM_ENTRY_BYTES", "NodeGroups", "TunedRows", "WarmStarts", "combined_bound",
           "node_tuner", "tune_children", "warm_starts"]
