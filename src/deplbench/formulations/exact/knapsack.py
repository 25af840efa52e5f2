"""Exact oracle for knapsack-derived instances (DepL Property 1, run forwards).

DepL's Property 1 proves NP-hardness by turning a knapsack instance into one
of ours. Run forwards with the choices of docs/DESIGN.md (deterministic improvement
``v_i`` per epoch of model i, no decay, free switches, one cluster with
κ = 1 whose capacity never binds, no communication time, β = 0), the real-x
optimum of a fixed epoch sequence m_1..m_K is

    min Σ_k x_k  s.t.  Σ_k c_{m_k} / x_k ≤ Tmax   ⇒   (Σ_k sqrt(c_{m_k}))² / Tmax

(Lagrange: x_k ∝ sqrt(c_{m_k})). With c_i = w_i² this is (Σ_k w_{m_k})² / Tmax,
a monotone function of Σ w, so the instance is solved exactly by the
*covering knapsack with repetition and a cardinality bound*:

    minimise Σ_i n_i w_i   s.t.  Σ_i n_i v_i ≥ ℓ(0) − ℓmax,
                               Σ_i n_i ≤ K̄,  n_i ∈ ℕ

(an epoch may reuse a model, hence repetition; at most K̄ epochs). This module
solves it by a pseudo-polynomial dynamic program over (items used, value
reached). It deliberately shares no code with the MILP or any heuristic, so
it is an independent ground truth for competitive ratios.

Its data are derived from the instance itself (:func:`covering_problem`:
weights sqrt(c(m, S)), values γ(S)·A_m·X_m, one cluster's κ, Tmax, K̄),
never from ``provenance.items``: an instance edited after generation (say,
every ``loss_scale`` doubled) is solved as it is, and an instance outside
the reduction is refused with the field that breaks it. The registered
solver is :class:`deplbench.solvers.exact.knapsack_dp.KnapsackDP` (``knapsack-dp``).

References
----------
DepL paper, Property 1 (Sec. V) and eqs. (1)–(2); docs/DESIGN.md (knapsack-derived instances).
D. Pisinger, "Where are the hard knapsack problems?", Computers & Operations
Research 32 (2005) — the instance classes of ``instances.generators``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from deplbench.errors import InstanceError
from deplbench.limits import check_memory, check_time

#: Refuse DP tables larger than this many cells (each layer keeps an argmin
#: table for reconstruction): ~400 MB of int32 would exhaust a laptop.
MAX_DP_CELLS = 100_000_000


class CoveringSolution(NamedTuple):
    """Optimum of the covering knapsack; unpacks as ``(weight, counts)``.

    Attributes
    ----------
    weight : float
        Minimum Σ n_i w_i, ``math.inf`` when no
        multiset of at most ``max_items`` items reaches the target.
    counts : numpy.ndarray or None
        n_i per item (int64, sums to at most ``max_items``), ``None`` when
        infeasible.
    """

    weight: float
    counts: np.ndarray | None

    @property
    def feasible(self) -> bool:
        """Whether some multiset reaches the target."""
        return self.counts is not None


def _as_vector(name: str, data) -> np.ndarray:
    """Validate a non-empty 1-D vector of finite numbers."""
    try:
        arr = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InstanceError(f"{name} must be a list of numbers ({exc})") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InstanceError(f"{name} must be a non-empty 1-D list of numbers")
    if not np.all(np.isfinite(arr)):
        raise InstanceError(f"{name} must contain only finite numbers")
    return arr


def _as_integer_vector(name: str, data, *, minimum: int) -> np.ndarray:
    """Validate a 1-D vector of integral numbers ≥ ``minimum``."""
    arr = _as_vector(name, data)
    if not np.all(arr == np.round(arr)):
        raise InstanceError(f"{name} must contain integers (the DP is pseudo-polynomial)")
    if np.any(arr < minimum):
        raise InstanceError(f"{name} must all be ≥ {minimum}, got min {arr.min():g}")
    if np.any(arr > 2.0**53):
        # beyond 2^53 floats no longer hold every integer and int64 casts overflow
        raise InstanceError(f"{name} must all be ≤ 2^53 for an exact DP, got max {arr.max():g}")
    return arr.astype(np.int64)


def _validate(weights, values, target, max_items) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Check the DP inputs; return float weights, integer values, the integer target and K̄.

    Raises
    ------
    InstanceError
        Naming the offending argument.
    """
    w = _as_vector("weights", weights)
    if np.any(w <= 0):
        raise InstanceError(f"weights must all be > 0, got min {w.min():g}")
    v = _as_integer_vector("values", values, minimum=0)
    if w.size != v.size:
        raise InstanceError(f"weights and values must have equal length, got {w.size} and {v.size}")
    try:
        t = float(target)
    except (TypeError, ValueError):
        raise InstanceError(f"target must be a number, got {target!r}") from None
    if not math.isfinite(t):
        raise InstanceError(f"target must be finite, got {target!r}")
    # Values are integers, so Σv ≥ t  ⇔  Σv ≥ ⌈t⌉. A tiny tolerance absorbs
    # float noise of ℓ(0) − ℓmax computed from an instance (e.g. 37.000000001).
    t_int = max(0, math.ceil(t - 1e-9))
    if isinstance(max_items, bool) or not float(max_items).is_integer() or max_items < 0:
        raise InstanceError(f"max_items must be a non-negative integer, got {max_items!r}")
    return w, v, t_int, int(max_items)


