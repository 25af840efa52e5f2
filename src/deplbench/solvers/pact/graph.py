"""PACT's expanded graph (PACT Sec. V, Algs. 1–2) for one dataset set.

:class:`ExpandedGraph` builds Alg. 1's vertex set (k, m, n, ℓ, T) as dense
numpy layers and answers Alg. 2's query (shortest paths from the current
vertex to every vertex joined to the sink Ω) and the risk term of Alg. 3
(cheapest completion through a vertex of the current model);
:func:`score_paths` is Alg. 3's scoring, shared by the open loop
(:mod:`deplbench.solvers.pact.pact`) and the closed loop
(:mod:`deplbench.solvers.pact.policy`).
:mod:`deplbench.solvers.pact.pact` runs PACT's decision loop on it; its module
docstring states every interpretation made (robust estimators, edge
weights, the two time modes, resolutions).

What the graph guarantees
-------------------------
* Loss is the *robust* estimate rounded *up* per step to multiples of γ_ℓ
  (Alg. 1 line 17); a vertex in bucket 0 (ℓ ≤ ℓmax) is feasible, joined to
  Ω and absorbing (edge weights are ≥ 0, so stopping there is never worse).
* Time: with ``time_resolution > 0`` T is rounded up per step to multiples
  of γ_T (Alg. 1 line 18, conservative), collapsed to one bucket when K̄
  epochs of the slowest usable (model, cluster) fit in Tmax; with
  ``time_resolution = 0`` every vertex carries the exact minimum elapsed
  time of its least-weight path among those that can still finish by Tmax
  (:mod:`.deadline`). Either way every path returned by
  :meth:`ExpandedGraph.feasible_paths` is deadline-feasible at full capacity.
* Vertices are built only where reachable, layer by layer (the graph is a
  DAG layered by k), over (model, cluster, loss bucket, time bucket).

Complexity: one backward DP per distinct current model
(:meth:`ExpandedGraph.via_costs`) and one forward DP per epoch
(:meth:`ExpandedGraph.feasible_paths`), each O(K̄ · |M|²|N| · L · T) array
work with L, T the bucket counts (PACT Property 2's bound, restricted to
reachable layers).

References
----------
PACT paper Sec. V (Algs. 1–3, Property 2); DepL paper Sec. III eqs. (1)–(8).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from deplbench.limits import FLOAT_BYTES, check_memory, check_time
from deplbench.solvers.baselines.common import DataSetting, expected_improvement
from deplbench.solvers.pact import deadline

_INF = np.inf
#: Round-off guard of the ceil() casts of Alg. 1 lines 17–18: an increment
#: that is an exact multiple of the resolution must not gain a bucket.
CEIL_EPS = 1e-9
#: Current models whose risk-term layers (Alg. 3 line 11) are kept at once.
_VIA_KEEP = 4


def _argmin_by_time(D: np.ndarray, T: np.ndarray, axis: int) -> np.ndarray:
    """Index of the least weight ``D`` along ``axis``, the least exact time ``T`` among equal weights.

    A vertex keeps one path: on a weight tie (zero-cost clusters, weights
    below the float resolution) the first path found may be too slow to
    finish by Tmax while a tied faster one could, so the faster one is kept.
    """
    tied = D == D.min(axis=axis, keepdims=True)
    return np.argmin(np.where(tied, T, _INF), axis=axis)


def _keeps(cand: np.ndarray, cur: np.ndarray, time: np.ndarray, cur_time: np.ndarray) -> np.ndarray:
    """Where a candidate path replaces a vertex's kept one: less weight, or equal weight and
    less exact time (see :func:`_argmin_by_time`)."""
    return (cand < cur) | ((cand == cur) & (time < cur_time))


def _jump_estimates(instance, q: float) -> tuple[np.ndarray, np.ndarray]:
    """(robust, expected) switch jumps as (|M|, |M|) arrays; 0 on the
    diagonal (staying), NaN where the switch is not allowed."""
    M = instance.n_models
    rob = np.full((M, M), np.nan)
    exp = np.full((M, M), np.nan)
    np.fill_diagonal(rob, 0.0)
    np.fill_diagonal(exp, 0.0)
    n = len(instance.switches)
    for p, ((i, j), sw) in enumerate(zip(instance.switch_pairs, instance.switches)):
        check_time(f"PACT switch-jump estimates, switch {p} of {n}")
        rob[i, j] = float(sw.jump.ppf(q))
        mean = sw.jump.mean()
        exp[i, j] = float(mean) if math.isfinite(mean) else float(sw.jump.ppf(0.5))
    return rob, exp


def _has_cycle(adj: np.ndarray) -> bool:
    """Whether the directed graph with adjacency matrix ``adj`` has a cycle."""
    adj = adj.copy()
    alive = np.ones(adj.shape[0], dtype=bool)
    while alive.any():
        sinks = alive & ~adj[:, alive].any(axis=1)
        if not sinks.any():
            return True
        alive &= ~sinks
    return False


class ExpandedGraph:
    """PACT's expanded graph (Alg. 1) for one dataset set, as dense layers.

    Layer e (e = 0..K̄) holds the vertices "after e epochs": an array of shape
    (|M|, |N|, Lb, Tb) over (model, cluster, loss bucket, time bucket). Loss
    bucket b means ℓ ≤ ℓmax + b·γ_ℓ (b = 0: feasible, absorbing); time bucket
    t means T ≤ t·γ_T. The action leaving layer e is the epoch with global
    index k = e + 1.

    Parameters
    ----------
    instance : Instance
    setting : DataSetting
    robust_quantile : float
    loss_resolution, time_resolution : int
    """

    def __init__(self, instance, setting: DataSetting, robust_quantile: float,
                 loss_resolution: int, time_resolution: int):
        self.instance = instance
        self.setting = setting
        M, N, K = instance.n_models, instance.n_clusters, instance.horizon
        self.M, self.N, self.K = M, N, K
        self.printed = instance.data_rule == "printed"
        self.robust_quantile = q = float(robust_quantile)
        # (K, M, M) loss changes and bucket shifts, built next: refuse before allocating
        check_memory(4 * K * M * M * FLOAT_BYTES, f"PACT's per-epoch switch tables (K̄ = {K} × |M|² = {M * M})",
                     "use a smaller horizon")
        x_rob = np.array([float(m.improvement.ppf(1.0 - q)) for m in instance.models])
        x_exp = np.array([expected_improvement(m.improvement) for m in instance.models])
        g = setting.gamma
        run_rob = g * instance.run_scale * x_rob[None, :]        # (K, M) robust improvement
        run_exp = g * instance.run_scale * x_exp[None, :]
        jump_rob, jump_exp = _jump_estimates(instance, q)
        self.allowed = instance.allowed
        # Exact loss change of the action (m → m2) executed at epoch index e.
        self.change_rob = jump_rob[None, :, :] - run_rob[:, None, :]    # (K, M, M)
        self.change_exp = jump_exp[None, :, :] - run_exp[:, None, :]
        self.first_rob = -run_rob[0]                                   # (M,) first epoch: no jump
        self.first_exp = -run_exp[0]
        span = instance.initial_loss - instance.loss_max
        self.gl = span / loss_resolution
        self.b0 = int(loss_resolution)
        top_jump = np.nanmax(np.where(self.allowed & ~np.eye(M, dtype=bool), jump_rob, 0.0)) if M > 1 else 0.0
        self.Lb = self.b0 + int(math.ceil(max(0.0, top_jump) / self.gl - CEIL_EPS)) + 1
        with np.errstate(invalid="ignore"):
            db = np.ceil(self.change_rob / self.gl - CEIL_EPS)
        self.db = np.where(np.isfinite(db), db, self.Lb + 1).astype(np.int64)    # (K, M, M)
        self.db_first = np.ceil(self.first_rob / self.gl - CEIL_EPS).astype(np.int64)
        tau = setting.tau
        self.tau = tau
        self.usable = tau <= instance.time_max * (1 + 1e-9)
        #: "label": exact minimum time carried along each path (no time axis);
        #: "bucket": PACT's time axis rounded up to multiples of γ_T.
        self.time_mode = "label" if time_resolution == 0 else "bucket"
        if not self.usable.any() or self.time_mode == "label":
            self.Tb, self.gT = 1, instance.time_max
            self.dt = np.zeros((M, N), dtype=np.int64)
        elif K * tau[self.usable].max() <= instance.time_max * (1 + 1e-9):
            # No path of ≤ K̄ epochs can miss the deadline: one time bucket.
            self.Tb, self.gT = 1, instance.time_max
            self.dt = np.zeros((M, N), dtype=np.int64)
        else:
            self.Tb = int(time_resolution) + 1
            self.gT = instance.time_max / time_resolution
            self.dt = np.ceil(tau / self.gT - CEIL_EPS).astype(np.int64)
        self.dt = np.where(self.usable, self.dt, self.Tb)      # unusable: always out of range
        self.weight = setting.weight
        # The risk table (via_costs) is kept in float32, whose range ends at
        # 3.4e38 (2**128): weights of a unit cost past ~1e70 would turn its
        # sums of at most K̄ weights into inf there. They are stored times a
        # power of two (exact) that brings K̄·max weight to 2**100 at most,
        # and divided by it where read (:data:`via_scale`).
        finite = self.weight[np.isfinite(self.weight) & (self.weight > 0)]
        top = math.log2(float(finite.max())) + math.log2(max(K, 1)) if finite.size else 0.0
        self.via_scale = 2.0 ** -math.ceil(top - 100) if top > 100 else 1.0
        self.comm = setting.comm
        self.time_collapsed = self.Tb == 1
        self.time_max = instance.time_max * (1 + 1e-9)
        self._via_cache: dict[int, list[np.ndarray]] = {}
        self._groups: dict = {}
        # Highest loss-bucket climb a path can still make: bounded when the
        # switch graph is acyclic (at most |M|−1 switches), else unbounded.
        off = self.allowed & ~np.eye(M, dtype=bool)
        climb = np.where(off[None], self.db, 0).max(initial=0) if M > 1 else 0
        stay_climbs = bool((self.db[:, np.arange(M), np.arange(M)] > 0).any())   # X can be negative
        self.max_climb = (None if (stay_climbs or _has_cycle(off))
                          else int(max(0, climb)) * max(M - 1, 0))
        # One risk-term table (K̄ + 1 float32 layers, via_costs) and a forward
        # DP's distances and labels (12 float64 layers) must fit.
        cells = M * N * self.Lb * self.Tb
        self._least: list | None = None
        check_memory((K + 1) * cells * 4 + 12 * cells * FLOAT_BYTES + deadline.table_bytes(self),
                     f"PACT's expanded graph (K̄ = {K} layers × |M||N|·L·T = {cells} cells)",
                     "use a smaller horizon or loss_resolution/time_resolution")

    # ------------------------------------------------------------ geometry
    @property
    def n_vertices(self) -> int:
        """|V| of Alg. 1 restricted to our bounded loss range, plus source and Ω."""
        return self.K * self.M * self.N * self.Lb * self.Tb + 2

    def _dt_groups(self, m2: int | np.integer, n: int | None):
        """Usable target clusters of model m2 grouped by their time shift
        (one group in the label mode); only cluster n under the printed rule."""
        key = (m2, n if self.printed else None)
        if key not in self._groups:
            cands = [n] if (self.printed and n is not None) else range(self.N)
            ok = [c for c in cands if self.usable[m2, c]]
            by_dt: dict[int, list[int]] = {}
            for c in ok:
                by_dt.setdefault(int(self.dt[m2, c]), []).append(c)
            self._groups[key] = [(dt, np.array(cs, dtype=np.int64)) for dt, cs in sorted(by_dt.items())]
        return self._groups[key]

    def _targets(self, m: int, n: int | None):
        """Actions (m2, n2) allowed from model m (cluster n under the printed rule)."""
        for m2 in np.nonzero(self.allowed[m])[0]:
            for n2 in ([n] if (self.printed and n is not None) else range(self.N)):
                if self.usable[m2, n2]:
                    yield int(m2), int(n2)

    def _first_edges(self, e0: int, m0: int | None, n0: int | None) -> list[tuple]:
        """The edges out of the current vertex, each as (m2, n2, Δb, robust
        and expected loss change): from the source (``m0`` None) to every
        usable configuration, else the actions allowed from (m0, n0) at
        epoch ``e0``; where the forward searches start."""
        if m0 is None:
            return [(m2, n2, int(self.db_first[m2]), self.first_rob[m2], self.first_exp[m2])
                    for m2 in range(self.M) for n2 in range(self.N) if self.usable[m2, n2]]
        return [(m2, n2, int(self.db[e0, m0, m2]), self.change_rob[e0, m0, m2], self.change_exp[e0, m0, m2])
                for m2, n2 in self._targets(m0, n0)]

    # ----------------------------------------------------- backward DP (J)
    def _bwd_shift(self, arr: np.ndarray, d: int, dt: int) -> np.ndarray:
        """out[b, t] = arr[max(b + d, 0), t + dt] (inf outside the grid)."""
        Lb, Tb = arr.shape
        out = np.full((Lb, Tb), _INF)
        if dt >= Tb or d >= Lb:
            return out
        idx = np.maximum(np.arange(Lb) + d, 0)
        ok = idx < Lb
        out[ok, : Tb - dt] = arr[idx[ok], dt:]
        return out

    def via_costs(self, m0: int) -> list[np.ndarray]:
        """Jvia[e][m, n, b, t]: cheapest weight from a vertex to Ω through a
        vertex of model ``m0`` (Alg. 3 line 11), for every layer e = 0..K̄,
        as float32 times :attr:`via_scale` (divide by it to read a weight)."""
        if m0 in self._via_cache:
            return self._via_cache[m0]
        M, N, Lb, Tb, K = self.M, self.N, self.Lb, self.Tb, self.K
        J_next = np.full((M, N, Lb, Tb), _INF)
        J_next[:, :, 0, :] = 0.0
        V_next = np.full((M, N, Lb, Tb), _INF)
        V_next[m0] = J_next[m0]
        layers: list[np.ndarray] = [None] * (K + 1)  # type: ignore[list-item]
        layers[K] = (V_next * self.via_scale).astype(np.float32)
        for e in range(K - 1, -1, -1):
            check_time(f"PACT risk-term DP, layer {e} of {K}")
            J = np.full((M, N, Lb, Tb), _INF)
            V = np.full((M, N, Lb, Tb), _INF)
            for m in range(M):
                for m2 in np.nonzero(self.allowed[m])[0]:
                    d = int(self.db[e, m, m2])
                    for n2 in range(N):
                        if not self.usable[m2, n2]:
                            continue
                        w = self.weight[m2, n2]
                        dt = int(self.dt[m2, n2])
                        cj = self._bwd_shift(J_next[m2, n2], d, dt) + w
                        cv = self._bwd_shift(V_next[m2, n2], d, dt) + w
                        if self.printed:
                            np.minimum(J[m, n2], cj, out=J[m, n2])
                            np.minimum(V[m, n2], cv, out=V[m, n2])
                        else:
                            np.minimum(J[m], cj[None], out=J[m])
                            np.minimum(V[m], cv[None], out=V[m])
            J[:, :, 0, :] = 0.0                      # feasible vertices are joined to Ω
            V[:, :, 0, :] = _INF                     # ... but only through model m0
            V[m0] = J[m0]
            layers[e] = (V * self.via_scale).astype(np.float32)
            J_next, V_next = J, V
        # Bounded memory: keep the layers of at most _VIA_KEEP current models
        # (the closed-loop policy alternates between models; the open loop
        # asks for one model at a time).
        while len(self._via_cache) >= _VIA_KEEP:
            self._via_cache.pop(next(iter(self._via_cache)))
        self._via_cache[m0] = layers
        return layers

    # ---------------------------------------------------- forward DP (Alg. 2)
    def _fwd_shift(self, arr: np.ndarray, d: int, dt: int, times: np.ndarray):
        """Scatter a source layer slice by an action: target (max(b+d, 0), t+dt).

        Returns the shifted distances and, for every target, the source loss
        row (the minimum over the rows merged into the feasible bucket 0, the
        least exact time ``times`` among equal distances).
        """
        Lb, Tb = arr.shape
        out = np.full((Lb, Tb), _INF)
        src_b = np.zeros((Lb, Tb), dtype=np.int64)
        if dt >= Tb:
            return out, src_b
        src = arr[:, : Tb - dt]
        lo, hi = max(1, 1 + d), min(Lb, Lb + d)
        if lo < hi:
            out[lo:hi, dt:] = src[lo - d: hi - d]
            src_b[lo:hi, dt:] = np.arange(lo - d, hi - d)[:, None]
        if d < 0:
            top = min(-d, Lb - 1)
            block = src[1: top + 1]
            if block.size:
                arg = _argmin_by_time(block, times[1: top + 1, : Tb - dt], axis=0)
                out[0, dt:] = block[arg, np.arange(block.shape[1])]
                src_b[0, dt:] = arg + 1
        return out, src_b

    def feasible_paths(self, e0: int, m0: int | None, n0: int | None, b0: int, t0: int,
                       time0: float = 0.0):
        """Shortest paths from the current vertex to every vertex joined to Ω.

        Returns
        -------
        dict of ndarray
            One entry per reachable feasible vertex: ``W`` (summed edge
            weights), ``C`` (summed communication time), ``Le``/``Lr`` (exact
            expected/robust loss change), ``first`` (first action as
            m2·|N| + n2), ``T`` (exact minimum elapsed time at the end,
            starting from ``time0``) and the feasible vertex reached: ``end``
            (layer), ``model``, ``cluster``, ``time_bucket``. None when no
            feasible vertex is reachable.

        Notes
        -----
        In ``time_mode == "label"`` a vertex keeps the least-weight path that
        can still reach ℓmax by Tmax (:mod:`.deadline`), the faster on a tie:
        a path is found whenever one exists, but a costlier, faster one merged
        away is lost (the price of having no time axis).
        """
        M, N, Tb, K = self.M, self.N, self.Tb, self.K
        if e0 >= K:
            return None
        # Rows above what the remaining switches can climb to are unreachable:
        # crop them (late re-plans then work on small arrays).
        Lb = self.Lb if self.max_climb is None else min(self.Lb, b0 + self.max_climb + 1)
        # labels: 0 C, 1 Le, 2 Lr, 3 first action, 4 exact minimum time
        D = np.full((M, N, Lb, Tb), _INF)
        L = np.zeros((5, M, N, Lb, Tb))
        for m2, n2, d, cr, ce in self._first_edges(e0, m0, n0):
            b1, t1 = max(b0 + d, 0), t0 + int(self.dt[m2, n2])
            if b1 >= Lb or t1 >= Tb or time0 + self.tau[m2, n2] + deadline.can_finish(
                    self, e0 + 1, m2, np.array([n2]), Lb)[0, b1] > self.time_max:
                continue
            D[m2, n2, b1, t1] = self.weight[m2, n2]
            L[:, m2, n2, b1, t1] = (self.comm[m2, n2], ce, cr, m2 * N + n2, time0 + self.tau[m2, n2])
        found = []
        e = e0 + 1
        tcols = np.arange(Tb)
        while True:
            feas = np.isfinite(D[:, :, 0, :])
            if feas.any():
                mm, nn, tt = np.nonzero(feas)
                found.append((D[mm, nn, 0, tt], L[:, mm, nn, 0, tt], np.vstack([np.full(mm.size, e), mm, nn, tt])))
            D[:, :, 0, :] = _INF                      # absorbing: no out-edges
            live = np.isfinite(D).any(axis=(1, 2, 3))
            if e >= K or not live.any():
                break
            check_time(f"PACT forward DP, layer {e} of {K}")
            Dn = np.full((M, N, Lb, Tb), _INF)
            Ln = np.zeros((5, M, N, Lb, Tb))
            for m in np.nonzero(live)[0]:
                groups: list[tuple[int | None, Any, Any]]
                if self.printed:
                    groups = [(n, D[m, n], L[:, m, n]) for n in range(N) if np.isfinite(D[m, n]).any()]
                else:
                    # The action's effect does not depend on the source cluster:
                    # keep the best source cluster per (b, t) first.
                    arg = _argmin_by_time(D[m], L[4, m], axis=0)
                    Dm = np.take_along_axis(D[m], arg[None], axis=0)[0]
                    Lm = np.take_along_axis(L[:, m], arg[None, None], axis=1)[:, 0]
                    groups = [(None, Dm, Lm)]
                for n, Dsrc, Lsrc in groups:
                    for m2 in np.nonzero(self.allowed[m])[0]:
                        d = int(self.db[e, m, m2])
                        for dt, n2s in self._dt_groups(m2, n):
                            cand, sb = self._fwd_shift(Dsrc, d, dt, Lsrc[4])
                            if not np.isfinite(cand).any():
                                continue
                            st = np.broadcast_to(np.clip(tcols - dt, 0, Tb - 1), sb.shape)
                            lab = Lsrc[:, sb, st]
                            # Vectorised over the target clusters sharing this time shift.
                            cand = cand[None] + self.weight[m2, n2s][:, None, None]
                            labn = np.repeat(lab[:, None], n2s.size, axis=1)
                            labn[0] += self.comm[m2, n2s][:, None, None]
                            labn[1] += self.change_exp[e, m, m2]
                            labn[2] += self.change_rob[e, m, m2]
                            labn[4] += self.tau[m2, n2s][:, None, None]
                            # only paths that can still reach ℓmax by Tmax (.deadline)
                            ahead = deadline.can_finish(self, e + 1, m2, n2s, Lb)[:, :, None]
                            better = (_keeps(cand, Dn[m2, n2s], labn[4], Ln[4, m2, n2s])
                                      & (labn[4] + ahead <= self.time_max))
                            if not better.any():
                                continue
                            Dn[m2, n2s] = np.where(better, cand, Dn[m2, n2s])
                            Ln[:, m2, n2s] = np.where(better[None], labn, Ln[:, m2, n2s])
            D, L = Dn, Ln
            e += 1
        if not found:
            return None
        W = np.concatenate([f[0] for f in found])
        lab = np.concatenate([f[1] for f in found], axis=1)
        where = np.concatenate([f[2] for f in found], axis=1)
        return {"W": W, "C": lab[0], "Le": lab[1], "Lr": lab[2], "first": lab[3].astype(np.int64), "T": lab[4],
                "end": where[0], "model": where[1], "cluster": where[2], "time_bucket": where[3]}

    def feasible_paths_batch(self, e0: int, m0: int | None, n0: int | None, b0s, time0s) -> list:
        """:meth:`feasible_paths` from several current vertices at once.

        The sources share the epoch ``e0``, model ``m0`` and cluster ``n0``
        and differ in loss bucket ``b0s[s]`` and exact elapsed time
        ``time0s[s]`` (time bucket 0: the closed-loop policy carries the
        elapsed time as a label). One forward DP with a leading source axis
        replaces len(b0s) DPs: the closed-loop PACT policy asks for every
        loss/time cell of a group of runs in one call.

        Returns
        -------
        list of (dict or None)
            Per source, what :meth:`feasible_paths` returns from it.
        """
        b0s = np.asarray(b0s, dtype=np.int64)
        time0s = np.asarray(time0s, dtype=float)
        S = b0s.size
        M, N, Tb, K = self.M, self.N, self.Tb, self.K
        if e0 >= K or S == 0:
            return [None] * S
        top = int(b0s.max())
        Lb = self.Lb if self.max_climb is None else min(self.Lb, top + self.max_climb + 1)
        D = np.full((S, M, N, Lb, Tb), _INF)
        L = np.zeros((5, S, M, N, Lb, Tb))
        srcs = np.arange(S)
        for m2, n2, d, cr, ce in self._first_edges(e0, m0, n0):
            b1 = np.maximum(b0s + d, 0)
            t1 = int(self.dt[m2, n2])
            ahead = deadline.can_finish(self, e0 + 1, m2, np.array([n2]), Lb)[0, np.minimum(b1, Lb - 1)]
            ok = (b1 < Lb) & (t1 < Tb) & (time0s + self.tau[m2, n2] + ahead <= self.time_max)
            s_ok, b_ok = srcs[ok], b1[ok]
            D[s_ok, m2, n2, b_ok, t1] = self.weight[m2, n2]
            for j, v in enumerate((self.comm[m2, n2], ce, cr, m2 * N + n2)):
                L[j, s_ok, m2, n2, b_ok, t1] = v
            L[4, s_ok, m2, n2, b_ok, t1] = time0s[ok] + self.tau[m2, n2]
        found = []
        e = e0 + 1
        rows = np.arange(Lb)
        while True:
            feas = np.isfinite(D[:, :, :, 0, :])
            if feas.any():
                ss, mm, nn, tt = np.nonzero(feas)
                found.append((ss, D[ss, mm, nn, 0, tt], L[:, ss, mm, nn, 0, tt],
                              np.vstack([np.full(mm.size, e), mm, nn, tt])))
            D[:, :, :, 0, :] = _INF
            live = np.isfinite(D).any(axis=(0, 2, 3, 4))
            if e >= K or not live.any():
                break
            Dn = np.full((S, M, N, Lb, Tb), _INF)
            Ln = np.zeros((5, S, M, N, Lb, Tb))
            for m in np.nonzero(live)[0]:
                groups: list[tuple[int | None, Any, Any]]
                if self.printed:
                    groups = [(n, D[:, m, n], L[:, :, m, n]) for n in range(N) if np.isfinite(D[:, m, n]).any()]
                else:
                    arg = _argmin_by_time(D[:, m], L[4, :, m], axis=1)                 # (S, Lb, Tb)
                    Dm = np.take_along_axis(D[:, m], arg[:, None], axis=1)[:, 0]
                    Lm = np.take_along_axis(L[:, :, m], arg[None, :, None], axis=2)[:, :, 0]
                    groups = [(None, Dm, Lm)]
                for n, Dsrc, Lsrc in groups:                     # Dsrc (S, Lb, Tb), Lsrc (5, S, Lb, Tb)
                    for m2 in np.nonzero(self.allowed[m])[0]:
                        d = int(self.db[e, m, m2])
                        for dt, n2s in self._dt_groups(m2, n):
                            if dt >= Tb:
                                continue
                            cand = np.full((S, Lb, Tb), _INF)
                            sb = np.zeros((S, Lb, Tb), dtype=np.int64)
                            src = Dsrc[:, :, : Tb - dt]
                            lo, hi = max(1, 1 + d), min(Lb, Lb + d)
                            if lo < hi:
                                cand[:, lo:hi, dt:] = src[:, lo - d: hi - d]
                                sb[:, lo:hi, dt:] = rows[lo - d: hi - d][None, :, None]
                            if d < 0:
                                topr = min(-d, Lb - 1)
                                block = src[:, 1: topr + 1]
                                if block.shape[1]:
                                    arg = _argmin_by_time(block, Lsrc[4][:, 1: topr + 1, : Tb - dt], axis=1)
                                    cand[:, 0, dt:] = np.take_along_axis(block, arg[:, None], axis=1)[:, 0]
                                    sb[:, 0, dt:] = arg + 1
                            if not np.isfinite(cand).any():
                                continue
                            st = np.broadcast_to(np.clip(np.arange(Tb) - dt, 0, Tb - 1), sb.shape)
                            sidx = np.broadcast_to(srcs[:, None, None], sb.shape)
                            lab = Lsrc[:, sidx, sb, st]                          # (5, S, Lb, Tb)
                            cand = cand[:, None] + self.weight[m2, n2s][None, :, None, None]
                            labn = np.repeat(lab[:, :, None], n2s.size, axis=2)  # (5, S, n2, Lb, Tb)
                            labn[0] += self.comm[m2, n2s][None, :, None, None]
                            labn[1] += self.change_exp[e, m, m2]
                            labn[2] += self.change_rob[e, m, m2]
                            labn[4] += self.tau[m2, n2s][None, :, None, None]
                            cur = Dn[:, m2][:, n2s]
                            ahead = deadline.can_finish(self, e + 1, m2, n2s, Lb)[None, :, :, None]
                            better = (_keeps(cand, cur, labn[4], Ln[4][:, m2][:, n2s])
                                      & (labn[4] + ahead <= self.time_max))
                            if not better.any():
                                continue
                            Dn[:, m2, n2s] = np.where(better, cand, cur)
                            Ln[:, :, m2, n2s] = np.where(better[None], labn, Ln[:, :, m2][:, :, n2s])
            D, L = Dn, Ln
            e += 1
        out: list = [None] * S
        if not found:
            return out
        ss = np.concatenate([f[0] for f in found])
        W = np.concatenate([f[1] for f in found])
        lab = np.concatenate([f[2] for f in found], axis=1)
        where = np.concatenate([f[3] for f in found], axis=1)
        for s_ in np.unique(ss):
            k = ss == s_
            out[int(s_)] = {"W": W[k], "C": lab[0, k], "Le": lab[1, k], "Lr": lab[2, k],
                            "first": lab[3, k].astype(np.int64), "T": lab[4, k], "end": where[0, k],
                            "model": where[1, k], "cluster": where[2, k], "time_bucket": where[3, k]}
        return out

    def least_times(self) -> list[np.ndarray]:
        """The least time from every vertex to ℓmax (:func:`.deadline.least_times`), built once."""
        self._least = self._least or deadline.least_times(self)
        return self._least

    def has_path(self) -> bool:
        """Whether some path from the initial vertex reaches ℓmax (Alg. 2 finds any)."""
        return self.feasible_paths(0, None, None, self.b0, 0) is not None

    def landing(self, e0: int, m0: int | None, b0: int, t0: int, m2: int, n2: int) -> tuple[int, int]:
        """The vertex (b, t) that action (m2, n2) from (e0, m0, b0, t0) reaches."""
        d = int(self.db_first[m2]) if m0 is None else int(self.db[e0, m0, m2])
        return max(b0 + d, 0), t0 + int(self.dt[m2, n2])


def score_paths(graph: ExpandedGraph, paths: dict, e: int, m: int | None, b: int, t: int,
                W_prefix: float, C_prefix: float, irreversible_risk: float = 1.0):
    """Alg. 3 (CHOOSEACTION): the score of every feasible path, and the best one.

    Parameters
    ----------
    graph : ExpandedGraph
    paths : dict
        :meth:`ExpandedGraph.feasible_paths` from the current vertex (e, m, ·, b, t).
    W_prefix, C_prefix : float
        Edge weights and time already committed: the score's weight[p] is the
        closed-form real-x cost ``(W_prefix + W)² / (Tmax − C_prefix − C)``
        (open loop: the committed prefix's weights and communication time;
        closed loop: ``W_prefix = 0`` and ``C_prefix`` = the elapsed time, so
        only the remaining path is priced with the remaining time).
    irreversible_risk : float

    Returns
    -------
    (int, ndarray, ndarray, ndarray)
        Index of the best path, and the score, opp and risk of every path.
    """
    inst = graph.instance
    W, C, Le, Lr, first = paths["W"], paths["C"], paths["Le"], paths["Lr"], paths["first"]
    denom = inst.time_max - C_prefix - C
    # a square past binary64 is an inf cost (a path no finite plan prefers; an inf plan cost
    # is reported by the solve's cost check, solvers.run)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        cost = np.where(denom > 0, (W_prefix + W) ** 2 / np.where(denom > 0, denom, 1.0), _INF)
        opp = np.where(Lr < 0, Le / np.where(Lr < 0, Lr, -1.0), 1.0)
    opp = np.maximum(opp, 1.0)
    if m is None:
        risk = np.ones_like(W)
    else:
        via = graph.via_costs(m)[e + 1]
        wr = np.empty_like(W)
        for a in np.unique(first):
            a2, an = int(a // graph.N), int(a % graph.N)
            b1, t1 = graph.landing(e, m, b, t, a2, an)
            wr[first == a] = graph.weight[a2, an] + float(via[a2, an, b1, t1]) / graph.via_scale
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(W > 0, wr / np.where(W > 0, W, 1.0), 1.0)
        risk = np.where(np.isfinite(wr), np.maximum(ratio, 1.0), irreversible_risk)
    score = cost * risk / opp
    best = int(np.lexsort((paths["end"], W, score))[0])
    return best, score, opp, risk


__all__ = ["ExpandedGraph", "score_paths", "CEIL_EPS"]
