"""Exact oracle for knapsack-derived instances (DepL Property 1, run forwards).

DepL's Property 1 proves NP-hardness by turning a knapsack instance into one
of ours. Run forwards with the choices of SPEC §3 (deterministic improvement
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

References
----------
DepL paper, Property 1 (Sec. V) and eq. (1)–(2); SPEC §3 "Knapsack-derived".
D. Pisinger, "Where are the hard knapsack problems?", Computers & Operations
Research 32 (2005) — the instance classes of ``instances.generators``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from deplbench.errors import InstanceError

#: Refuse DP tables larger than this many cells (each layer keeps an argmin
#: table for reconstruction): ~400 MB of int32 would exhaust a laptop.
MAX_DP_CELLS = 100_000_000


class CoveringSolution(NamedTuple):
    """Optimum of the covering knapsack; unpacks as ``(weight, counts)``.

    Attributes
    ----------
    weight : float
        Minimum Σ n_i w_i (an integer-valued float), ``math.inf`` when no
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


def _as_integer_vector(name: str, data, *, minimum: int) -> np.ndarray:
    """Validate a 1-D vector of integral numbers ≥ ``minimum``."""
    try:
        arr = np.asarray(data, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InstanceError(f"{name} must be a list of numbers ({exc})") from None
    if arr.ndim != 1 or arr.size == 0:
        raise InstanceError(f"{name} must be a non-empty 1-D list of numbers")
    if not np.all(np.isfinite(arr)):
        raise InstanceError(f"{name} must contain only finite numbers")
    if not np.all(arr == np.round(arr)):
        raise InstanceError(f"{name} must contain integers (the DP is pseudo-polynomial)")
    if np.any(arr < minimum):
        raise InstanceError(f"{name} must all be ≥ {minimum}, got min {arr.min():g}")
    return arr.astype(np.int64)


def _validate(weights, values, target, max_items) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Check the DP inputs; return integer arrays, the integer target and K̄.

    Raises
    ------
    InstanceError
        Naming the offending argument.
    """
    w = _as_integer_vector("weights", weights, minimum=1)
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
    weights : array_like of int, shape (n,)
        Item weights w_i ≥ 1 (the knapsack weights; c_i = w_i² in the instance).
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
    DepL paper, Property 1; SPEC §3 (covering target ℓ(0) − ℓmax, at most K̄
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

    t_axis = np.arange(T + 1)
    # prev[t - v_i] for every (item, t): index table built once.
    gather = np.maximum(t_axis[None, :] - v[:, None], 0)          # (n, T+1)
    wf = w.astype(float)[:, None]
    f = np.full(T + 1, np.inf)
    f[0] = 0.0
    idx_dtype = np.int16 if n < 2**15 else np.int32
    choices: list[np.ndarray] = []  # per layer: item taken at t, or -1 (keep)
    for _ in range(K):
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
    assert int(counts @ w) == int(f[T]) and int(counts @ v) >= T, "covering DP reconstruction"
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


def knapsack_optimum_from_instance(instance) -> float:
    """Optimal real-x cost of a knapsack-derived instance, from its provenance alone.

    Parameters
    ----------
    instance : deplbench.instances.model.Instance
        A ``knapsack`` family instance (κ = 1, s = 0, c_i = w_i², β = 0).

    Returns
    -------
    float
        (min Σ w)² / Tmax, or ``math.inf`` if no plan of at most K̄ epochs
        reaches ℓ(0) − ℓmax.

    Raises
    ------
    InstanceError
        If the instance carries no knapsack items.

    Notes
    -----
    Uses only ``provenance.items``, ``initial_loss``, ``loss_max``,
    ``horizon`` and ``time_max``; never the solvers' code (SPEC §3).
    """
    w, v = knapsack_items(instance)
    target = float(instance.initial_loss) - float(instance.loss_max)
    weight, _ = covering_dp(w, v, target, int(instance.horizon))
    if not math.isfinite(weight):
        return math.inf
    return weight * weight / float(instance.time_max)


__all__ = [
    "CoveringSolution",
    "covering_dp",
    "knapsack_items",
    "knapsack_optimum_from_instance",
]
