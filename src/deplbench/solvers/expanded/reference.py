"""The expanded graph's reference implementation and exact size counts.

Kept apart from :mod:`deplbench.solvers.expanded.graph` (the fast layer-vectorised DP DepL
runs) because nothing on DepL's solving path needs them:

* :func:`build_networkx` / :func:`solve_networkx` — the same graph built
  explicitly with networkx and solved by Dijkstra, the reference the DP is
  tested against;
* :func:`reachable_size` — that graph's exact vertex and edge counts,
  computed with boolean arrays: the work counter Property 2's vertex count
  is judged on (reports/complexity.py);
* :func:`path_features`, :func:`exact_loss_units` — a path's quantities in
  the graph's rounded and exact arithmetic, for tests and diagnostics.

References
----------
DepL paper Sec. IV-B (the expanded graph) and Property 2.
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np

from deplbench.solvers.expanded.graph import GraphSpec, PathResult


def exact_loss_units(spec: GraphSpec, models) -> float:
    """Exact surrogate u (loss-bucket units above the target) at the end of a path."""
    models = [int(m) for m in models]
    # the unrounded tables every GraphSpec that expanded.spec builds carries
    first, shift = cast(np.ndarray, spec.first_exact), cast(np.ndarray, spec.shift_exact)
    u = spec.start_exact + float(first[models[0]])
    for k in range(1, len(models)):
        u += float(shift[k, models[k - 1], models[k]])
    return u


def build_networkx(spec: GraphSpec, full: bool = False):
    """The same expanded graph as an explicit ``networkx.DiGraph``.

    Vertices are ``"source"``, ``"omega"`` and (k, m, i, j); edge attribute
    ``weight``. Built in pure Python: the reference implementation, not a
    fast one.

    Parameters
    ----------
    spec : GraphSpec
    full : bool
        False (default): only the vertices reachable from the source, layer
        by layer. True: every vertex (m, k, i, j), k = 1..K̄, i = 0..η,
        j = 1..J, of the paper's definition (|M|·K̄·(η+1)·J of them) with all
        their out-edges, plus the feasible (j = 0) vertices joined to Ω —
        unreachable vertices cannot change the shortest path, so both graphs
        have the same answer.
    """
    import networkx as nx

    M, nT, J = spec.n_models, spec.n_time, spec.n_loss
    g = nx.DiGraph()
    g.add_node("source")
    g.add_node("omega")
    frontier = set()
    for m in range(M):
        i1 = int(spec.time_steps[m])
        if i1 > nT:
            continue
        j1 = spec.start_loss + int(spec.first_shift[m])
        if j1 > J:
            continue
        v = (1, m, i1, max(j1, 0))
        g.add_edge("source", v, weight=float(spec.weights[m]))
        if j1 <= 0:
            g.add_edge(v, "omega", weight=0.0)
        else:
            frontier.add(v)
    if full:
        frontier = {(1, m, i, j) for m in range(M) for i in range(nT + 1) for j in range(1, J + 1)}
        g.add_nodes_from(frontier)
    for k in range(2, spec.horizon + 1):
        nxt = set()
        edges: list[tuple[Any, Any, float]] = []
        for (_, m, i, j) in frontier:
            for mp in range(M):
                if not spec.allowed[m, mp]:
                    continue
                i2 = i + int(spec.time_steps[mp])
                if i2 > nT:
                    continue
                j2 = j + int(spec.shift[k - 1, m, mp])
                if j2 > J:
                    continue
                v = (k, mp, i2, max(j2, 0))
                edges.append(((k - 1, m, i, j), v, float(spec.weights[mp])))
                if j2 <= 0:
                    edges.append((v, "omega", 0.0))
                elif not full:
                    nxt.add(v)
        g.add_weighted_edges_from(edges)
        if full:
            nxt = {(k, m, i, j) for m in range(M) for i in range(nT + 1) for j in range(1, J + 1)}
            if k < spec.horizon:
                g.add_nodes_from(nxt)
        frontier = nxt
        if not frontier:
            break
    return g


#: Largest |M|²·K̄·(η+1)·(J+1) for which :func:`reachable_size` is computed
#: by DepL's diagnostics (about a second of numpy work); larger graphs report None.
REACHABLE_COUNT_MAX = 200_000_000


def reachable_size(spec: GraphSpec) -> tuple[int, int]:
    """Exact (vertices, edges) of :func:`build_networkx`'s graph, without building it.

    The work counter behind Property 2's vertex count: the vertices reachable
    from the source (plus ``source`` and ``omega``) and every edge between
    them, counted layer by layer with boolean arrays. Deterministic and equal
    to ``build_networkx(spec).number_of_nodes()/number_of_edges()``, at
    O(|M|²·K̄·η·J) vectorised work instead of Python loops.
    """
    M, nT, J = spec.n_models, spec.n_time, spec.n_loss
    steps = spec.time_steps
    vertices, edges = 2, 0
    live = np.zeros((M, nT + 1, J + 1), dtype=bool)   # non-terminal states j = 1..J (column 0 unused)
    for m in range(M):
        i1 = int(steps[m])
        if i1 > nT:
            continue
        j1 = spec.start_loss + int(spec.first_shift[m])
        if j1 > J:
            continue
        vertices += 1
        edges += 1                      # source → v
        if j1 <= 0:
            edges += 1                  # v → Ω
        else:
            live[m, i1, j1] = True
    for k in range(2, spec.horizon + 1):
        if not live.any():
            break
        nxt = np.zeros_like(live)
        term = np.zeros((M, nT + 1), dtype=bool)       # terminal vertices (k, m', i, 0)
        shift_k = spec.shift[k - 1]
        for m in range(M):
            src = live[m]
            rows = np.flatnonzero(src.any(axis=1))
            if rows.size == 0:
                continue
            cols = np.flatnonzero(src.any(axis=0))
            i_lo, i_hi, j_lo, j_hi = int(rows[0]), int(rows[-1]), int(cols[0]), int(cols[-1])
            for mp in range(M):
                if not spec.allowed[m, mp]:
                    continue
                d, sft = int(steps[mp]), int(shift_k[m, mp])
                # live source cells with i + d ≤ η and j + sft ≤ J each relax one edge
                i_top, j_top = min(i_hi, nT - d), min(j_hi, J - sft)
                if i_top < i_lo or j_top < j_lo:
                    continue
                block = src[i_lo:i_top + 1, j_lo:j_top + 1]
                edges += int(np.count_nonzero(block))
                js = np.arange(j_lo, j_top + 1) + sft      # landing buckets
                inside = js >= 1
                view = nxt[mp]  # index the view: a scalar, a slice and an array would reorder axes
                if inside.all():
                    view[i_lo + d:i_top + d + 1, js[0]:js[-1] + 1] |= block
                else:
                    if inside.any():
                        view[i_lo + d:i_top + d + 1, js[inside]] |= block[:, inside]
                    term[mp, i_lo + d:i_top + d + 1] |= block[:, ~inside].any(axis=1)
        n_term = int(term.sum())
        vertices += int(nxt.sum()) + n_term
        edges += n_term                 # each terminal vertex → Ω
        live = nxt
    return vertices, edges


def solve_networkx(spec: GraphSpec, full: bool = False) -> PathResult:
    """Reference: Dijkstra from the source to Ω on :func:`build_networkx`'s graph."""
    import networkx as nx

    t0 = time.perf_counter()
    g = build_networkx(spec, full=full)
    res = PathResult(feasible=False, vertices=g.number_of_nodes(), edges=g.number_of_edges())
    try:
        length, path = nx.single_source_dijkstra(g, "source", "omega", weight="weight")
    except nx.NetworkXNoPath:
        res.seconds = time.perf_counter() - t0
        return res
    res.feasible = True
    res.weight = float(length)
    res.models = [v[1] for v in path[1:-1]]
    res.layers = len(res.models)
    res.end_time_bucket = path[-2][2]
    res.seconds = time.perf_counter() - t0
    return res


def path_features(spec: GraphSpec, models) -> tuple[float, int, int]:
    """(weight, end time bucket, end loss bucket) of a model sequence in ``spec``'s
    rounded arithmetic — for tests and diagnostics."""
    models = [int(m) for m in models]
    weight = float(sum(spec.weights[m] for m in models))
    i = int(sum(spec.time_steps[m] for m in models))
    j = spec.start_loss + int(spec.first_shift[models[0]])
    for k in range(1, len(models)):
        j += int(spec.shift[k, models[k - 1], models[k]])
    return weight, i, j


__all__ = ["REACHABLE_COUNT_MAX", "build_networkx", "exact_loss_units", "path_features", "reachable_size",
           "solve_networkx"]