def covering_dp(weights, values, target, max_items) -> CoveringSolution:
    """Exact minimum-weight multiset of at most ``max_items`` items with Σv ≥ target.

    Parameters
    ----------
    weights : array_like of float, shape (n,)
        Item weights w_i > 0 (the knapsack weights; sqrt(c(m_i, S)) in the
        instance). Only the values index the DP table, so weights may be real.
    values : array_like of int, shape (n,)
        Item values v_i ≥ 0 (per-epoch loss improvement of model i).
    target : float
        Required total value ℓ(0) − ℓmax; rounded up to an integer.
    max_items : int
        Cardinality bound K̄ (number of epochs); items may repeat.

    Returns
    -------
    CoveringSolution
        ``(weight, counts)``; ``weight`` is ``math.inf`` and ``counts`` is
        ``None`` when even ``max_items`` copies of the most valuable item
        fall short of the target.

    Raises
    ------
    InstanceError
        On non-integral, non-finite or out-of-range inputs, or when the DP
        table would exceed ``MAX_DP_CELLS`` cells.

    Notes
    -----
    Let f_j(t) be the least weight of at most j items with value ≥ t (values
    capped at the target T, so t ∈ {0..T}). Then f_0(0) = 0, f_0(t>0) = ∞ and

        f_j(t) = min( f_{j−1}(t),  min_i  w_i + f_{j−1}(max(t − v_i, 0)) ).

    Each layer is one numpy gather of shape (n, T+1) and a min over items, so
    the cost is O(K̄ · n · T) time and O(K̄ · T) memory for the argmin tables
    used to reconstruct the counts. The DP stops early once a layer changes
    nothing (more items cannot help after that).

    References
    ----------
    DepL paper, Property 1 (covering target ℓ(0) − ℓmax, at most K̄
    epochs, cost (Σ w)² / Tmax).

    Examples
    --------
    >>> covering_dp([3, 5], [4, 7], target=11, max_items=2)
    CoveringSolution(weight=8.0, counts=array([1, 1]))
    """
    w, v, T, K = _validate(weights, values, target, max_items)
    n = w.size
    if T == 0:
        return CoveringSolution(0.0, np.zeros(n, dtype=np.int64))
    if K * int(v.max()) < T:
        return CoveringSolution(math.inf, None)
    if (K + 1) * (T + 1) > MAX_DP_CELLS or n * (T + 1) > MAX_DP_CELLS:
        raise InstanceError(
            f"target {T} with max_items {K} and {n} items needs a DP table of "
            f"{(K + 1) * (T + 1):,} cells, above the limit {MAX_DP_CELLS:,}"
        )

    # the (n, T+1) index table, one layer's candidates and their gather, plus the argmin tables
    check_memory(3 * n * (T + 1) * 8 + (K + 1) * (T + 1) * 4,
                 f"the covering DP's tables ({n} items × target {T}, max_items {K})",
                 "use fewer items or a smaller covering target")
    t_axis = np.arange(T + 1)
    # prev[t - v_i] for every (item, t): index table built once.
    gather = np.maximum(t_axis[None, :] - v[:, None], 0)          # (n, T+1)
    wf = w.astype(float)[:, None]
    f = np.full(T + 1, np.inf)
    f[0] = 0.0
    idx_dtype = np.int16 if n < 2**15 else np.int32
    choices: list[np.ndarray] = []  # per layer: item taken at t, or -1 (keep)
    for layer in range(K):
        check_time(f"covering DP, layer {layer} of {K}")
        cand = f[gather] + wf                                     # (n, T+1)
        best_item = np.argmin(cand, axis=0)
        best = cand[best_item, t_axis]
        take = best < f
        if not take.any():
            break  # the optimum is reached with fewer items; stop early
        choice = np.where(take, best_item, -1).astype(idx_dtype)
        f = np.where(take, best, f)
        choices.append(choice)

    if not math.isfinite(f[T]):
        return CoveringSolution(math.inf, None)
    counts = np.zeros(n, dtype=np.int64)
    t = T
    for choice in reversed(choices):
        i = int(choice[t])
        if i >= 0:
            counts[i] += 1
            t = max(t - int(v[i]), 0)
    # The reconstruction walks back the argmin tables; check it against the
    # DP value so a bookkeeping bug cannot return an inconsistent answer.
    assert math.isclose(float(counts @ w), float(f[T]), rel_tol=1e-9) and int(counts @ v) >= T, \
        "covering DP reconstruction"
    return CoveringSolution(float(f[T]), counts)


