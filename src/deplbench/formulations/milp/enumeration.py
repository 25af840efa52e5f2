"""The sequence-enumeration formulation for acyclic switch graphs with one data class.

What is solved
--------------
The realistic families only switch towards more pruning, so the switch graph
is acyclic and a plan is a path of models with one block length each. Every
SAA-feasible, undominated sequence is found by exact in-sample checks (for
each path and all but the last block length, only the shortest feasible last
block can be optimal, since F grows with the counts; count vectors dominated
by another candidate's are dropped) and the MILP picks one sequence (binary
z_c) plus the cluster counts, data and λ cuts of :mod:`.matrix`. No scenario
rows remain. Used while at most ``MAX_CANDIDATES`` prefixes need checking;
beyond that the catalog falls back to the next formulation (flow).

Exact because every feasible plan is dominated by a candidate with the same
or fewer epochs of every model. The realistic AlexNet family (|M| = 3,
|N| = 2, |D| = 1, K̄ = 100) at S = 1000 is proven optimal in well under a
second; see ``perf/milp_targets.py``.

References
----------
DepL paper eqs. (2)–(8), Sec. VI-A (the realistic instances).
"""

from __future__ import annotations

import math
import time

import numpy as np

from deplbench import limits
from deplbench.formulations.milp.bounds import Bounds, cumulative_by_model, quantile_ok, shortest_last_block
from deplbench.formulations.milp.data import Choice, Data
from deplbench.formulations.milp.matrix import (
    MatrixFormulation,
    MatrixModel,
    cluster_rows,
    clusters_from_counts,
    held_classes,
    shared_size,
)
from deplbench.formulations.milp.options import Verdict

MAX_CANDIDATES = 200_000


def dag_paths(allowed: np.ndarray, limit: int = MAX_CANDIDATES) -> list[tuple[int, ...]] | None:
    """All model paths of the switch graph, or None when it has a cycle or
    more than ``limit`` paths."""
    M = allowed.shape[0]
    adj = [[j for j in range(M) if j != i and allowed[i, j]] for i in range(M)]
    state = [0] * M

    def cyclic(i):
        state[i] = 1
        for j in adj[i]:
            if state[j] == 1 or (state[j] == 0 and cyclic(j)):
                return True
        state[i] = 2
        return False

    if any(state[i] == 0 and cyclic(i) for i in range(M)):
        return None
    paths: list = []

    def walk(path):
        if len(paths) > limit:
            return
        paths.append(tuple(path))
        for j in adj[path[-1]]:
            walk(path + [j])

    for i in range(M):
        walk([i])
    return paths if len(paths) <= limit else None


def enumeration_size(paths, k_max: int) -> float:
    """Upper bound on the prefixes to enumerate: Σ_paths C(k_max, len − 1)."""
    return float(sum(math.comb(k_max, len(p) - 1) for p in paths))


