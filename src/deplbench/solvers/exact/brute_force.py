"""Exhaustive search over every plan of a tiny instance (independent of the MILP).

The ground truth for the MILP on instances small enough to enumerate: every
number of epochs K = 1..K̄, every model sequence whose consecutive pairs are
allowed switches, every cluster sequence, every dataset assignment z(d, n)
(each cluster holds any subset of D). For each candidate:

* the data rule (6) is checked as the instance reads it ("intended": a
  cluster holds data only if it trains at least once; "printed": only if it
  trains in every epoch), and a training cluster must hold data;
* the quantile (3) is judged with the SAME sample-average rule and the SAME
  in-sample scenarios as the MILP (``ScenarioSampler(instance, seed)
  .in_sample(S)``; at most ⌊(1−ω)S⌋ scenarios above ℓmax);
* the exact real-x cost comes from ``formulations.model.allocation.allocate``
  plus the transfer term (once or per epoch).

It shares no code with ``formulations/milp/``: only the core primitives
(instance model, scenario sampler, allocation). Instances larger than
K̄ ≤ 6, |M| ≤ 3, |N| ≤ 2, |D| ≤ 3 are declined (:meth:`BruteForce.applies`:
status ``skipped`` with the dimension beyond the limit).

Examples
--------
>>> from deplbench.instances.generators import generate
>>> from deplbench.solvers.run import solve
>>> tiny = generate("scaling", n_models=2, n_clusters=2, horizon=4, seed=1)
>>> res = solve(tiny, "brute-force", scenarios=50)
>>> res.status, round(res.cost, 2)
('optimal', 208.01)
"""

from __future__ import annotations

import itertools
import math
from typing import ClassVar

import numpy as np

from deplbench.formulations.model.allocation import allocate, sqrt_product
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.formulations.model.result import SolveResult
from deplbench.formulations.model.scenarios import ScenarioSampler, allowed_violations, loss_threshold
from deplbench.instances.datalaw import compute_need
from deplbench.limits import FLOAT_BYTES, MEMORY_LIMIT_PARAM, TIME_LIMIT_PARAM, check_memory, check_time
from deplbench.params import SEED
from deplbench.solvers.base import Param, PlotStyle, Solver

#: Largest instance the exhaustive search accepts (tiny instances only, docs/DESIGN.md registry table).
LIMITS = {"horizon": 6, "models": 3, "clusters": 2, "datasets": 3}


def _too_big(instance) -> str:
    sizes = {"horizon": instance.horizon, "models": instance.n_models,
             "clusters": instance.n_clusters, "datasets": instance.n_datasets}
    over = [f"{k} = {v} > {LIMITS[k]}" for k, v in sizes.items() if v > LIMITS[k]]
    if over:
        return ("instance too large to enumerate (" + ", ".join(over) + "); brute force accepts K̄ ≤ 6, "
                "|M| ≤ 3, |N| ≤ 2, |D| ≤ 3")
    return ""


def _model_sequences(instance, K: int):
    """All model index sequences of length K whose switches are allowed."""
    allowed = instance.allowed
    seqs: list[tuple[int, ...]] = [(m,) for m in range(instance.n_models)]
    for _ in range(K - 1):
        check_time(f"brute force, model sequences of {K} epochs")
        seqs = [s + (m,) for s in seqs for m in range(instance.n_models) if allowed[s[-1], m]]
    return seqs


def _cluster_sequences(instance, K: int, holders: set[int], printed: bool) -> list[tuple[int, ...]]:
    """The cluster sequences of K epochs that eq. (6) allows for the data held by ``holders``."""
    out = []
    for clusters in itertools.product(range(instance.n_clusters), repeat=K):
        used = set(clusters)
        if not used <= holders:
            continue  # a training cluster must hold data
        if printed and any(any(c != n for c in clusters) for n in holders):
            continue  # eq. (6) as printed: a holder trains in every epoch
        if not printed and not holders <= used:
            continue  # eq. (6), intended: a holder trains at least once
        out.append(clusters)
    return out


def plan_bounds(instance, m, C, volume, transfer: float) -> tuple[np.ndarray, ...]:
    """The plans of one model sequence ``m`` on every cluster sequence (rows of ``C``) at once.

    Returns per row the compute needs and communication times of its epochs,
    its slack Tmax − Σ comm and the cheap lower bound (Σ√(c·κ))² / slack +
    transfer (the uncapped closed form ≤ the exact cost) that prunes it.
    Each row's numbers are the ones a single plan's 1-D arrays give, bit for
    bit: rows of K ≤ 6 are summed in order, and each sum is squared as a
    scalar (libm ``pow``, where an array's ``** 2`` is x·x, which can round
    differently), so the search prunes as plan by plan. The bound of a row
    without slack (divided by 0 or −inf) is not meant to be read.
    """
    computes = compute_need(instance.model_compute[m][None, :], volume[C])
    kappas = instance.unit_cost[C]
    # a bandwidth of 5e-324 gives inf: no slack, skipped
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        comms = instance.model_size[m][None, :] / instance.bandwidth[C]
        slacks = instance.time_max - comms.sum(axis=1)
        # a square past binary64 is an inf bound: such a plan is never the cheapest
        squares = np.array([root ** 2 for root in np.sum(sqrt_product(computes, kappas), axis=1)])
        bounds = squares / slacks + transfer
    return computes, comms, slacks, bounds