def knapsack_items(instance) -> tuple[np.ndarray, np.ndarray]:
    """The (weights, values) stored in a knapsack-derived instance's provenance.

    Parameters
    ----------
    instance : deplbench.instances.model.Instance
        Produced by ``generate("knapsack", ...)``.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        Integer weights and values, item i ↔ model i.

    Raises
    ------
    InstanceError
        If the provenance carries no ``items`` with ``weights`` and ``values``.
    """
    items = getattr(instance.provenance, "items", None)
    if isinstance(items, dict):
        weights, values = items.get("weights"), items.get("values")
    else:
        weights = getattr(items, "weights", None)
        values = getattr(items, "values", None)
    if weights is None or values is None:
        raise InstanceError(
            "provenance.items must carry 'weights' and 'values' "
            "(only knapsack-derived instances have a DP oracle)"
        )
    w = _as_integer_vector("provenance.items.weights", weights, minimum=1)
    v = _as_integer_vector("provenance.items.values", values, minimum=0)
    return w, v


class CoveringProblem(NamedTuple):
    """The covering knapsack an instance reduces to, derived from its fields.

    Attributes
    ----------
    weights : numpy.ndarray
        w_m = sqrt(c(m, S)) per model (:func:`deplbench.instances.datalaw.compute_need`).
    values : numpy.ndarray
        v_m = γ(S)·A_m·X_m, the deterministic per-epoch loss decrease (int64).
    target : float
        ℓ(0) − ℓmax.
    max_items : int
        K̄.
    unit_cost, time_max : float
        κ of the one cluster and Tmax: a sequence of weight W costs κ·W²/Tmax.
    fixed_cost : float
        The one-time transfer cost β(d, n) (``transfer_cost_mode="once"``).
    """

    weights: np.ndarray
    values: np.ndarray
    target: float
    max_items: int
    unit_cost: float
    time_max: float
    fixed_cost: float


