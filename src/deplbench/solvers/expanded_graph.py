"""DepL's expanded graph (Sec. IV-B) and its minimum-cost path.

Vertices and edges
------------------
A vertex is (m, k, i, j): model m used in epoch k, elapsed-time bucket i and
loss bucket j. With resolution η:

* time: bucket i represents an elapsed time of i·Tmax/η, i = 0..η; an epoch of
  model m advances i by δ_m = ⌈τ_m / (Tmax/η)⌉ where τ_m is the epoch time of
  m on the most capable cluster at full capacity (the paper's "least
  restrictive option" for the later stages). Rounding *up* makes the
  represented time an upper bound of the real one along every path;
* loss: bucket j represents the tracked quantile surrogate
  ``target + j·Δℓ`` (see :mod:`.quantile_transform`), j = 1..J, with
  Δℓ = (ℓ(0) + headroom − target)/η (the paper's ℓ(0)/η step, measured from the
  target instead of from 0). An edge m → m' into epoch k shifts j by
  ⌈(φ_run(m', k) + φ_jump(m, m'))/Δℓ⌉ — rounded *up*, so the represented
  surrogate is an upper bound of the exact one. Bucket j ≤ 0 means the
  surrogate is at or below the target: the state is feasible and is joined to
  the virtual sink Ω by a zero-weight edge. States above bucket J or past
  bucket η in time are not represented (dropping them only removes paths).

Because every represented quantity is an upper bound, every path to Ω is a
feasible model sequence in the real quantities the surrogate models
(time at full capacity ≤ Tmax, surrogate quantile ≤ ℓmax).

Three loss axes (``rounding``)
------------------------------
``"up"``
    The paper's graph with conservative rounding, as above. Its price: every
    epoch can lose up to Δℓ of the loss budget, K·Δℓ along a K-epoch path —
    measured on the realistic AlexNet instance (K ≈ 50–100, η = 200) this
    makes ℓmax = 5 infeasible and nearly doubles the cost at ℓmax = 7.
``"nearest"``
    The same fixed graph with increments rounded to the nearest bucket (the
    error becomes a random walk instead of a drift); a path is then *not*
    guaranteed feasible and DepL verifies it with its exact surrogate,
    lowering the target and re-solving when it fails.
``"label"`` (DepL's default, :func:`solve_dp_labels`)
    The DP carries each state's *exact* surrogate value and buckets only
    decide which paths are merged; a path reaches Ω only if its exact value
    meets the target. Every returned path is feasible, as with ``"up"``, and
    rounding no longer accumulates. This is a label-setting DP, not a fixed
    graph, so it is compared with brute force rather than with networkx.

Edge weight
-----------
Entering epoch k with model m' costs a fixed w_{m'} > 0 (DepL uses
w_m = sqrt(κ*·c(m, D̂)) + λ·comm_m, see ``solvers.depl``): a path of
square-root weight W = Σ sqrt(κ*·c) has, on the most capable cluster, the
real-x optimal cost W² / (Tmax − Σ comm) whenever the capacity does not bind
(the water-filling closed form of ``formulations.allocation``; a lower bound
when it binds), and the λ·comm term is the tangent of that cost in the
communication time. For the knapsack-derived instances (no communication)
minimising W is exact. The plan's actual cost comes from stage 3.

Solving it
----------
Edges only go from layer k to k + 1, so the graph is a DAG and a dynamic
program over layers replaces Dijkstra. A layer is an array over
(model, time bucket, loss bucket), restricted to the bounding box of the live
states, and an edge class (m → m') is one shifted element-wise minimum
(min-plus propagation with a constant shift in i and j) — numpy does a whole
layer in |M|² vectorised operations. The layer's predecessor model is stored
(int8) for path recovery. Once every live state costs at least the best sink
found, later layers cannot improve (weights are positive) and the DP stops.

:func:`deplbench.solvers.expanded_reference.solve_networkx` builds the very same graph explicitly with networkx
(reachable vertices, or every vertex of the paper's definition with
``full=True``) and runs Dijkstra to Ω: the reference the tests and
``benchmarks/depl_targets.py`` compare against.

References
----------
DepL paper, Sec. IV-B and Property 2; G. Xue et al., "Finding a path subject
to many additive QoS constraints", IEEE/ACM ToN 2007 (ref. [21]).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import SolverError


@dataclass(frozen=True)
class GraphSpec:
    """Everything that defines one expanded graph (integers after rounding).

    Attributes
    ----------
    weights : ndarray, shape (M,)
        Edge weight w_m of an epoch on model m (> 0).
    time_steps : ndarray of int, shape (M,)
        δ_m, time buckets one epoch of m takes (≥ 1).
    n_time : int
        η: time buckets 0..η are represented.
    run_shift : ndarray of int, shape (K̄, M)
        Loss-bucket shift of the run term of m at epoch k (not used directly;
        kept for diagnostics).
    shift : ndarray of int, shape (K̄, M, M)
        Total loss-bucket shift of an edge m → m' entering epoch k (row k−1);
        for k = 1 the row ``first_shift`` is used instead.
    first_shift : ndarray of int, shape (M,)
        Loss-bucket shift of the first epoch on m' (no switch).
    allowed : ndarray of bool, shape (M, M)
    n_loss : int
        J: loss buckets 1..J are represented, 0 is "feasible".
    start_loss : int
        j0, the bucket of ℓ(0).
    horizon : int
        K̄, the largest number of epochs.
    forbidden_first : tuple
        Models that may not start (unused by DepL; for tests).
    """

    weights: np.ndarray
    time_steps: np.ndarray
    n_time: int
    shift: np.ndarray
    first_shift: np.ndarray
    allowed: np.ndarray
    n_loss: int
    start_loss: int
    horizon: int
    loss_step: float = 1.0
    time_step: float = 1.0
    target: float = 0.0
    #: Unrounded counterparts in loss-bucket units (for :func:`solve_dp_labels`).
    shift_exact: np.ndarray | None = None
    first_exact: np.ndarray | None = None
    start_exact: float = 0.0

    @property
    def n_models(self) -> int:
        return int(self.weights.size)

    @property
    def nominal_vertices(self) -> int:
        """|M|·K̄·(η+1)·J, the paper's vertex count |M|Kη² (plus Ω)."""
        return self.n_models * self.horizon * (self.n_time + 1) * self.n_loss + 1