def enumerate_candidates(data: Data, k_min: int, k_max: int, paths):
    """Every SAA-feasible model sequence that is not dominated (Sig = 1).

    A plan of an acyclic switch graph is a path of models with a block length
    each. For each path and each choice of all but the last block length, only
    the shortest SAA-feasible last block can be optimal when improvements are
    non-negative (a longer one costs more — F is increasing in the counts —
    and the shorter one is feasible); otherwise every feasible length is kept.
    Count vectors dominated componentwise by another candidate's are dropped.

    Returns (list of model-index arrays, counts (C, M)) or None on timeout.
    """
    S, M = data.S, data.M
    cum, cum_t = cumulative_by_model(data, 0)
    seqs: list[np.ndarray] = []

    def last_block(pre, start, model):
        if data.nonneg:
            L = shortest_last_block(data, pre, start, model, cum_t, k_min, k_max)
            return [(j, int(n)) for j, n in enumerate(L) if n]
        out = []
        for j in range(start.size):
            for length in range(max(1, k_min - start[j]), k_max - start[j] + 1):
                loss = pre[:, j] - (cum[:, start[j] + length, model] - cum[:, start[j], model])
                if quantile_ok(loss[:, None], data.p, data.lmax)[0]:
                    out.append((j, length))
        return out

    def extend(path, blocks, pre, start):
        # blocks: lengths fixed so far (all but the last two blocks of path)
        depth = len(blocks)
        if limits.expired():
            raise TimeoutError
        if depth == len(path) - 1:
            for _, length in last_block(pre[:, None], np.array([start]), path[-1]):
                seqs.append(np.repeat(path, blocks + [length]))
            return
        m, nxt = path[depth], path[depth + 1]
        p = data.inst.switch_index[(m, nxt)]
        remaining = len(path) - depth - 1
        lengths = np.arange(1, k_max - start - remaining + 1)
        if lengths.size == 0:
            return
        ends = start + lengths
        pre_next = (pre[:, None] - (cum[:, ends, m] - cum[:, start, m][:, None])
                    + data.J[:, np.minimum(ends, data.K - 1), p])
        if depth == len(path) - 2:
            for j, length in last_block(pre_next, ends, nxt):
                seqs.append(np.repeat(path, blocks + [int(lengths[j]), length]))
        else:
            for j, a in enumerate(lengths):
                extend(path, blocks + [int(a)], pre_next[:, j], int(ends[j]))

    try:
        for path in paths:
            extend(list(path), [], np.full(S, data.l0), 0)
    except TimeoutError:
        return None
    return pareto_sequences(seqs, M)


def pareto_sequences(seqs: list, M: int) -> tuple[list, np.ndarray]:
    """The sequences whose model-count vectors no other's dominates, and those counts.

    A sequence that uses at least as many epochs of every model as another
    candidate costs at least as much (cost (2) grows with every epoch), so
    only the Pareto-minimal count vectors matter. In lexicographic order a
    dominating vector comes first, so one pass with a vectorised test against
    the kept ones suffices.
    """
    if not seqs:
        return [], np.zeros((0, M))
    counts = np.array([np.bincount(s, minlength=M) for s in seqs], dtype=float)
    order = np.lexsort(counts.T[::-1])
    kept = np.empty((len(seqs), M))      # preallocated: growing it row by row would be quadratic
    keep: list = []
    for i in order:
        c = counts[i]
        if keep and (kept[:len(keep)] <= c).all(axis=1).any():
            continue
        kept[len(keep)] = c
        keep.append(i)
    keep = sorted(keep)
    return [seqs[i] for i in keep], counts[keep]


class EnumModel(MatrixFormulation):
    """Sequence-enumeration formulation for acyclic switch graphs (Sig = 1).

    One binary z_c per candidate model sequence (every SAA-feasible,
    undominated sequence, found by exact in-sample checks), the same integer
    cluster counts N, data binaries q and λ cuts as the flow formulation:
    Σ_c z_c = 1 and Σ_n N[m,n] = Σ_c n_m(c) z_c. The quantile is enforced by
    the enumeration itself (infeasible sequences are not candidates), so the
    model has no scenario rows; it is exact because every feasible plan is
    dominated by a candidate with the same or fewer epochs of every model.
    """

    #: HiGHS presolve off: the model is a choice among a few thousand
    #: candidate columns with no scenario rows, and presolve's probing is
    #: almost all of the solve while the search takes one node either way
    #: (docs/performance.md, "Measurements behind design choices").
    highs_options = {"presolve": "off"}

    def __init__(self, data: Data, bounds: Bounds, seqs, counts):
        self.data = d = data
        self.bounds = bounds
        self.seqs = list(seqs)
        self.counts_c = np.asarray(counts, dtype=float)
        C = len(self.seqs)
        K = self.K = int(max(s.size for s in self.seqs))
        M, Nn, Sig = d.M, d.Nn, d.Sig
        mm = self.mm = MatrixModel(d.labels())
        self.z = mm.cols("z", (C,), integer=True)
        per_epoch = self._count_columns(K)
        self.H = mm.cols("H", (Nn, Sig), ub=np.inf, cost=1.0, axes=("cluster", "class")) if per_epoch else None
        mm.rows(np.zeros(C), self.z, 1.0, 1.0, 1.0, name="one_sequence")
        # Σ_n N[m,n,0] = Σ_c n_m(c) z_c
        cols = np.concatenate([self.N[:, :, 0], np.broadcast_to(self.z, (M, C))], axis=1)
        vals = np.concatenate([np.ones((M, Nn)), -self.counts_c.T], axis=1)
        mm.rows(np.repeat(np.arange(M), Nn + C), cols, vals, 0.0, 0.0, name="counts")
        cluster_rows(mm, d, self.N, self.q, K)
        if self.H is not None:   # the plan's epochs are Σ_c K_c z_c
            self._per_epoch_transfer_rows(K, self.z, np.array([s.size for s in self.seqs], dtype=float))
        self._cut_grid_rows()
        mm.finish()
        self.index = {tuple(s.tolist()): i for i, s in enumerate(self.seqs)}

    def solution_from_choice(self, ch: Choice) -> np.ndarray | None:
        i = self.index.get(tuple(ch.models.tolist()))
        if i is None:
            return None
        x = np.zeros(self.mm.ncol)
        x[self.z[i]] = 1.0
        self._start_counts(x, ch, ch.counts(self.data))
        return x

    def choice_from_solution(self, x: np.ndarray) -> Choice | None:
        models = self.seqs[int(np.argmax(x[self.z]))]
        classes = np.zeros(models.size, dtype=int)   # Σ = 1: one data class
        clusters = clusters_from_counts(models, classes, np.rint(x[self.N]).astype(int))
        if np.any(clusters < 0):
            return None
        held = held_classes(np.rint(x[self.q]).astype(int), clusters, classes)
        return self.data.evaluate(models, classes, clusters, held)