def covering_problem(instance) -> CoveringProblem:
    """Derive the covering knapsack of a knapsack-structured instance from the instance itself.

    Parameters
    ----------
    instance : deplbench.instances.model.Instance

    Returns
    -------
    CoveringProblem

    Raises
    ------
    InstanceError
        Naming the first field that breaks the reduction's assumptions: one
        dataset, one cluster, size 0 (no communication time), no decay,
        deterministic improvements, every switch allowed with a zero jump, no
        per-epoch transfer cost, integral per-epoch improvements.

    Notes
    -----
    Under these assumptions (DepL Property 1 run forwards, docs/DESIGN.md
    "Knapsack-derived instances") the loss is ℓ(K) = ℓ(0) − Σ_k v_{m_k}
    exactly and the real-x optimum of a sequence is κ(Σ_k w_{m_k})²/Tmax
    when capacity does not bind (checked by :func:`solve_knapsack_instance`).
    Everything is read from the models, cluster and dataset, never from
    ``provenance.items`` (which a user can leave stale when editing the
    instance — see :func:`provenance_mismatch`).
    """
    from deplbench.instances.datalaw import compute_need

    if instance.n_datasets != 1:
        raise InstanceError(f"datasets: the knapsack reduction needs exactly one dataset, "
                            f"the instance has {instance.n_datasets}")
    if instance.n_clusters != 1:
        raise InstanceError(f"clusters: the knapsack reduction needs exactly one cluster, "
                            f"the instance has {instance.n_clusters}")
    if not instance.unit_cost[0] > 0:
        # κ = 0: every plan within the deadline costs β alone; the covering DP ranks plans
        # by κ(Σw)²/Tmax and says nothing about which of them fit in Tmax at x ≤ r
        raise InstanceError("clusters[0].unit_cost: the knapsack reduction needs κ > 0, got 0 (every plan "
                            "within the deadline then costs the same; use milp)")
    for i, m in enumerate(instance.models):
        if m.size != 0:
            raise InstanceError(f"models[{i}].size: the knapsack reduction needs size 0 "
                                f"(no communication time), got {m.size:g}")
        if m.decay != "none":
            raise InstanceError(f"models[{i}].decay: the knapsack reduction needs 'none', got {m.decay!r}")
        if not m.improvement.is_deterministic:
            raise InstanceError(f"models[{i}].improvement: the knapsack reduction needs a "
                                f"deterministic improvement, got kind {m.improvement.kind!r}")
    n = instance.n_models
    if len(instance.switches) != n * (n - 1):
        raise InstanceError(f"switches: the knapsack reduction needs every ordered pair of models "
                            f"allowed ({n * (n - 1)} switches), the instance has {len(instance.switches)}")
    for p, sw in enumerate(instance.switches):
        if not (sw.jump.is_deterministic and sw.jump.mean() == 0.0):
            raise InstanceError(f"switches[{p}].jump: the knapsack reduction needs free switches "
                                "(a point mass at 0)")
    beta = float(np.asarray(instance.transfer_matrix).sum())
    if beta > 0 and instance.transfer_cost_mode == "per_epoch":
        raise InstanceError("transfer_cost_mode: a per-epoch transfer cost makes the cost depend on the "
                            "number of epochs, outside the knapsack reduction")
    volume, gamma = instance.data_effect(instance.all_datasets)
    with np.errstate(over="ignore", invalid="ignore"):
        need = np.array([compute_need(m.compute, volume) for m in instance.models], dtype=float)
        raw = np.array([gamma * m.loss_scale * m.improvement.mean() for m in instance.models], dtype=float)
    if not np.all(np.isfinite(need)):
        raise InstanceError("models: compute × dataset size overflows a float")
    rounded = np.round(raw)
    off = np.abs(raw - rounded) > 1e-9 * np.maximum(1.0, np.abs(raw))
    if np.any(off):
        i = int(np.nonzero(off)[0][0])
        raise InstanceError(f"models[{i}]: the per-epoch improvement γ·loss_scale·X = {raw[i]:.12g} is not "
                            "an integer; the covering DP is exact for integral improvements only")
    values = _as_integer_vector("per-epoch improvements", rounded, minimum=0)
    return CoveringProblem(
        weights=np.sqrt(need), values=values,
        target=float(instance.initial_loss) - float(instance.loss_max),
        max_items=int(instance.horizon), unit_cost=float(instance.unit_cost[0]),
        time_max=float(instance.time_max), fixed_cost=beta,
    )