def _assignments(instance):
    """Every z(d, n): a tuple with one dataset subset (tuple of indices) per cluster."""
    D = instance.n_datasets
    subsets = [sub for r in range(D + 1) for sub in itertools.combinations(range(D), r)]
    return itertools.product(subsets, repeat=instance.n_clusters)


def search(instance, scenarios: int, seed: int):
    """Exhaustive search; returns (best cost, plan or None, plans checked)."""
    n_terms = instance.n_models + len(instance.switch_pairs)
    check_memory(2 * scenarios * instance.horizon * n_terms * FLOAT_BYTES,
                 f"brute force's in-sample scenarios (S = {scenarios} × K̄ = {instance.horizon} × {n_terms} "
                 "random terms)", "use fewer scenarios or a smaller horizon")
    sc = ScenarioSampler(instance, seed).in_sample(scenarios)
    budget = allowed_violations(instance.omega, scenarios)
    beta = instance.transfer_matrix
    per_epoch = instance.transfer_cost_mode == "per_epoch"
    printed = instance.data_rule == "printed"
    names = [d.name for d in instance.datasets]
    best_cost, best_plan, checked = math.inf, None, 0
    quantile_cache: dict = {}
    for held in _assignments(instance):
        volume = np.zeros(instance.n_clusters)
        gamma = np.zeros(instance.n_clusters)
        once = 0.0
        for n, sub in enumerate(held):
            if sub:
                volume[n], gamma[n] = instance.data_effect([names[d] for d in sub])
                once += float(beta[list(sub), n].sum())
        holders = {n for n, sub in enumerate(held) if sub}
        for K in range(1, instance.horizon + 1):
            tuples = _cluster_sequences(instance, K, holders, printed)
            if not tuples:
                continue
            C = np.array(tuples, dtype=int)
            transfer = once * (K if per_epoch else 1)
            for models in _model_sequences(instance, K):
                m = np.array(models)
                check_time(f"brute force, {K}-epoch model sequences")
                checked += len(tuples)
                computes, comms, slacks, bounds = plan_bounds(instance, m, C, volume, transfer)
                for row in np.flatnonzero(~(slacks <= 0)):
                    if bounds[row] >= best_cost:
                        continue
                    clusters, c = tuples[row], C[row]
                    compute, comm, kappa = computes[row], comms[row], instance.unit_cost[c]
                    key = (models, tuple(gamma[c]))
                    ok = quantile_cache.get(key)
                    if ok is None:
                        losses = sc.final_losses(m, gamma[c])
                        ok = int(np.count_nonzero(losses > loss_threshold(instance.loss_max))) <= budget
                        quantile_cache[key] = ok
                    if not ok:
                        continue
                    alloc = allocate(compute, comm, kappa, instance.capacity[c], instance.time_max)
                    if not alloc.feasible:
                        continue
                    cost = alloc.cost + transfer
                    if cost < best_cost:
                        best_cost = cost
                        best_plan = Plan(
                            epochs=[Epoch(model=instance.models[i].name, cluster=instance.clusters[j].name,
                                          allocation=float(x)) for i, j, x in zip(models, clusters, alloc.x)],
                            datasets={instance.clusters[n].name: [names[d] for d in sub]
                                      for n, sub in enumerate(held) if sub},
                        )
    return best_cost, best_plan, checked


class BruteForce(Solver):
    """Exhaustive optimum over all plans of a tiny instance (same SAA rule as the MILP)."""

    name: ClassVar[str] = "brute-force"
    description: ClassVar[str] = "exhaustive search over every plan (tiny instances only)"
    exact: ClassVar[bool] = True
    label: ClassVar[str] = "brute force"
    reference_priority: ClassVar[int] = 1
    style: ClassVar[PlotStyle] = PlotStyle("#d62728", "s", "--")
    parameters: ClassVar[dict[str, Param]] = {
        "scenarios": Param(1000, int, "in-sample scenarios S (same sampler as the MILP)", low=1),
        "seed": SEED.but(help="seed of the in-sample scenarios"),
        "time_limit": TIME_LIMIT_PARAM,
        "memory_limit": MEMORY_LIMIT_PARAM,
    }

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """Only within :data:`LIMITS` (the reason names the dimension beyond it)."""
        reason = _too_big(instance)
        return not reason, reason

    def run_settings(self, instance, settings) -> SolveResult:
        """Enumerate; status ``skipped`` when the instance is too large."""
        scenarios, seed = settings["scenarios"], settings["seed"]
        applies, reason = self.applies(instance)
        if not applies:
            return SolveResult(algorithm=self.name, status="skipped", message=reason)
        cost, plan, checked = search(instance, scenarios, seed)
        # work counter: plans enumerated (after the data-rule filter)
        diag = {"plans_checked": checked, "work": {"plans_enumerated": checked}, "scenarios": scenarios,
                "allowed_violations": allowed_violations(instance.omega, scenarios)}
        if plan is None:
            return SolveResult(algorithm=self.name, status="infeasible", diagnostics=diag, message=(
                f"no plan of at most K̄ = {instance.horizon} epochs meets both the quantile (at most "
                f"{diag['allowed_violations']} of {scenarios} in-sample scenarios above ℓmax = "
                f"{instance.loss_max:g}) and Tmax = {instance.time_max:g}"))
        return SolveResult(algorithm=self.name, status="optimal", plan=plan, cost=cost, lower_bound=cost,
                           gap=0.0, diagnostics=diag, message=f"exhaustive over {checked} plans")


__all__ = ["BruteForce", "search", "LIMITS"]
