"""The count formulation for order-invariant instances (the knapsack family).

What is solved
--------------
When every scenario's loss depends on the epoch counts only
(:func:`order_invariant`: run terms independent of the epoch index, zero
jumps, every switch allowed — the reduction of the DepL paper's Property 1),
a plan is only its counts N(m,n,σ): the loss ℓ0 − Σ γ_σ a_s(m) N(m,n,σ) is
linear, K = Σ N ≤ K̄, and the data rule, capacity row, λ cuts and transfer
costs are those of :mod:`.matrix`. Without epoch variables the knapsack
symmetry (any permutation of epochs) disappears, so such instances are
solved at once. Exact under the same contract as every formulation.

References
----------
DepL paper eqs. (2)–(8), Property 1 (knapsack reduction).
"""

from __future__ import annotations

import time

import numpy as np

from deplbench.formulations.milp.bounds import Bounds
from deplbench.formulations.milp.data import Choice, Data
from deplbench.formulations.milp.matrix import (
    MatrixFormulation,
    MatrixModel,
    cluster_rows,
    held_classes,
    shared_size,
)


def order_invariant(data: Data) -> bool:
    """True when every scenario's loss depends on the epoch counts only.

    That holds when each model's run term does not change with the epoch
    index (no decay and the same draw at every epoch, e.g. point masses),
    every jump is exactly zero and every switch is allowed: then any order of
    the same epochs gives the same loss, cost and time (the knapsack family).
    """
    M = data.M
    complete = bool(np.all(data.inst.allowed | np.eye(M, dtype=bool)))
    return (complete and bool(np.all(data.a == data.a[:, :1, :]))
            and (data.P == 0 or not np.any(data.J)))


class CountModel(MatrixFormulation):
    """Count formulation for order-invariant instances (see :func:`order_invariant`).

    The plan is only its epoch counts N(m,n,σ); the scenario loss is
    ℓ0 − Σ γ_σ a_s(m) N(m,n,σ) (linear), K = Σ N ≤ K̄. Data rule, capacity,
    λ cuts and transfer costs are the flow formulation's. Without epoch
    variables the knapsack symmetry (any permutation of epochs) disappears.
    """

    def __init__(self, data: Data, bounds: Bounds):
        self.data = d = data
        self.bounds = bounds
        K = self.K = max(1, bounds.k_max)
        Nn, Sig = d.Nn, d.Sig
        mm = self.mm = MatrixModel(d.labels())
        per_epoch = self._count_columns(K)
        self.H = mm.cols("H", (Nn, Sig), ub=np.inf, cost=1.0, axes=("cluster", "class")) if per_epoch else None
        scen, mult = d.uniq, d.mult
        a0 = d.a[scen, 0, :]                                  # (U, M): per-epoch amount at γ = 1
        # crude but valid big-M: no plan of ≥ 1 epoch ends above ℓ0 + K̄·(largest rise)
        rise = np.maximum(0.0, -(a0[:, :, None] * d.gam[None, None, :]).min(axis=(1, 2)))
        bigm = d.l0 + K * rise - d.lmax
        soft = (mult <= d.p) & (bigm > 0) if d.p > 0 else np.zeros(scen.size, dtype=bool)
        self.v = mm.cols("v", (int(soft.sum()),), integer=True, axes=([f"s{i}" for i in scen[soft]],))
        mm.rows(np.zeros(self.N.size), self.N.ravel(), 1.0, max(1.0, float(bounds.k_min)), float(K), name="epochs")
        cluster_rows(mm, d, self.N, self.q, K)
        if self.H is not None:   # the plan's epochs are Σ N
            self._per_epoch_transfer_rows(K, self.N.ravel(), np.ones(self.N.size))
        if soft.any():
            mm.rows(np.zeros(self.v.size), self.v, mult[soft].astype(float), -np.inf, float(d.p),
                    name="violation_budget")
        self._cut_grid_rows()
        # scenario rows: ℓ0 − Σ γ_σ a_s(m) N(m,n,σ) − M_s v_s ≤ ℓmax
        U = scen.size
        coef = -(a0[:, :, None, None] * d.gam[None, None, None, :]) * np.ones((1, 1, Nn, 1))   # (U, M, Nn, Σ)
        cols = np.broadcast_to(self.N.ravel(), (U, self.N.size))
        vcol = np.full(U, int(self.N.ravel()[0]))
        vval = np.zeros(U)
        vcol[soft] = self.v
        vval[soft] = -bigm[soft]
        mm.rows(np.repeat(np.arange(U), self.N.size + 1),
                np.concatenate([cols, vcol[:, None]], axis=1),
                np.concatenate([coef.reshape(U, -1), vval[:, None]], axis=1), -np.inf, d.lmax - d.l0,
                name="scenario", labels=[f"s{i}" for i in scen])
        self.soft = scen[soft]
        mm.finish()

    def solution_from_choice(self, ch: Choice) -> np.ndarray:
        x = np.zeros(self.mm.ncol)
        self._start_counts(x, ch, ch.counts(self.data))
        self._start_violations(x, ch)
        return x

    def choice_from_solution(self, x: np.ndarray) -> Choice | None:
        d = self.data
        N = np.rint(x[self.N]).astype(int)
        if N.sum() == 0:
            return None
        idx = np.argwhere(N > 0)                          # (m, n, σ) in index order
        reps = N[N > 0]
        models = np.repeat(idx[:, 0], reps)
        clusters = np.repeat(idx[:, 1], reps)
        classes = np.repeat(idx[:, 2], reps)
        held = held_classes(np.rint(x[self.q]).astype(int), clusters, classes)
        return d.evaluate(models, classes, clusters, held)




def build_counts(ctx):
    """Catalog entry: :class:`CountModel` (the catalog checks applicability)."""
    d = ctx.data
    rows, cols, nnz = shared_size(d)
    U = int(d.uniq.size)
    ctx.check_size("counts", rows + U + 2, cols + U + d.Nn * d.Sig, nnz + U * (d.M * d.Nn * d.Sig + 2) + 2 * U)
    t1 = time.perf_counter()
    model = CountModel(ctx.data, ctx.bounds)
    ctx.timing["matrix"] = time.perf_counter() - t1
    return model


__all__ = ["order_invariant", "CountModel", "build_counts"]
