"""The flow formulation: epoch × model state graph with one row per distinct scenario.

What is solved
--------------
The SAA of problem (2)–(6) for any instance (the fallback of ``fast``):

* Flow over the epoch × model state graph: u(k,m) = epoch k trains model m,
  arc flows f(k,i,j) for allowed transitions (staying is always allowed);
  conservation makes the active epochs a prefix and the switch indicators
  exact without product linearisations.
* With several data classes, w(k,m,σ) splits u by class and
  e(k,m) = Σ_σ γ_σ w(k,m,σ) is the data multiplier of the run term (eq. (8)).
* One scenario row per *distinct* scenario (multiplicity weighs the
  violation budget; deterministic instances have one, hard):
  ℓ0 − Σ γ a u + Σ J f − M_s v_s ≤ ℓmax, Σ mult_s v_s ≤ ⌊(1−ω)S⌋.
* Tight big-M values and K bounds from :mod:`.bounds`.
* Counts N, data binaries q, λ cuts and the data rule from :mod:`.matrix`.

Why the flow formulation is not enough on its own
-------------------------------------------------
The SAA rows have random *coefficients*. A convex combination of plans that
use different models in the same epochs averages independent noise, so the
LP relaxation's quantile is far below any single plan's: on realistic
AlexNet (ℓmax = 9, S = 1000) the root LP is 1590.8, the LP with the optimal
plan's violated scenarios fixed is still 1699.6, fixing K changes nothing
(≈1604), and the optimum is 1802.63; tight big-M values do not close that.
Branch-and-bound must separate the mixtures, which grows quickly with S
(docs/performance.md, "Measurements behind design choices"). Hence the enumeration and
count formulations where the structure allows them.

Size: the scenario block has U·K·(|M|+|P|) non-zeros (U distinct scenarios,
K = K_max); :func:`flow_size` estimates it before anything is built.

References
----------
DepL paper eqs. (2)–(8); J. Luedtke, S. Ahmed, SIAM J. Optim. 19 (2008).
"""

from __future__ import annotations

import time

import numpy as np

from deplbench.formulations.milp.bounds import Bounds, tight_bigm
from deplbench.formulations.milp.data import Choice, Data
from deplbench.formulations.milp.matrix import (
    MatrixFormulation,
    MatrixModel,
    cluster_rows,
    clusters_from_counts,
    held_classes,
)


