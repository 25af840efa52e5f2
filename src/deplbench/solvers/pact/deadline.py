"""PACT's expanded graph: the least time from each vertex to ℓmax, for the forward searches.

In the label mode (``time_resolution = 0``, no time axis) a vertex of the
forward search keeps one path. Were it the least-weight one alone, a cheaper
but slower path would shadow a faster one at the vertex where they merge;
when the cheaper one cannot reach ℓmax by Tmax it is dropped later, and the
faster one, which could, would be gone: with a cluster cheaper and slower
than another (or free) PACT would find no path within Tmax where one exists.

:func:`least_times` is the backward DP of the least exact time (the
minimum epoch time c/r + s/b of each action, summed, as the labels are) from
every vertex to a feasible one. The forward searches keep a candidate only
where its elapsed time plus that least time is within Tmax. This removes
only paths that cannot finish, so the search stays a search of
deadline-feasible paths; and every kept label can finish (by the fastest
completion from its vertex, whose every prefix is then kept too), so the
label mode finds a path whenever one exists. The cost of the path it keeps
at a vertex is still the least among those that can finish from there, not
the least of the whole search (docs: :mod:`~deplbench.solvers.pact.pact`).

The tables are float64, one (model, cluster, loss bucket) layer per epoch,
a single cluster column where the cluster can change at every epoch (not the
printed data rule). Both statements above hold up to the rounding of the
sums (a few units in the last place, the backward sums against the forward
labels'), well inside the 10⁻⁹ relative slack of the deadline test: float32
tables (rounded down, so still valid) would keep a label up to 6·10⁻⁸ too
slow and lose the completeness.

References
----------
PACT's Alg. 1 (expanded graph) and Alg. 2 (shortest paths to Ω); the DepL
paper's eq. (4) (deadline).
"""

from __future__ import annotations

import numpy as np

from deplbench.limits import check_time

_INF = np.inf


def least_times(graph) -> list[np.ndarray]:
    """T[e][m, n, b]: the least exact time from the vertex (layer e, model m, cluster n, loss
    bucket b) to a vertex of bucket 0 within the K̄ layers (inf: none); n is 0 alone unless the
    printed data rule keeps the cluster. Layers e = 0..K̄."""
    M, N, Lb, K = graph.M, graph.N, graph.Lb, graph.K
    cols = N if graph.printed else 1
    nxt = np.full((M, cols, Lb), _INF)
    nxt[:, :, 0] = 0.0
    layers: list[np.ndarray] = [None] * (K + 1)  # type: ignore[list-item]
    layers[K] = nxt.copy()
    rows = np.arange(Lb)
    tau = np.where(graph.usable, graph.tau, _INF)                      # (M, N)
    for e in range(K - 1, -1, -1):
        check_time(f"PACT least-time DP, layer {e} of {K}")
        cur = np.full((M, cols, Lb), _INF)
        for m in range(M):
            for m2 in np.nonzero(graph.allowed[m])[0]:
                src = rows + int(graph.db[e, m, m2])
                ok = src < Lb
                here = np.full((N, Lb), _INF)
                # the target's time to go, per target cluster (one column: the same for all)
                ahead = nxt[m2][:, np.maximum(src[ok], 0)]
                here[:, ok] = (ahead if graph.printed else ahead[0][None]) + tau[m2][:, None]
                if graph.printed:
                    np.minimum(cur[m], here, out=cur[m])
                else:
                    np.minimum(cur[m, 0], here.min(axis=0), out=cur[m, 0])
        cur[:, :, 0] = 0.0
        layers[e] = cur
        nxt = cur
    return layers


def table_bytes(graph) -> int:
    """Bytes of :func:`least_times`' layers."""
    return (graph.K + 1) * graph.M * (graph.N if graph.printed else 1) * graph.Lb * 8


def can_finish(graph, e: int, m2: int | np.integer, n2s: np.ndarray, lb: int) -> np.ndarray:
    """(len(n2s), lb): the least time to go from layer ``e``'s vertices of model ``m2`` on the
    clusters ``n2s``, loss buckets 0..lb − 1 (to add to a label's exact time)."""
    t = graph.least_times()[e][m2]
    t = t[n2s] if graph.printed else np.broadcast_to(t[0], (len(n2s), t.shape[1]))
    return t[:, :lb]


__all__ = ["least_times", "can_finish", "table_bytes"]
