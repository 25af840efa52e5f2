"""Sparse-matrix assembly shared by the matrix formulations (counts, enumeration, flow).

What is here
------------
* :class:`MatrixModel` — columns (bounds, integrality, cost) and rows added
  in vectorised COO blocks, each block named, finished into one CSC matrix;
  the form every backend consumes (highspy directly, Pyomo, SCIP).
* :class:`MatrixFormulation` — what the matrix formulations share: integer
  epoch counts N(m,n,σ) per configuration, data-class binaries q(n,σ), the
  cost epigraph θ ≥ F(N) by λ cuts (the exactness contract of the package
  docstring), per-epoch transfer rows of the printed eq. (2), warm starts.
* :func:`cluster_rows` — the data rule (6) as printed or intended, the
  symmetry order of identical clusters and the capacity row
  Σ_j t_j N_j ≤ Tmax (the λ → ∞ cut of eqs. (4)–(5)).
* helpers that turn a solution's counts back into one cluster per epoch.

A formulation plugs in by subclassing :class:`MatrixFormulation`, creating
``self.mm = MatrixModel()``, calling :meth:`MatrixFormulation._count_columns`
and :func:`cluster_rows`, adding its own columns and rows, calling
``self.mm.finish()``, and implementing ``solution_from_choice`` and
``choice_from_solution`` (see ``catalog.py`` for the full protocol).

References
----------
DepL paper eqs. (2), (4)–(6); docs/DESIGN.md ("Model semantics").
"""

from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

from deplbench.formulations.milp.data import Choice, Data
from deplbench.formulations.model.scenarios import loss_threshold


def _safe(label) -> str:
    """A name fragment MPS and LP files accept (letters, digits, ``_`` and ``.``)."""
    return re.sub(r"[^A-Za-z0-9_.]", "_", str(label)) or "_"


