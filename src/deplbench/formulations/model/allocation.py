"""Exact real-x resource allocation for fixed model/cluster/data choices.

Once every epoch's model, cluster and data are fixed, what is left of problem
(2)–(6) is the convex separable programme

    min  Σ_k κ_k x_k
    s.t. Σ_k c_k / x_k + Σ_k comm_k ≤ Tmax          (eq. (4) with eq. (1))
         0 < x_k ≤ r_k                               (eq. (5))

with c_k = c(m_k, S_{n_k}) and comm_k = s(m_k)/b(n_k). Its KKT conditions give
x_k = min(r_k, θ·sqrt(c_k/κ_k)) for one price θ = sqrt(λ) ≥ 0, where λ is the
multiplier of the time budget; the total time is decreasing in θ, so θ is
found exactly by a sort over the breakpoints θ_k = r_k·sqrt(κ_k/c_k)
("water-filling"). Epochs on a free cluster (κ = 0) run at full capacity.

Without binding capacities the optimum is the closed form
``(Σ_k sqrt(c_k κ_k))² / (Tmax − Σ_k comm_k)``, the cost formula behind the
knapsack reduction of DepL Property 1 (docs/instances.md §4.3).

Every algorithm in the suite turns its discrete choices into a plan with this
module, so costs are comparable: differences come from the choices, never from
the allocation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from deplbench.errors import PlanError
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.instances.datalaw import compute_need

#: Relative slack accepted on the time budget (floating-point round-off only).
TIME_RTOL = 1e-9


@dataclass(frozen=True)
class Allocation:
    """Result of :func:`allocate`.

    Attributes
    ----------
    x : ndarray
        Allocation per epoch (empty when infeasible).
    cost : float
        Σ κ_k x_k (``inf`` when infeasible).
    time : float
        Total time Σ c_k/x_k + Σ comm_k.
    feasible : bool
    reason : str
        Why it is infeasible ("" otherwise).
    time_price : float
        λ, the KKT multiplier of the time budget (cost per unit time saved).
    capped : ndarray of bool
        Which epochs run at full capacity r_k.
    """

    x: np.ndarray
    cost: float
    time: float
    feasible: bool
    reason: str = ""
    time_price: float = 0.0
    capped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def allocate(compute, comm_time, unit_cost, capacity, time_max: float) -> Allocation:
    """Optimal real allocations x_k for fixed per-epoch choices.

    Parameters
    ----------
    compute : array_like, shape (K,)
        c_k > 0, the compute need of epoch k.
    comm_time : array_like, shape (K,)
        s(m_k)/b(n_k) ≥ 0, the communication time of epoch k.
    unit_cost : array_like, shape (K,)
        κ_k ≥ 0 of the epoch's cluster.
    capacity : array_like, shape (K,)
        r_k > 0 of the epoch's cluster.
    time_max : float
        Tmax of eq. (4).

    Returns
    -------
    Allocation
        ``feasible`` is False (with the reason) when even full capacity misses
        the deadline.

    Notes
    -----
    Exact up to floating point: the candidate price for "the i smallest
    breakpoints capped" is θ_i = Σ_{free} sqrt(c κ) / (T' − Σ_{capped} c/r),
    and the total time is monotone in θ, so the first breakpoint whose time
    fits the budget identifies the capped set. O(K log K).

    Examples
    --------
    >>> a = allocate([1.0, 4.0], [0.0, 0.0], [1.0, 1.0], [100.0, 100.0], 3.0)
    >>> round(a.cost, 12)      # (sqrt(1) + sqrt(4))**2 / 3
    3.0
    """
    c = np.asarray(compute, dtype=float)
    comm = np.asarray(comm_time, dtype=float)
    kappa = np.asarray(unit_cost, dtype=float)
    r = np.asarray(capacity, dtype=float)
    n = c.size
    if n == 0:
        return Allocation(np.zeros(0), 0.0, 0.0, True, capped=np.zeros(0, dtype=bool))
    budget = time_max - comm.sum()
    min_time = float(np.sum(c / r))
    if min_time > budget * (1 + TIME_RTOL):
        return Allocation(
            np.zeros(0), float("inf"), float(min_time + comm.sum()), False,
            reason=(
                f"even at full capacity the {n} epochs need {min_time + comm.sum():.6g} time units "
                f"(compute {min_time:.6g} + communication {comm.sum():.6g}) > Tmax = {time_max:.6g}"
            ),
        )
    x = r.copy()
    capped = np.ones(n, dtype=bool)
    paid = kappa > 0
    theta = 0.0
    if paid.any():
        free_time = float(np.sum(c[~paid] / r[~paid]))
        cp, kp, rp = c[paid], kappa[paid], r[paid]
        root = sqrt_product(cp, kp)
        brk = rp * np.sqrt(kp / cp)               # θ at which epoch k hits r_k
        order = np.argsort(brk, kind="stable")
        brk_s, root_s, cap_time_s = brk[order], root[order], (cp / rp)[order]
        # Time at θ = brk_s[i]: epochs 0..i capped (at their breakpoint or
        # beyond), the rest uncapped.
        capped_time = np.cumsum(cap_time_s)
        free_root = root_s.sum() - np.cumsum(root_s)
        time_at = free_time + capped_time + free_root / brk_s
        fits = np.nonzero(time_at <= budget * (1 + TIME_RTOL))[0]
        i = int(fits[0]) if fits.size else len(brk_s) - 1
        # Epochs 0..i−1 are capped; θ solves the budget for the rest.
        capped_before = capped_time[i - 1] if i > 0 else 0.0
        remaining = budget - free_time - capped_before
        theta = float(root_s[i:].sum() / remaining) if remaining > 0 else float(brk_s[i])
        theta = min(max(theta, brk_s[i - 1] if i > 0 else 0.0), brk_s[i])
        xp = np.minimum(rp, theta * np.sqrt(cp / kp))
        x[paid] = xp
        capped[paid] = xp >= rp * (1 - 1e-12)
    total_time = float(np.sum(c / x) + comm.sum())
    with np.errstate(over="ignore"):
        # beyond binary64 the cost is inf, and inf is the answer (the dearer option loses), not a warning
        cost = float(np.sum(kappa * x))
    return Allocation(
        x=x,
        cost=cost,
        time=total_time,
        feasible=True,
        time_price=theta * theta,
        capped=capped,
    )


def sqrt_product(a, b) -> np.ndarray:
    """√(a·b) elementwise, as √a·√b where the product overflows.

    a·b overflows for numbers the instance format accepts (a unit cost of
    1e306 times a compute need of 260), and the inf, then inf − inf = nan in
    the water-filling sums, left DepL without a path. Where the product is
    finite the result is √(a·b) itself, so no finite case changes.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(over="ignore"):
        product = a * b
    finite = np.isfinite(product)
    if product.ndim and finite.all():    # the common case: no fallback to compute
        return np.sqrt(product)
    return np.where(finite, np.sqrt(product), np.sqrt(a) * np.sqrt(b))