@dataclass
class PathResult:
    """Minimum-cost path to Ω.

    Attributes
    ----------
    feasible : bool
    weight : float
        W of the best path (inf if none).
    models : list[int]
        Model index per epoch.
    end_time_bucket, end_loss_bucket : int
    vertices, edges : int
        Reachable vertices (+ Ω) and edges relaxed by the DP.
    layers : int
        Layers (epochs) explored before the DP stopped.
    seconds : float
    """

    feasible: bool
    weight: float = math.inf
    models: list = field(default_factory=list)
    end_time_bucket: int = -1
    vertices: int = 0
    edges: int = 0
    layers: int = 0
    seconds: float = 0.0


def build_spec(
    weights,
    epoch_time,
    time_max: float,
    run_phi,
    jump_phi,
    allowed,
    initial_loss: float,
    target: float,
    eta: int,
    eta_loss: int | None = None,
    rounding: str = "up",
) -> GraphSpec:
    """Round the real features into an integer :class:`GraphSpec` (conservatively).

    Parameters
    ----------
    weights : array_like, shape (M,)
        Edge weight per model (> 0).
    epoch_time : array_like, shape (M,)
        τ_m, real epoch time of m (full capacity of the most capable cluster).
    time_max : float
        Tmax.
    run_phi : array_like, shape (K̄, M)
        Additive loss surrogate of the run term per epoch and model.
    jump_phi : array_like, shape (M, M)
        Additive loss surrogate of a switch (0 on the diagonal, inf if not allowed).
    allowed : array_like of bool, shape (M, M)
    initial_loss : float
        ℓ(0).
    target : float
        The surrogate's threshold ℓmax − offset.
    eta : int
        Resolution η (time axis; also the loss axis unless ``eta_loss``).
    eta_loss : int, optional
        Loss-axis resolution (default η).
    rounding : {"up", "nearest"}
        Loss-shift rounding. ``"up"`` (default) makes every path of the graph
        feasible in the surrogate; ``"nearest"`` halves the typical
        accumulated error (a random walk instead of a drift) but a path must
        then be verified with its exact surrogate value (DepL does). Time is
        always rounded up.

    Returns
    -------
    GraphSpec

    Raises
    ------
    SolverError
        If η < 1 or the shapes disagree.
    """
    eta = int(eta)
    eta_loss = int(eta if eta_loss is None else eta_loss)
    if eta < 1 or eta_loss < 1:
        raise SolverError(f"parameter 'eta': must be >= 1, got {eta}")
    w = np.asarray(weights, dtype=float)
    tau = np.asarray(epoch_time, dtype=float)
    run_phi = np.asarray(run_phi, dtype=float)
    jump_phi = np.asarray(jump_phi, dtype=float)
    allowed = np.asarray(allowed, dtype=bool)
    M = w.size
    if tau.shape != (M,) or run_phi.ndim != 2 or run_phi.shape[1] != M or jump_phi.shape != (M, M):
        raise SolverError("expanded graph: inconsistent shapes of weights / epoch_time / run_phi / jump_phi")
    horizon = run_phi.shape[0]
    dt = time_max / eta
    # ⌈τ/Δt⌉ (at least one bucket): the represented time never undercuts the real one.
    # Non-finite or huge quotients (τ = inf, Tmax/η tiny) are clipped to
    # η + 1 buckets — an epoch that never fits — before the int64 cast, which
    # would otherwise wrap them to negative indices.
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        steps = np.nan_to_num(np.clip(np.ceil(tau / dt - 1e-12), 1, eta + 1), nan=eta + 1).astype(np.int64)
    # Loss axis: room for one worst switch above ℓ(0).
    finite_jumps = jump_phi[np.isfinite(jump_phi) & allowed]
    headroom = max(0.0, float(finite_jumps.max())) if finite_jumps.size else 0.0
    if not (math.isfinite(target) and math.isfinite(initial_loss)):
        raise SolverError(f"expanded graph: the loss target must be finite, got {target!r}")
    span = initial_loss + headroom - target
    if not (span > 0 and math.isfinite(span)):
        # the target is above the start (caller handles), or an infinite
        # headroom: fall back on a finite scale
        span = max(abs(initial_loss), abs(target), 1.0)
    dl = span / eta_loss
    n_loss = eta_loss
    if rounding not in ("up", "nearest", "label"):
        raise SolverError(f"parameter 'rounding': must be 'label', 'up' or 'nearest', got {rounding!r}")
    rnd = np.rint if rounding == "nearest" else (lambda v: np.ceil(v - 1e-12))
    start = int(min(math.ceil((initial_loss - target) / dl - 1e-12), n_loss + 1))
    total = run_phi[:, None, :] + np.where(allowed, jump_phi, 0.0)[None, :, :]
    exact = np.where(np.isfinite(total), total / dl, np.inf)
    # Shifts are clipped to [−(2·n_loss + 2), n_loss + 1] before the int64
    # cast: past either end a shift means the same thing (the target is
    # reached / the path is dead), and unclipped 1e300-sized quotients would
    # wrap around (an IndexError before this guard).
    lo_clip, hi_clip = -(2 * n_loss + 2), n_loss + 1
    with np.errstate(invalid="ignore", over="ignore"):
        shift = rnd(total / dl)
        shift = np.where(np.isfinite(shift), np.clip(shift, lo_clip, hi_clip), hi_clip).astype(np.int64)
        first = rnd(run_phi[0] / dl)
        first = np.where(np.isfinite(first), np.clip(first, lo_clip, hi_clip), hi_clip).astype(np.int64)
    return GraphSpec(
        weights=w, time_steps=steps, n_time=eta, shift=shift, first_shift=first,
        allowed=allowed, n_loss=n_loss, start_loss=start, horizon=horizon,
        loss_step=dl, time_step=dt, target=target,
        shift_exact=exact, first_exact=run_phi[0] / dl, start_exact=(initial_loss - target) / dl,
    )


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
        live_min = _live_min(cur, boxes)
        if not math.isfinite(live_min) or live_min + min_w >= best:
            break
        layers = k
        shift_k = spec.shift[k - 1]

        def edge(m, mp):
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
        live_min = _live_min(W, boxes)
        if not math.isfinite(live_min) or live_min + min_w >= best:
            break
        layers = k
        fexact_k = fexact[k - 1]

        def edge(m, mp):
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


__all__ = ["GraphSpec", "PathResult", "build_spec", "solve_dp", "solve_dp_labels"]
