"""DepL's expanded graph (Sec. IV-B) as data: :class:`GraphSpec`, built by
:func:`build_spec`, and the :class:`PathResult` of a minimum-cost path.

:func:`build_spec` rounds the real epoch times and loss surrogates into
integer bucket shifts. Time is always rounded *up* (⌈τ_m / (Tmax/η)⌉, at
least one bucket), so the represented elapsed time is an upper bound of the
real one along every path. With ``rounding="up"`` the loss shifts are
rounded up too and every path of the graph meets the surrogate target; with
``"nearest"`` a path must be verified with its exact surrogate value; the
unrounded shifts are kept for the exact-label DP (``"label"``). The
vertex/edge definition and the three loss axes are described in
:mod:`deplbench.solvers.expanded.graph`; the solvers of the graph are in
:mod:`deplbench.solvers.expanded.dp`.

References
----------
DepL paper, Sec. IV-B and Property 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import SolverError
from deplbench.limits import FLOAT_BYTES, check_memory
from deplbench.params import Param

#: The resolution η of the expanded graph: the one declaration of its default and
#: limits, shared by DepL's parameter table (``eta``) and :func:`build_spec` (a
#: direct call refuses what ``--param eta=`` refuses, with the same message).
ETA = Param(200, int, "expanded-graph resolution η (time and loss buckets)", low=1, high=5000)


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
        If η or ``eta_loss`` is outside :data:`ETA`'s limits, or the shapes disagree.
    """
    eta = ETA.convert("eta", eta)
    eta_loss = eta if eta_loss is None else ETA.convert("eta_loss", eta_loss)
    w = np.asarray(weights, dtype=float)
    tau = np.asarray(epoch_time, dtype=float)
    run_phi = np.asarray(run_phi, dtype=float)
    jump_phi = np.asarray(jump_phi, dtype=float)
    allowed = np.asarray(allowed, dtype=bool)
    M = w.size
    if tau.shape != (M,) or run_phi.ndim != 2 or run_phi.shape[1] != M or jump_phi.shape != (M, M):
        raise SolverError("expanded graph: inconsistent shapes of weights / epoch_time / run_phi / jump_phi")
    horizon = run_phi.shape[0]
    # The (K̄, M, M) tables below: total, exact, the rounded shift and its
    # clip/where temporaries, the int64 shift — about six at once.
    check_memory(6 * horizon * M * M * FLOAT_BYTES,
                 f"the expanded graph's shift tables (K̄ = {horizon} × |M|² = {M * M})",
                 "use a smaller horizon or fewer models")
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
    # wrap around to out-of-range indices.
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


__all__ = ["ETA", "GraphSpec", "PathResult", "build_spec"]
