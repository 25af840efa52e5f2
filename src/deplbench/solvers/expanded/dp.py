"""Minimum-cost path to Ω on DepL's expanded graph (Sec. IV-B): the
layer-vectorised DAG dynamic programs :func:`solve_dp` and
:func:`solve_dp_labels`.

Edges only go from layer k to k + 1, so the graph is a DAG and a dynamic
program over layers replaces Dijkstra. A layer is an array over
(model, time bucket, loss bucket), restricted to the bounding box of the live
states, and an edge class (m → m') is one shifted element-wise minimum
(min-plus propagation with a constant shift in i and j). Once every live
state costs at least the best sink found, later layers cannot improve
(weights are positive) and the DP stops.

What each solves
----------------
* :func:`solve_dp` — the exact minimum-weight path of the fixed graph of a
  :class:`~deplbench.solvers.expanded.spec.GraphSpec` (``rounding="up"`` or
  ``"nearest"``); it equals Dijkstra on the explicit graph of
  :func:`deplbench.solvers.expanded.reference.solve_networkx`.
* :func:`solve_dp_labels` — the exact-label DP (``rounding="label"``): every
  returned path meets the surrogate target exactly and rounding does not
  accumulate, but merging at a bucket can drop a heavier path with a lower
  loss, so it is a heuristic compared (not equated) with the reference.

The graph itself is described in :mod:`deplbench.solvers.expanded.graph`.

References
----------
DepL paper, Sec. IV-B and Property 2; G. Xue et al., "Finding a path subject
to many additive QoS constraints", IEEE/ACM ToN 2007 (ref. [21]).
"""

from __future__ import annotations

import math
import time

import numpy as np

from deplbench.limits import FLOAT_BYTES, check_memory, check_time
from deplbench.solvers.expanded.spec import GraphSpec, PathResult


def _box(layer: np.ndarray, origin=(0, 0)) -> tuple[int, int, int, int] | None:
    """Bounding box (i0, i1, j0, j1), inclusive, of the finite entries of a 2-D array
    whose element [0, 0] sits at ``origin``."""
    fin = np.isfinite(layer)
    rows = np.flatnonzero(fin.any(axis=1))
    if rows.size == 0:
        return None
    cols = np.flatnonzero(fin[rows[0]:rows[-1] + 1].any(axis=0))
    return (int(rows[0]) + origin[0], int(rows[-1]) + origin[0],
            int(cols[0]) + origin[1], int(cols[-1]) + origin[1])