class MatrixModel:
    """Columns, bounds, integrality and rows in COO blocks (vectorised build).

    ``labels`` maps an axis kind ("model", "cluster", "class", ...) to the
    names of its positions; a block declared with ``axes`` gets column names
    such as ``N_alexnet_A1_d0`` (see :meth:`col_names`).
    """

    def __init__(self, labels: dict | None = None):
        self.labels = dict(labels or {})
        self._axes: dict[str, tuple] = {}
        self.ncol = 0
        self._lb, self._ub, self._int, self._cost, self._names = [], [], [], [], []
        self._r, self._c, self._v, self._lo, self._hi = [], [], [], [], []
        self._row_names: list[tuple[str, int, int]] = []
        self.nrow = 0

    def cols(self, name: str, shape, lb=0.0, ub=1.0, integer=False, cost=0.0, axes=None) -> np.ndarray:
        """Add a block of columns of ``shape``; returns their indices in that shape.

        ``axes`` names each dimension: a key of ``labels`` or an explicit
        sequence of labels (for file names only; None numbers them).
        """
        if axes is not None:
            self._axes[name] = tuple(axes)
        n = int(np.prod(shape)) if shape else 1
        idx = np.arange(self.ncol, self.ncol + n).reshape(shape if shape else ())
        self.ncol += n
        def flat(value):
            value = np.asarray(value, float)
            return value.ravel().copy() if value.size == n else np.broadcast_to(value, (n,)).copy()

        self._lb.append(flat(lb))
        self._ub.append(flat(ub))
        self._int.append(np.full(n, bool(integer)))
        self._cost.append(flat(cost))
        self._names.append((name, idx))
        return idx

    def rows(self, row_local, col, val, lo, hi, name: str = "r", labels=None) -> np.ndarray:
        """Add rows; ``row_local`` numbers them 0..n−1 within this block.

        ``name`` labels the block: rows are written as ``name_i`` (numbered on
        over blocks of one name), or ``name_label`` with one label per row."""
        lo = np.atleast_1d(np.asarray(lo, float))
        hi = np.atleast_1d(np.asarray(hi, float))
        row_local = np.asarray(row_local, dtype=np.int64).ravel()
        n = max(lo.size, hi.size, int(row_local.max()) + 1 if row_local.size else 0)
        lo = np.broadcast_to(lo, (n,))
        hi = np.broadcast_to(hi, (n,))
        col = np.asarray(col, dtype=np.int64).ravel()
        val = np.asarray(val, float)
        val = val.ravel() if val.size == col.size else np.broadcast_to(val, col.shape).ravel()
        keep = val != 0
        self._r.append(row_local[keep] + self.nrow)
        self._c.append(col[keep])
        self._v.append(val[keep])
        self._lo.append(lo)
        self._hi.append(hi)
        ids = np.arange(self.nrow, self.nrow + n)
        self._row_names.append((name, self.nrow, n, None if labels is None else list(labels)))
        self.nrow += n
        return ids

    def _label(self, axis, i: int) -> str:
        names = self.labels.get(axis) if isinstance(axis, str) else axis
        if names is None or i >= len(names):
            return str(i)
        return _safe(names[i])

    def col_names(self) -> list[str]:
        """One unique name per column: the block name and its position, with
        labels where the block declared ``axes`` (e.g. ``N_alexnet_A1_d0`` for
        N(model, cluster, data class), ``u_k3_alexnet``), else indices
        (``N_2_0_1``)."""
        out = [""] * self.ncol
        for name, idx in self._names:
            idx = np.asarray(idx)
            if idx.ndim == 0:
                out[int(idx)] = name
                continue
            axes = self._axes.get(name)
            for pos in np.ndindex(idx.shape):
                parts = [self._label(axes[d], i) if axes and d < len(axes) else str(i) for d, i in enumerate(pos)]
                out[int(idx[pos])] = name + "_" + "_".join(parts)
        return _unique(out)

    def row_names(self) -> list[str]:
        """One name per row: the block name and the row's number in its block."""
        out, seen = [], {}
        for name, _start, n, labels in self._row_names:
            if labels is not None and len(labels) == n:
                out.extend(f"{name}_{_safe(lab)}" for lab in labels)
                continue
            first = seen.get(name, 0)   # blocks of one name are numbered on
            out.extend(f"{name}_{i}" for i in range(first, first + n))
            seen[name] = first + n
        return _unique(out)

    def finish(self):
        self.lb = np.concatenate(self._lb)
        self.ub = np.concatenate(self._ub)
        self.integer = np.concatenate(self._int)
        self.cost = np.concatenate(self._cost)
        self.row_lo = np.concatenate(self._lo) if self._lo else np.zeros(0)
        self.row_hi = np.concatenate(self._hi) if self._hi else np.zeros(0)
        r = np.concatenate(self._r) if self._r else np.zeros(0, np.int64)
        c = np.concatenate(self._c) if self._c else np.zeros(0, np.int64)
        v = np.concatenate(self._v) if self._v else np.zeros(0)
        self.A = sp.csc_matrix((v, (r, c)), shape=(self.nrow, self.ncol))
        self.A.sum_duplicates()
        return self