def epoch_parameters(instance, models, clusters, datasets) -> tuple[np.ndarray, ...]:
    """Per-epoch (compute c_k, comm_k, κ_k, r_k, γ_k) for given choices.

    Parameters
    ----------
    instance : Instance
    models, clusters : sequence of str
        m(k) and the cluster of each epoch.
    datasets : dict[str, list[str]]
        z(d, n) as the datasets held by each cluster.
    """
    mi = np.array([instance.model_index[m] for m in models], dtype=int)
    ci = np.array([instance.cluster_index[c] for c in clusters], dtype=int)
    volume = np.zeros(instance.n_clusters)
    gamma = np.zeros(instance.n_clusters)
    for name, held in datasets.items():
        if name in instance.cluster_index and held:
            volume[instance.cluster_index[name]], gamma[instance.cluster_index[name]] = instance.data_effect(held)
    compute = compute_need(instance.model_compute[mi], volume[ci])   # c(m, S) = c_m·V(S), datalaw
    comm = instance.model_size[mi] / instance.bandwidth[ci]
    return compute, comm, instance.unit_cost[ci], instance.capacity[ci], gamma[ci]


def allocation_for_choices(instance, models, clusters, datasets) -> Allocation:
    """:func:`allocate` for named choices (validated)."""
    for k, m in enumerate(models):
        if m not in instance.model_index:
            raise PlanError(f"epochs[{k}].model: unknown model {m!r}")
    for k, c in enumerate(clusters):
        if c not in instance.cluster_index:
            raise PlanError(f"epochs[{k}].cluster: unknown cluster {c!r}")
    compute, comm, kappa, cap, _ = epoch_parameters(instance, models, clusters, datasets)
    for k, c in enumerate(clusters):
        if compute[k] <= 0:
            raise PlanError(f"epochs[{k}].cluster: cluster {c!r} trains but holds no dataset")
    return allocate(compute, comm, kappa, cap, instance.time_max)


def plan_from_choices(instance, models, clusters, datasets) -> Plan | None:
    """A :class:`Plan` with the optimal real allocation, or None if even full
    capacity misses Tmax."""
    alloc = allocation_for_choices(instance, models, clusters, datasets)
    if not alloc.feasible:
        return None
    epochs = [Epoch(model=m, cluster=c, allocation=float(x)) for m, c, x in zip(models, clusters, alloc.x)]
    return Plan(epochs=epochs, datasets={k: list(v) for k, v in datasets.items() if v})


__all__ = ["Allocation", "allocate", "sqrt_product", "epoch_parameters", "allocation_for_choices",
           "plan_from_choices", "TIME_RTOL"]