def _union(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return (min(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), max(a[3], b[3]))


def _live_min(layer: np.ndarray, boxes) -> float:
    """Least weight over the live boxes of one layer (inf when none is live)."""
    return min((float(layer[m, b[0]:b[1] + 1, b[2]:b[3] + 1].min()) for m, b in enumerate(boxes)
                if b is not None), default=math.inf)


def _wipe(layer: np.ndarray, boxes) -> None:
    """Reset what a recycled layer buffer held (only its boxes were written)."""
    for m, b in enumerate(boxes):
        if b is not None:
            layer[m, b[0]:b[1] + 1, b[2]:b[3] + 1] = np.inf


def _layer_plan(spec: GraphSpec, boxes, edge):
    """The edge classes m → m' leaving one layer, and the boxes they land in.

    ``edge(m, m')`` returns ``(payload, shifts)`` — the loss-bucket shifts
    an edge of that class may take — or None for no edge. Returns the plan
    ``[(m', m, d, i0, i1, payload)]`` (d = time step of m', rows i0..i1 of
    m's box that stay within the time budget) and the union of the shifted
    boxes per destination model (landings inside the loss range 1..J only).
    """
    M, nT, J = spec.n_models, spec.n_time, spec.n_loss
    plan = []
    dst_boxes = [None] * M
    for mp in range(M):
        d = int(spec.time_steps[mp])
        if d > nT:
            continue
        for m in range(M):
            b = boxes[m]
            if b is None or not spec.allowed[m, mp]:
                continue
            i0, i1 = b[0], min(b[1], nT - d)
            if i0 > i1:
                continue
            e = edge(m, mp)
            if e is None:
                continue
            payload, shifts = e
            plan.append((mp, m, d, i0, i1, payload))
            for s in shifts:
                lo, hi = max(b[2], 1 - s), min(b[3], J - s)
                if lo <= hi:
                    dst_boxes[mp] = _union(dst_boxes[mp], (i0 + d, i1 + d, lo + s, hi + s))
    return plan, dst_boxes


def _edge_to_omega(block: np.ndarray, w_mp: float, best: float, best_end, k: int, mp: int, m: int,
                   i0: int, d: int, j0: int):
    """Offer the lightest state of ``block`` (rows i0.., loss columns j0.. of
    model m in layer k−1; inf = none) an edge m → m' into Ω.

    Returns the updated (best, best_end): only a strictly lighter path wins.
    """
    idx = int(np.argmin(block))
    val = float(block.flat[idx]) + w_mp
    if val < best:
        ii, jj = np.unravel_index(idx, block.shape)
        return val, (k, mp, int(ii) + i0 + d, m, int(ii) + i0, int(jj) + j0)
    return best, best_end


def _path_result(t0: float, spec: GraphSpec, best: float, best_end, preds, stats, prev_loss) -> PathResult:
    """Package a DP's answer, walking back through its predecessor tables.

    ``best_end`` is (layer k, m', i', m_prev, i_prev, j_prev) or None;
    ``preds[layer-1][m]`` = (i0, j0, predecessor-model array, ...) or None;
    ``prev_loss(entry, layer, pm, m, i, j)`` gives the loss bucket of the
    predecessor state; ``stats`` = (vertices, edges, layers).
    """
    vertices, edges, layers = stats
    res = PathResult(feasible=best_end is not None, weight=best, vertices=vertices, edges=edges,
                     layers=layers, seconds=0.0)
    if best_end is not None:
        k, mp, i_end, m, i, j = best_end
        models = [mp]
        res.end_time_bucket = i_end
        while m >= 0:
            models.append(m)
            layer = k - len(models) + 1  # 1-based layer index of model m
            entry = preds[layer - 1][m]
            pm = -1 if entry is None else int(entry[2][i - entry[0], j - entry[1]])
            if pm < 0:
                break
            j = prev_loss(entry, layer, pm, m, i, j)
            i -= int(spec.time_steps[m])
            m = pm
        res.models = models[::-1]
    res.seconds = time.perf_counter() - t0
    return res


def solve_dp(spec: GraphSpec, count: bool = True, bound: float = math.inf) -> PathResult:
    """Minimum-weight path to Ω by a layer-vectorised dynamic program.

    Parameters
    ----------
    spec : GraphSpec
    count : bool
        Count reachable vertices and relaxed edges (diagnostics).
    bound : float
        Incumbent weight (e.g. from another graph with the same weights):
        states that cannot beat it are pruned; ``feasible`` is False if no
        lighter path exists.

    Returns
    -------
    PathResult

    Notes
    -----
    Layer k holds W(m, i, j) = least weight of a path reaching (m, k, i, j).
    Per layer and edge class (m → m') the update is one shifted element-wise
    minimum ``new[m'][i+δ, j+s] = min(new, cur[m][i, j])`` (the weight w_{m'}
    is added once afterwards). Only the bounding box of the live states of
    each model is touched — the reachable band is far smaller than the
    (η+1)×J layer — and two layer buffers are recycled, so the work per
    layer is proportional to the live band, not to η². Predecessor models
    are stored per layer inside each box (int8) for path recovery.
    """
    t0 = time.perf_counter()
    M, nT, J = spec.n_models, spec.n_time, spec.n_loss
    w, steps = spec.weights, spec.time_steps
    pred_dtype = np.int8 if M < 127 else np.int16
    best = float(bound)  # an incumbent weight: only strictly lighter paths are sought
    best_end = None  # (layer k (1-based), m', i', m_prev, i_prev, j_prev)
    vertices = 1 + 1  # source + Ω
    edges = 0
    check_memory(2 * M * (nT + 1) * (J + 1) * FLOAT_BYTES,
                 f"the expanded-graph DP's two layers (|M| = {M} × (η+1) = {nT + 1} × J = {J + 1})",
                 "use a smaller eta or fewer models")
    bufs = [np.full((M, nT + 1, J + 1), np.inf), np.full((M, nT + 1, J + 1), np.inf)]
    buf_boxes = [[None] * M, [None] * M]
    cur = bufs[0]
    boxes = [None] * M
    # Layer 1: from the source (time 0, loss bucket j0).
    for m in range(M):
        i1 = int(steps[m])
        if i1 > nT:
            continue
        j1 = int(spec.start_loss + spec.first_shift[m])
        edges += 1
        if j1 <= 0:
            if w[m] < best:
                best, best_end = float(w[m]), (1, m, i1, -1, 0, 0)
        elif j1 <= J:
            cur[m, i1, j1] = w[m]
            boxes[m] = (i1, i1, j1, j1)
    buf_boxes[0] = list(boxes)
    # preds[layer-1][m] = (i0, j0, int8 array) or None; layer 1 comes from the source.
    preds: list[list] = [[None] * M]
    if count:
        vertices += sum(b is not None for b in boxes)
    layers = 1
    min_w = float(w.min())
    for k in range(2, spec.horizon + 1):
        check_time(f"expanded-graph DP, layer {k} of {spec.horizon}")
        live_min = _live_min(cur, boxes)
        if not math.isfinite(live_min) or live_min + min_w >= best:
            break
        layers = k
        shift_k = spec.shift[k - 1]

        def edge(m, mp, shift_k=shift_k):   # bound now: called within this layer only
            s = int(shift_k[m, mp])
            return s, (s,)

        plan, dst_boxes = _layer_plan(spec, boxes, edge)
        slot = (k - 1) % 2  # layer 1 lives in bufs[0]
        new = bufs[slot]
        _wipe(new, buf_boxes[slot])  # recycle the buffer
        buf_boxes[slot] = list(dst_boxes)
        layer_pred = [None] * M
        for mp, b in enumerate(dst_boxes):
            if b is not None:
                layer_pred[mp] = (b[0], b[2], np.full((b[1] - b[0] + 1, b[3] - b[2] + 1), -1, dtype=pred_dtype))
        for mp, m, d, i0, i1, s in plan:
            b = boxes[m]
            # Part A: landing inside the represented loss range 1..J.
            lo, hi = max(b[2], 1 - s), min(b[3], J - s)
            if lo <= hi:
                src = cur[m, i0:i1 + 1, lo:hi + 1]
                dst = new[mp, i0 + d:i1 + d + 1, lo + s:hi + s + 1]
                better = src < dst
                np.copyto(dst, src, where=better)
                pi0, pj0, parr = layer_pred[mp]
                np.copyto(parr[i0 + d - pi0:i1 + d - pi0 + 1, lo + s - pj0:hi + s - pj0 + 1], m, where=better)
                if count:
                    edges += int(np.isfinite(src).sum())
            # Part B: landing at or below the target -> feasible, edge to Ω.
            lo, hi = b[2], min(b[3], -s)
            if lo <= hi:
                feas = cur[m, i0:i1 + 1, lo:hi + 1]
                if count:
                    edges += int(np.isfinite(feas).sum())
                best, best_end = _edge_to_omega(feas, w[mp], best, best_end, k, mp, m, i0, d, lo)
        for mp, b in enumerate(dst_boxes):
            if b is None:
                continue
            view = new[mp, b[0]:b[1] + 1, b[2]:b[3] + 1]
            view += w[mp]
            if count:
                vertices += int(np.isfinite(view).sum())
        # The union of the shifted source boxes bounds the live states (it is
        # not shrunk to the finite ones: measured, that costs more than it saves).
        cur, boxes = new, dst_boxes
        preds.append(layer_pred)
    # the predecessor's bucket is j minus the rounded shift of the edge taken
    return _path_result(t0, spec, best, best_end, preds, (vertices, edges, layers),
                        lambda entry, layer, pm, m, i, j: j - int(spec.shift[layer - 1, pm, m]))


#: Round-off tolerance of the exact-label feasibility test u <= 0, in loss
#: buckets: a path that meets the target exactly (integer knapsack values)
#: must not be lost to 1e-13 of accumulated floating-point error.
_U_TOL = 1e-9


def solve_dp_labels(spec: GraphSpec, count: bool = True, bound: float = math.inf) -> PathResult:
    """Minimum-weight path with *exact loss labels* (no accumulated rounding).

    The same layered DP as :func:`solve_dp`, but every state also stores the
    exact surrogate value u (in loss-bucket units above the target) of the
    path that reached it, and the loss bucket is j = ⌈u⌉ computed from that
    exact value instead of from a sum of rounded increments. An edge m → m'
    maps u to u + f (f the unrounded shift), so a state of bucket j lands in
    bucket j + ⌈f⌉ − 1 or j + ⌈f⌉ (two vectorised passes); a path reaches Ω
    only when its exact u ≤ 0. Buckets now only decide which paths are
    *merged* (the lighter one is kept), not what a path's loss is, so

    * every path returned meets the surrogate target exactly (in floating
      point), like the conservative graph, and
    * the rounding error no longer accumulates along the path (with rounding
      up, a K-epoch path loses up to K·Δℓ of its budget; here nothing).

    It is a label-setting DP rather than a fixed graph: merging can drop a
    heavier path with a lower loss, so it is a heuristic whose result is
    compared, not equated, with the networkx reference. Time stays rounded
    up per epoch (conservative).
    """
    t0 = time.perf_counter()
    M, nT, J = spec.n_models, spec.n_time, spec.n_loss
    w, steps = spec.weights, spec.time_steps
    fexact = spec.shift_exact
    pred_dtype = np.int8 if M < 127 else np.int16
    best = float(bound)  # an incumbent weight: only strictly lighter paths are sought
    best_end = None  # (layer k, m', i', m_prev, i_prev, j_prev)
    vertices, edges = 2, 0
    check_memory(4 * M * (nT + 1) * (J + 1) * FLOAT_BYTES,
                 f"the label DP's four layers (|M| = {M} × (η+1) = {nT + 1} × J = {J + 1})",
                 "use a smaller eta or fewer models")
    Wb = [np.full((M, nT + 1, J + 1), np.inf), np.full((M, nT + 1, J + 1), np.inf)]
    Ub = [np.full((M, nT + 1, J + 1), np.inf), np.full((M, nT + 1, J + 1), np.inf)]
    buf_boxes = [[None] * M, [None] * M]
    W, U = Wb[0], Ub[0]
    boxes = [None] * M
    for m in range(M):
        i1 = int(steps[m])
        if i1 > nT:
            continue
        u1 = spec.start_exact + float(spec.first_exact[m])
        edges += 1
        if u1 <= _U_TOL:
            if w[m] < best:
                best, best_end = float(w[m]), (1, m, i1, -1, 0, 0)
            continue
        if not math.isfinite(u1):  # +inf/NaN surrogate: the epoch can never reach the target
            continue
        j1 = int(math.ceil(u1))
        if j1 <= J:
            W[m, i1, j1], U[m, i1, j1] = w[m], u1
            boxes[m] = (i1, i1, j1, j1)
    buf_boxes[0] = list(boxes)
    preds: list[list] = [[None] * M]
    vertices += sum(b is not None for b in boxes)
    layers = 1
    min_w = float(w.min())
    jcols = np.arange(J + 1)
    for k in range(2, spec.horizon + 1):
        check_time(f"expanded-graph DP, layer {k} of {spec.horizon}")
        live_min = _live_min(W, boxes)
        if not math.isfinite(live_min) or live_min + min_w >= best:
            break
        layers = k
        fexact_k = fexact[k - 1]

        def edge(m, mp, fexact_k=fexact_k):   # bound now: called within this layer only
            f = float(fexact_k[m, mp])
            if math.isnan(f) or f == math.inf:
                return None
            # Past −(2J + 2) every label lands at or below the target anyway;
            # clipping keeps ceil() finite and the bucket arithmetic small.
            f = max(f, -(2.0 * J + 2.0))
            c = int(math.ceil(f))
            return (f, c), (c - 1, c)

        plan, dst_boxes = _layer_plan(spec, boxes, edge)
        slot = (k - 1) % 2
        Wn, Un = Wb[slot], Ub[slot]
        _wipe(Wn, buf_boxes[slot])  # stale U entries are masked by W = inf
        buf_boxes[slot] = list(dst_boxes)
        layer_pred = [None] * M
        for mp, b in enumerate(dst_boxes):
            if b is not None:
                shape = (b[1] - b[0] + 1, b[3] - b[2] + 1)
                layer_pred[mp] = (b[0], b[2], np.full(shape, -1, dtype=pred_dtype), np.zeros(shape, dtype=np.int32))
        for mp, m, d, i0, i1, (f, c) in plan:
            b = boxes[m]
            j0, j1 = b[2], b[3]
            srcW = W[m, i0:i1 + 1, j0:j1 + 1]
            u_new = U[m, i0:i1 + 1, j0:j1 + 1] + f
            live = np.isfinite(srcW)
            if count:
                edges += int(live.sum())
            # Reaching the target exactly: edge to Ω.
            feas = live & (u_new <= _U_TOL)
            if feas.any():
                best, best_end = _edge_to_omega(np.where(feas, srcW, np.inf), w[mp], best, best_end,
                                                k, mp, m, i0, d, j0)
            with np.errstate(invalid="ignore"):
                dj = np.ceil(u_new) - jcols[None, j0:j1 + 1]
            go = live & (u_new > _U_TOL)
            for s in (c - 1, c):
                lo, hi = max(j0, 1 - s), min(j1, J - s)
                if lo > hi:
                    continue
                sl = slice(lo - j0, hi - j0 + 1)
                cand = np.where(go[:, sl] & (dj[:, sl] == s), srcW[:, sl], np.inf)
                dst = Wn[mp, i0 + d:i1 + d + 1, lo + s:hi + s + 1]
                better = cand < dst
                if not better.any():
                    continue
                np.copyto(dst, cand, where=better)
                np.copyto(Un[mp, i0 + d:i1 + d + 1, lo + s:hi + s + 1], u_new[:, sl], where=better)
                pi0, pj0, parr, pj = layer_pred[mp]
                rows = slice(i0 + d - pi0, i1 + d - pi0 + 1)
                cols = slice(lo + s - pj0, hi + s - pj0 + 1)
                np.copyto(parr[rows, cols], m, where=better)
                np.copyto(pj[rows, cols], jcols[None, lo:hi + 1], where=better)
        new_boxes = [None] * M
        for mp, b in enumerate(dst_boxes):
            if b is None:
                continue
            view = Wn[mp, b[0]:b[1] + 1, b[2]:b[3] + 1]
            view += w[mp]
            new_boxes[mp] = _box(view, (b[0], b[2]))
            if count:
                vertices += int(np.isfinite(view).sum())
        W, U, boxes = Wn, Un, new_boxes
        preds.append(layer_pred)
    # the predecessor's bucket is stored beside its model (buckets come from exact labels)
    return _path_result(t0, spec, best, best_end, preds, (vertices, edges, layers),
                        lambda entry, layer, pm, m, i, j: int(entry[3][i - entry[0], j - entry[1]]))


__all__ = ["solve_dp", "solve_dp_labels"]