def _unique(names: list[str]) -> list[str]:
    """Append ``#k`` to repeated names (labels may coincide after _safe)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        out.append(n if k == 0 else f"{n}#{k}")
    return out


def cluster_rows(mm: MatrixModel, d: Data, N: np.ndarray, q: np.ndarray, K: int) -> None:
    """Rows shared by the fast formulations: data rule (6), symmetry, capacity.

    ``N`` (M, |N|, Σ) are the integer epoch counts per configuration and ``q``
    (|N|, Σ) the data-class binaries; K bounds any count.
    """
    M, Nn, Sig = d.M, d.Nn, d.Sig
    # a cluster trains on class σ only if it holds σ: Σ_m N[m,n,σ] ≤ K q[n,σ]
    cols = np.concatenate([N.transpose(1, 2, 0).reshape(Nn * Sig, M), q.reshape(Nn * Sig, 1)], axis=1)
    vals = np.tile(np.concatenate([np.ones(M), [-float(K)]]), Nn * Sig)
    mm.rows(np.repeat(np.arange(Nn * Sig), M + 1), cols, vals, -np.inf, 0.0, name="holds")
    if d.inst.data_rule == "printed":
        # eq. (6) for every k: one cluster holds data and trains throughout
        mm.rows(np.zeros(Nn * Sig), q.ravel(), 1.0, 1.0, 1.0, name="data_rule_printed")
    else:
        # one data class per cluster; holding data requires training (eq. (6), intended)
        mm.rows(np.repeat(np.arange(Nn), Sig), q.ravel(), 1.0, -np.inf, 1.0, name="one_class")
        cols = np.concatenate([q.reshape(Nn * Sig, 1), N.transpose(1, 2, 0).reshape(Nn * Sig, M)], axis=1)
        vals = np.tile(np.concatenate([[1.0], -np.ones(M)]), Nn * Sig)
        mm.rows(np.repeat(np.arange(Nn * Sig), M + 1), cols, vals, -np.inf, 0.0, name="holds_trains")
    # identical clusters are interchangeable (with their data): order them by
    # total epochs to cut the symmetric half of the search
    for n1, n2 in identical_cluster_pairs(d):
        cols = np.concatenate([N[:, n1, :].ravel(), N[:, n2, :].ravel()])
        vals = np.concatenate([np.ones(M * Sig), -np.ones(M * Sig)])
        mm.rows(np.zeros(cols.size), cols, vals, 0.0, np.inf, name="symmetry")
    # time at full capacity fits (the λ → ∞ cut; eqs. (4)–(5))
    mm.rows(np.zeros(M * Nn * Sig), N.ravel(), d.tmin_row.ravel(), -np.inf, d.T, name="capacity")


def shared_size(d: Data) -> tuple[int, int, int]:
    """(rows, columns, non-zeros) of what every matrix formulation has: the
    counts N, data binaries q, θ, the λ cut grid (``d.n_cuts`` dense rows
    over N) and :func:`cluster_rows` (an upper estimate)."""
    J = d.M * d.Nn * d.Sig
    C = d.Nn * d.Sig
    rows = d.n_cuts + 3 * C + d.Nn + 1 + d.Nn
    cols = J + C + 1
    nnz = d.n_cuts * (J + 1) + 3 * C * (d.M + 1) + J + 2 * d.M * d.Sig * d.Nn
    return rows, cols, nnz


def identical_cluster_pairs(d: Data) -> list[tuple[int, int]]:
    """Consecutive pairs of clusters with equal r, κ, b and β (a chain per
    group), found by hashing each cluster's numbers (O(|N|), as 20,000
    clusters need)."""
    inst = d.inst
    groups: dict[tuple, list[int]] = {}
    for n in range(d.Nn):
        key = (float(inst.capacity[n]), float(inst.unit_cost[n]), float(inst.bandwidth[n]),
               d.beta[n].tobytes())
        groups.setdefault(key, []).append(n)
    pairs = [(g[i], g[i + 1]) for g in groups.values() for i in range(len(g) - 1)]
    return sorted(pairs)


def held_classes(q: np.ndarray, clusters, classes) -> dict[int, int]:
    """Data class held per cluster, read from the rounded binaries ``q`` (|N|, Σ).

    A cluster that trains without a q set (the master's rows forbid it; only
    round-off could cause it) holds the class of its first epoch.
    """
    held = {int(n): int(q[n].argmax()) for n in range(q.shape[0]) if q[n].sum() > 0}
    for n, s in zip(clusters, classes):
        held.setdefault(int(n), int(s))
    return held


def clusters_from_counts(models: np.ndarray, classes: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Cluster of each epoch from the integer counts N (M, |N|, Σ).

    The epochs of configuration (m, σ), in order, fill cluster 0 with
    N[m,0,σ] epochs, then cluster 1, ... (any order is equivalent: clusters
    train sequentially and the loss depends only on the model sequence and
    the data each epoch sees). −1 marks epochs the counts do not cover.
    """
    clusters = np.full(models.size, -1)
    M, Nn, Sig = N.shape
    for m in range(M):
        for s in range(Sig):
            ep = np.nonzero((models == m) & (classes == s))[0]
            pos = 0
            for n in range(Nn):
                take = N[m, n, s]
                clusters[ep[pos:pos + take]] = n
                pos += take
    return clusters