class FlowModel(MatrixFormulation):
    """The flow formulation (see module docstring) as a :class:`MatrixModel`."""

    def __init__(self, data: Data, bounds: Bounds, scenario_subset=None):
        self.data = d = data
        self.bounds = bounds
        # Scenario generation: rows only for a subset (a relaxation; the cut
        # loop checks every plan on all S scenarios and adds what it violates).
        order = np.argsort(d.uniq)
        if scenario_subset is None:
            self.scen, mult = d.uniq[order], d.mult[order]
        else:
            self.scen = np.unique(np.asarray(scenario_subset, dtype=np.int64))
            mult = np.ones(self.scen.size, dtype=np.int64)
        # a scenario whose copies alone exceed the budget can never be violated
        soft_mask = (bounds.bigm[self.scen] > 0) & (mult <= d.p)
        K = self.K = max(1, bounds.k_max)
        M, Nn, Sig = d.M, d.Nn, d.Sig
        mm = self.mm = MatrixModel(d.labels())
        # ------------------------------------------------------------ columns
        self.u = mm.cols("u", (K, M), integer=True, axes=("epoch", "model"))
        self.w = mm.cols("w", (K, M, Sig), integer=True, axes=("epoch", "model", "class")) if Sig > 1 else None
        self.e = mm.cols("e", (K, M), ub=float(d.gam.max()), axes=("epoch", "model")) if Sig > 1 else None
        self.arcs = [(i, i) for i in range(M)] + d.pairs
        A = len(self.arcs)
        names = [m.name for m in d.inst.models]
        arc_names = [names[i] if i == j else f"{names[i]}_to_{names[j]}" for i, j in self.arcs]
        self.f = (mm.cols("f", (K - 1, A), axes=([f"k{k + 2}" for k in range(K - 1)], arc_names))
                  if K > 1 else np.zeros((0, A), dtype=np.int64))
        per_epoch = self._count_columns(K)
        self.h = (mm.cols("h", (K, Nn, Sig), cost=np.broadcast_to(d.beta, (K, Nn, Sig)),
                          axes=("epoch", "cluster", "class")) if per_epoch else None)
        bigm = bounds.bigm
        self.soft = self.scen[soft_mask] if d.p > 0 else np.zeros(0, dtype=np.int64)
        self.soft_mult = mult[soft_mask] if d.p > 0 else np.zeros(0, dtype=np.int64)
        self.v = mm.cols("v", (self.soft.size,), integer=True, axes=([f"s{i}" for i in self.soft],))
        # --------------------------------------------------------------- rows
        # activity: the first k_min epochs are active, then a prefix (flow).
        forced = min(max(bounds.k_min, 1), K)
        mm.rows(np.repeat(np.arange(K), M), self.u.ravel(), 1.0,
                lo=np.where(np.arange(K) < forced, 1.0, -np.inf), hi=1.0, name="active")
        if K > 1:
            arcs = np.array(self.arcs)
            # inflow of (k, j) equals u[k, j]
            for j in range(M):
                sel = np.nonzero(arcs[:, 1] == j)[0]
                cols = np.concatenate([self.f[:, sel], self.u[1:, j][:, None]], axis=1)
                vals = np.concatenate([np.ones(sel.size), [-1.0]])
                mm.rows(np.repeat(np.arange(K - 1), sel.size + 1), cols, np.tile(vals, K - 1), 0.0, 0.0, name="inflow")
            # outflow of (k−1, i) at most u[k−1, i]
            for i in range(M):
                sel = np.nonzero(arcs[:, 0] == i)[0]
                cols = np.concatenate([self.f[:, sel], self.u[:-1, i][:, None]], axis=1)
                vals = np.concatenate([np.ones(sel.size), [-1.0]])
                mm.rows(np.repeat(np.arange(K - 1), sel.size + 1), cols, np.tile(vals, K - 1), -np.inf, 0.0,
                        name="outflow")
        if Sig > 1:
            # Σ_σ w = u and e = Σ_σ γ_σ w, per (k, m)
            cols = np.concatenate([self.w.reshape(K * M, Sig), self.u.reshape(K * M, 1)], axis=1)
            vals = np.tile(np.concatenate([np.ones(Sig), [-1.0]]), K * M)
            mm.rows(np.repeat(np.arange(K * M), Sig + 1), cols, vals, 0.0, 0.0, name="split_class")
            cols = np.concatenate([self.w.reshape(K * M, Sig), self.e.reshape(K * M, 1)], axis=1)
            vals = np.tile(np.concatenate([d.gam, [-1.0]]), K * M)
            mm.rows(np.repeat(np.arange(K * M), Sig + 1), cols, vals, 0.0, 0.0, name="data_multiplier")
            epoch_cols = self.w.transpose(1, 2, 0).reshape(M * Sig, K)  # (m, σ) × k
        else:
            epoch_cols = self.u.T.reshape(M, K)
        # counts: Σ_n N[m,n,σ] = Σ_k w[k,m,σ]
        cols = np.concatenate([self.N.transpose(0, 2, 1).reshape(M * Sig, Nn), epoch_cols], axis=1)
        vals = np.tile(np.concatenate([np.ones(Nn), -np.ones(K)]), M * Sig)
        mm.rows(np.repeat(np.arange(M * Sig), Nn + K), cols, vals, 0.0, 0.0, name="counts")
        cluster_rows(mm, d, self.N, self.q, K)
        if self.h is not None:
            # per-epoch transfer (printed eq. (2)): h[k,n,σ] ≥ q[n,σ] + Σ_m u[k,m] − 1
            R = K * Nn * Sig
            hh = self.h.reshape(R, 1)
            qq = np.broadcast_to(self.q.reshape(1, Nn * Sig), (K, Nn * Sig)).reshape(R, 1)
            uu = np.repeat(self.u, Nn * Sig, axis=0)                       # (R, M)
            cols = np.concatenate([hh, qq, uu], axis=1)
            vals = np.tile(np.concatenate([[1.0, -1.0], -np.ones(M)]), R)
            mm.rows(np.repeat(np.arange(R), M + 2), cols, vals, -1.0, np.inf, name="transfer_epoch")
        # quantile budget
        if self.soft.size:
            mm.rows(np.zeros(self.soft.size), self.v, self.soft_mult.astype(float), -np.inf, float(d.p),
                    name="violation_budget")
        # cost cuts on the grid
        self._cut_grid_rows()
        # scenario rows: ℓ0 − Σ γ a u + Σ J f − M v ≤ ℓmax
        sc = self.scen
        S = sc.size
        run_cols = (self.e if Sig > 1 else self.u).ravel()                 # (K·M)
        run_coef = -d.a[sc, :K, :].reshape(S, K * M) * (1.0 if Sig > 1 else float(d.gam[0]))
        parts_c = [np.broadcast_to(run_cols, (S, K * M))]
        parts_v = [run_coef]
        if K > 1 and d.P:
            sw_cols = self.f[:, M:].ravel()                                   # (K−1)·P
            parts_c.append(np.broadcast_to(sw_cols, (S, sw_cols.size)))
            parts_v.append(d.J[sc, 1:K, :].reshape(S, -1))
        pos = np.searchsorted(sc, self.soft)
        vcol = np.full(S, -1, dtype=np.int64)
        vval = np.zeros(S)
        vcol[pos] = self.v
        vval[pos] = -bigm[self.soft]
        has_v = vcol >= 0
        cols = np.concatenate(parts_c + [np.where(has_v, vcol, parts_c[0][:, 0])[:, None]], axis=1)
        vals = np.concatenate(parts_v + [vval[:, None]], axis=1)
        width = cols.shape[1]
        self.scen_rows = mm.rows(np.repeat(np.arange(S), width), cols, vals, -np.inf, d.lmax - d.l0,
                                 name="scenario", labels=[f"s{i}" for i in sc])
        mm.finish()

    # --------------------------------------------------------------- solution
    def solution_from_choice(self, ch: Choice) -> np.ndarray:
        d = self.data
        x = np.zeros(self.mm.ncol)
        K = ch.models.size
        ks = np.arange(K)
        x[self.u[ks, ch.models]] = 1.0
        if self.w is not None:
            x[self.w[ks, ch.models, ch.classes]] = 1.0
            x[self.e[ks, ch.models]] = d.gam[ch.classes]
        arc_index = {a: i for i, a in enumerate(self.arcs)}
        for k in range(1, K):
            x[self.f[k - 1, arc_index[(int(ch.models[k - 1]), int(ch.models[k]))]]] = 1.0
        self._start_counts(x, ch, ch.counts(d))
        if self.h is not None:
            for n, s in ch.held.items():
                x[self.h[:K, n, s]] = 1.0
        self._start_violations(x, ch)
        return x

    def choice_from_solution(self, x: np.ndarray) -> Choice | None:
        d = self.data
        u = np.rint(x[self.u]).astype(int)
        active = u.sum(axis=1) > 0
        n_ep = int(active.sum())
        if n_ep == 0:
            return None
        models = u[:n_ep].argmax(axis=1)
        if self.w is not None:
            w = np.rint(x[self.w]).astype(int)
            classes = w[np.arange(n_ep), models].argmax(axis=1)
        else:
            classes = np.zeros(n_ep, dtype=int)
        clusters = clusters_from_counts(models, classes, np.rint(x[self.N]).astype(int))
        if np.any(clusters < 0):
            return None
        held = held_classes(np.rint(x[self.q]).astype(int), clusters, classes)
        return d.evaluate(models, classes, clusters, held)


