"""``knapsack-dp``: the exact covering-knapsack DP as a registered solver.

On a knapsack-structured instance (DepL Property 1 run forwards: one dataset,
one cluster, no communication time, deterministic undecayed improvements,
free switches) problem (2)–(6) *is* a covering knapsack with repetition and a
cardinality bound, solved exactly by
:func:`deplbench.formulations.exact.knapsack.solve_knapsack_instance`. Its data —
weights sqrt(c(m, S)) and values γ(S)·A_m·X_m — are derived from the
instance's models, never read from ``provenance.items``: an instance whose
models were edited after generation is solved as it is, and the stale
provenance is reported in ``diagnostics["provenance_mismatch"]``.

Any other instance is declined (:meth:`KnapsackDP.applies`: status
``skipped`` with the field that breaks the reduction), never answered with a
wrong optimum; an instance the reduction accepts but the DP cannot solve
exactly (table too large, capacity binding) gives status ``error``. The returned plan
is the optimal epoch sequence with its closed-form allocation, so
:func:`deplbench.solvers.run.solve` judges it like every other plan.

References
----------
DepL paper, Property 1 (Sec. V) and eqs. (2)–(6).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, cast

from deplbench.errors import InstanceError
from deplbench.formulations.exact.knapsack import covering_problem, provenance_mismatch, solve_knapsack_instance
from deplbench.formulations.model.plan import Epoch, Plan
from deplbench.formulations.model.result import SolveResult
from deplbench.limits import MEMORY_LIMIT_PARAM, TIME_LIMIT_PARAM
from deplbench.solvers.base import Param, PlotStyle, Solver


class KnapsackDP(Solver):
    """Exact optimum of knapsack-structured instances by the covering DP."""

    name: ClassVar[str] = "knapsack-dp"
    label: ClassVar[str] = "knapsack DP"
    description: ClassVar[str] = ("exact covering-knapsack DP (Property 1); knapsack-structured instances "
                                  "only, data derived from the models")
    exact: ClassVar[bool] = True
    reference_priority: ClassVar[int] = 0
    style: ClassVar[PlotStyle] = PlotStyle("#7f7f7f", "*", ":")
    parameters: ClassVar[dict[str, Param]] = {"time_limit": TIME_LIMIT_PARAM, "memory_limit": MEMORY_LIMIT_PARAM}

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """Only knapsack-structured instances (:func:`~deplbench.formulations.exact.knapsack.covering_problem`)."""
        try:
            covering_problem(instance)
        except InstanceError as exc:
            return False, f"knapsack-dp does not apply: {exc}"
        return True, ""

    def run_settings(self, instance, settings) -> SolveResult:
        """Solve; an instance the DP cannot solve exactly gives status ``error`` with the reason."""
        try:
            sol = solve_knapsack_instance(instance)
        except InstanceError as exc:
            return SolveResult(algorithm=self.name, status="error",
                               message=f"knapsack-dp does not apply: {exc}")
        prob = sol.problem
        diag: dict[str, Any] = {"items": int(prob.weights.size), "target": prob.target, "max_items": prob.max_items,
                "dp_optimum": sol.cost}
        stale = provenance_mismatch(instance, prob)
        if stale is not None:
            diag["provenance_mismatch"] = stale
        if sol.sequence is None:
            return SolveResult(algorithm=self.name, status="infeasible",
                               message=(f"no multiset of at most {prob.max_items} epochs reaches the covering "
                                        f"target ℓ(0) − ℓmax = {prob.target:g}"),
                               lower_bound=math.inf, diagnostics=diag)
        cluster = instance.clusters[0].name
        dataset = instance.datasets[0].name
        # an optimum comes with its sequence and allocation
        sequence, allocation = sol.sequence, cast(Any, sol.allocation)
        plan = Plan(epochs=[Epoch(model=instance.models[m].name, cluster=cluster, allocation=float(x))
                            for m, x in zip(sequence, allocation)],
                    datasets={cluster: [dataset]})
        diag["epochs"] = len(sequence)
        message = "covering-knapsack DP optimum"
        if stale is not None:
            message += " (provenance.items are stale; solved from the models)"
        # an optimum past binary64 (κ(Σw)²/Tmax = inf) keeps its plan: the solve's cost check
        # reports it as an error, never as "no multiset reaches the target"
        return SolveResult(algorithm=self.name, status="optimal", message=message, plan=plan,
                           cost=sol.cost, lower_bound=sol.cost, gap=0.0 if math.isfinite(sol.cost) else None,
                           diagnostics=diag)


__all__ = ["KnapsackDP"]