class MatrixFormulation:
    """What the matrix formulations share: integer counts N(m,n,σ), data-class
    binaries q(n,σ), the cost epigraph θ ≥ F(N) by λ cuts, and warm starts.

    Subclasses set ``data``, ``bounds``, ``mm`` and ``H`` (the per-epoch
    transfer columns (|N|, Σ), or None) and call :meth:`_count_columns`.
    """

    #: λ of the cuts the cut loop added after the build (beyond the grid).
    extra_lams: tuple = ()
    H: np.ndarray | None = None
    #: HiGHS options this formulation sets on the direct highspy route.
    highs_options: dict = {}

    def _count_columns(self, K: int) -> bool:
        """Add N, q and θ (in this column order); True when the printed
        per-epoch transfer cost (2) needs columns of its own."""
        d, mm = self.data, self.mm
        # unusable configurations (one epoch exceeds Tmax) are fixed to 0
        self.N = mm.cols("N", (d.M, d.Nn, d.Sig), ub=np.where(d.usable, float(K), 0.0), integer=True,
                         axes=("model", "cluster", "class"))
        self.q = mm.cols("q", (d.Nn, d.Sig), integer=True, axes=("cluster", "class"),
                         cost=d.beta if d.inst.transfer_cost_mode == "once" else 0.0)
        self.theta = int(mm.cols("theta", (1,), ub=np.inf, cost=1.0)[0])
        return bool(d.inst.transfer_cost_mode == "per_epoch" and np.any(d.beta > 0))

    def _per_epoch_transfer_rows(self, K: int, epoch_cols: np.ndarray, epoch_coef: np.ndarray) -> None:
        """H[n,σ] ≥ β·K_plan − β·K·(1 − q[n,σ]), K_plan = Σ epoch_coef·epoch_cols
        (exact for binary q: the printed eq. (2) pays β every epoch)."""
        d = self.data
        for n in range(d.Nn):
            for s in range(d.Sig):
                b = float(d.beta[n, s])
                if b > 0:
                    cols = np.concatenate([[self.H[n, s], self.q[n, s]], epoch_cols])
                    vals = np.concatenate([[1.0, -b * K], -b * epoch_coef])
                    self.mm.rows(np.zeros(cols.size), cols, vals, -b * K, np.inf, name="transfer")

    def cut_row(self, lam: float):
        """(cols, vals, lo) of the cut θ ≥ Σ g(λ) N − λT."""
        d = self.data
        g = d.g(lam).ravel()
        with np.errstate(over="ignore"):    # λ·Tmax past binary64 (λ = inf, see Data.cut_grid): a vacuous row
            lo = -lam * d.T
        return (np.concatenate([[self.theta], self.N.ravel()]).astype(np.int32),
                np.concatenate([[1.0], -g]), lo)

    def _cut_grid_rows(self) -> None:
        for lam in self.data.cut_grid(self.bounds.lam):
            cols, vals, lo = self.cut_row(lam)
            self.mm.rows(np.zeros(cols.size), cols, vals, lo, np.inf, name="cut")

    def cut_lams(self) -> list:
        return list(self.data.cut_grid(self.bounds.lam)) + list(self.extra_lams)

    def _start_counts(self, x: np.ndarray, ch: Choice, N: np.ndarray) -> None:
        """Warm-start values of N, q, H and θ (the tightest cut at the plan)."""
        d = self.data
        x[self.N.ravel()] = N.ravel()
        for n, s in ch.held.items():
            x[self.q[n, s]] = 1.0
            if self.H is not None:
                x[self.H[n, s]] = d.beta[n, s] * ch.models.size
        theta = ch.alloc.cost
        for lam in self.cut_lams():
            # at λ = inf (costs near 1e308, Data.cut_grid) the cut is inf·0 = nan: max() keeps theta
            with np.errstate(over="ignore", invalid="ignore"):
                theta = max(theta, float(np.sum(d.g(lam) * N) - lam * d.T))
        x[self.theta] = theta

    def _start_violations(self, x: np.ndarray, ch: Choice) -> None:
        if self.soft.size:
            # the rule Data.choice counted with, so the start meets the row Σv ≤ p
            over = ch.losses[self.soft] > loss_threshold(self.data.lmax)
            x[self.v[over]] = 1.0


__all__ = ["MatrixModel", "MatrixFormulation", "shared_size", "cluster_rows", "identical_cluster_pairs",
           "held_classes", "clusters_from_counts"]