def provenance_mismatch(instance, problem: CoveringProblem) -> str | None:
    """Why ``provenance.items`` disagree with the instance's own data, or None.

    ``None`` too when the instance carries no items. The instance is the
    truth; a mismatch only means its provenance is stale (e.g. a model's
    ``loss_scale`` was edited after generation).
    """
    try:
        w, v = knapsack_items(instance)
    except InstanceError:
        return None
    if w.size != problem.weights.size:
        return f"provenance.items has {w.size} items, the instance {problem.weights.size} models"
    bad_w = np.nonzero(~np.isclose(w.astype(float), problem.weights, rtol=1e-9))[0]
    if bad_w.size:
        i = int(bad_w[0])
        return (f"provenance.items.weights[{i}] = {w[i]} but models[{i}] gives sqrt(compute·volume) "
                f"= {problem.weights[i]:.12g}")
    bad_v = np.nonzero(v != problem.values)[0]
    if bad_v.size:
        i = int(bad_v[0])
        return (f"provenance.items.values[{i}] = {v[i]} but models[{i}] gives a per-epoch improvement "
                f"of {problem.values[i]}")
    return None


class KnapsackSolution(NamedTuple):
    """Exact optimum of a knapsack-structured instance.

    ``cost`` is ``math.inf`` and ``sequence``/``allocation`` are None when
    no plan of at most K̄ epochs reaches ℓmax.
    """

    cost: float
    sequence: list | None
    allocation: np.ndarray | None
    problem: CoveringProblem


def solve_knapsack_instance(instance) -> KnapsackSolution:
    """Exact optimum of a knapsack-structured instance (covering DP + closed-form allocation).

    Raises
    ------
    InstanceError
        The instance is not knapsack-structured (:func:`covering_problem`),
        the DP table would be too large, or the cluster's capacity binds at
        the optimum (the closed form κW²/Tmax then no longer holds).
    """
    from deplbench.formulations.model.allocation import allocate

    prob = covering_problem(instance)
    weight, counts = covering_dp(prob.weights, prob.values, prob.target, prob.max_items)
    if counts is None:
        return KnapsackSolution(math.inf, None, None, prob)
    sequence = [int(i) for i in np.repeat(np.arange(counts.size), counts)]
    if not sequence:  # target ≤ 0 cannot happen for a valid instance (ℓmax < ℓ(0))
        raise InstanceError("loss_max: the covering target is met without training")
    k = len(sequence)
    need = prob.weights[sequence] ** 2
    alloc = allocate(need, np.zeros(k), np.full(k, prob.unit_cost), np.full(k, float(instance.capacity[0])),
                     prob.time_max)
    if not alloc.feasible or np.any(alloc.capped):
        raise InstanceError(f"clusters[0].capacity: binds at the covering optimum ({alloc.reason or 'capped'}); "
                            "the closed form κ(Σw)²/Tmax behind the DP does not hold")
    cost = prob.unit_cost * weight * weight / prob.time_max + prob.fixed_cost
    return KnapsackSolution(float(cost), sequence, alloc.x, prob)


def knapsack_optimum_from_instance(instance) -> float:
    """Optimal real-x cost of a knapsack-structured instance.

    Parameters
    ----------
    instance : deplbench.instances.model.Instance
        Typically a ``knapsack`` family instance (κ = 1, s = 0, c_i = w_i², β = 0).

    Returns
    -------
    float
        κ(min Σ w)²/Tmax (+ a one-time transfer cost), or ``math.inf`` if no
        plan of at most K̄ epochs reaches ℓ(0) − ℓmax.

    Raises
    ------
    InstanceError
        If the instance is not knapsack-structured (see :func:`covering_problem`).

    Notes
    -----
    Derived from the instance's models, cluster and dataset alone
    (:func:`covering_problem`), never from ``provenance.items`` and never
    from the solvers' code, so it is an independent ground truth.
    """
    return solve_knapsack_instance(instance).cost


__all__ = [
    "CoveringProblem",
    "CoveringSolution",
    "KnapsackSolution",
    "covering_problem",
    "provenance_mismatch",
    "solve_knapsack_instance",
    "covering_dp",
    "knapsack_items",
    "knapsack_optimum_from_instance",
]