#: Alias of :class:`FlowModel` under its former name, kept for importers.
FastModel = FlowModel


def flow_size(data: Data, k_max: int) -> tuple[int, int, int]:
    """(rows, columns, non-zeros) of the flow model, estimated before the build.

    Dominated by the scenario block U·K·(|M|+|P|+1) and the per-epoch blocks;
    an upper estimate within a few per cent (a test compares it with the
    built model).
    """
    K, M, Nn, Sig, P = max(1, k_max), data.M, data.Nn, data.Sig, data.P
    U = int(data.uniq.size)
    A = M + P
    G = data.n_cuts
    cols = K * M * (1 + (2 * Sig if Sig > 1 else 0)) + (K - 1) * A + M * Nn * Sig + Nn * Sig + 1 + U
    rows = U + K + 2 * (K - 1) * M + 2 * K * M * (Sig > 1) + M * Sig + 3 * Nn * Sig + 1 + G
    nnz = U * (K * M + (K - 1) * P + 1) + 2 * (K - 1) * (A + M) + K * M * (2 * Sig + 2) * (Sig > 1) \
        + M * Sig * (Nn + K) + G * (M * Nn * Sig + 1) + 3 * Nn * Sig * (M + 1) \
        + K * M + M * Nn * Sig + U + 2 * M * Sig * Nn   # activity, capacity, budget, symmetry
    if data.inst.transfer_cost_mode == "per_epoch":
        cols += K * Nn * Sig
        rows += K * Nn * Sig
        nnz += K * Nn * Sig * (M + 2)
    return int(rows), int(cols), int(nnz)


def build_flow(ctx):
    """Catalog entry: tight big-M values, then :class:`FlowModel`."""
    data, bounds = ctx.data, ctx.bounds
    ctx.check_size("flow", *flow_size(data, bounds.k_max))
    t1 = time.perf_counter()
    inc = bounds.incumbent
    bounds.bigm = tight_bigm(data, bounds.k_min, bounds.k_max, inc.cost if inc is not None else None,
                              bounds.lam if inc is not None else None)
    ctx.timing["bigm"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    model = FlowModel(data, bounds)
    ctx.timing["matrix"] = time.perf_counter() - t1
    ctx.diag.update(bigm_mean=float(bounds.bigm.mean()), bigm_max=float(bounds.bigm.max()),
                    hard_scenario_rows=int(np.count_nonzero(bounds.bigm <= 0)))
    return model


__all__ = ["FlowModel", "FastModel", "flow_size", "build_flow"]