def try_enumeration(data: Data, bounds: Bounds, diag: dict, timing: dict,
                     check_size=lambda *args, **kw: None):
    """The enumeration model when the switch graph is acyclic and small enough.

    Returns an :class:`EnumModel`, None (use the flow formulation) or an
    ``infeasible`` :class:`Verdict` when no sequence meets the quantile.
    """
    paths = dag_paths(data.inst.allowed)
    if paths is None or enumeration_size(paths, bounds.k_max) > MAX_CANDIDATES:
        return None
    t1 = time.perf_counter()
    found = enumerate_candidates(data, bounds.k_min, bounds.k_max, paths)
    timing["enumerate"] = time.perf_counter() - t1
    if found is None:
        return None
    seqs, counts = found
    inc = bounds.incumbent
    if inc is not None and not any(np.array_equal(s, inc.models) for s in seqs):
        # keep the incumbent as a candidate so it can warm-start HiGHS
        seqs = seqs + [inc.models.copy()]
        counts = np.vstack([counts, np.bincount(inc.models, minlength=data.M)[None, :]])
    diag.update(variant="enumeration", candidates=len(seqs))
    if not seqs:
        return Verdict("infeasible", (
            f"no model sequence of at most {bounds.k_max} epochs (the most that Tmax = {data.T:g} allows) "
            f"meets the quantile: each leaves more than {data.p} of {data.S} in-sample scenarios above "
            f"ℓmax = {data.lmax:g}"))
    C = len(seqs)
    rows, cols, nnz = shared_size(data)
    per_epoch = data.inst.transfer_cost_mode == "per_epoch"
    paid = int(np.count_nonzero(data.beta > 0)) if per_epoch else 0      # transfer rows (eq. (2) printed)
    check_size("enumeration", rows + 1 + data.M + paid, cols + C + data.Nn * data.Sig,
               nnz + C + data.M * (data.Nn + C) + paid * (C + 2))
    t1 = time.perf_counter()
    model = EnumModel(data, bounds, seqs, counts)
    timing["matrix"] = time.perf_counter() - t1
    return model


def build_enumeration(ctx):
    """Catalog entry: :func:`try_enumeration` (None declines: too many
    candidates, a cyclic switch graph, or the deadline passed)."""
    return try_enumeration(ctx.data, ctx.bounds, ctx.diag, ctx.timing, ctx.check_size)


__all__ = ["MAX_CANDIDATES", "dag_paths", "enumeration_size", "enumerate_candidates", "EnumModel",
           "try_enumeration", "build_enumeration", "pareto_sequences"]
