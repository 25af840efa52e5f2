"""``milp-exact``: the optimum of the true chance-constrained problem over static plans.

A thin wrapper around :func:`deplbench.formulations.exact.static.run_exact_static`:
the sequence enumeration of the exact MILP with every feasibility decision
made by the rigorous violation bounds of :mod:`deplbench.formulations.evaluation.exact_violation`
instead of scenario counts. ``cost`` is the cheapest plan *proven* feasible,
``lower_bound`` a *proven* lower bound on the true static optimum; their gap
comes from numerical precision and the MILP gap only (no sampling, no
confidence level). "Proven" is about the instance's numbers as computed in
binary64 (γ, the run term, the jumps): a deterministic plan whose loss equals
ℓmax in floating point is feasible here, whatever a few 10⁻¹⁶ of real
arithmetic would say (exact_violation module docstring, "One decision, no
tolerance").

Applies where the enumeration does (acyclic switch graph, one dataset, non-
negative improvements: the DepL and PACT paper sets); elsewhere
:meth:`MilpExact.applies` says why in one line and points to ``certify``.

Examples
--------
>>> from deplbench.instances.generators import generate
>>> from deplbench.solvers.run import solve
>>> tiny = generate("scaling", n_models=2, n_clusters=1, horizon=4, seed=1)
>>> res = solve(tiny, "milp-exact", eval_samples=1000)
>>> res.status, res.lower_bound <= res.cost, res.evaluation["exact_verdict"]
('optimal', True, 'proven feasible')
"""

from __future__ import annotations

from typing import ClassVar

from deplbench.formulations.exact.static import (
    EXACT_STATIC_PARAMETERS,
    ExactStaticSettings,
    exact_static_applies,
    run_exact_static,
)
from deplbench.formulations.model.result import SolveResult
from deplbench.solvers.base import Param, PlotStyle, Solver


class MilpExact(Solver):
    """Deterministic bracket on the true static optimum (see the module docstring)."""

    name: ClassVar[str] = "milp-exact"
    label: ClassVar[str] = "MILP (exact probabilities)"
    description: ClassVar[str] = ("true chance-constrained static optimum: sequence enumeration judged by rigorous "
                                  "violation bounds (no sampling), proven bracket LB ≤ z* ≤ cost")
    exact: ClassVar[bool] = True
    reference_priority: ClassVar[int] = 1
    reference: ClassVar[str] = "exact-static"
    style: ClassVar[PlotStyle] = PlotStyle("#17becf", "*", "-")
    #: The one table of the exact static solve's options (formulations.exact.static).
    parameters: ClassVar[dict[str, Param]] = EXACT_STATIC_PARAMETERS

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        return exact_static_applies(instance)

    @classmethod
    def build_settings(cls, resolved) -> ExactStaticSettings:
        """The solve's :class:`~deplbench.formulations.exact.static.ExactStaticSettings`,
        from the resolved parameters (nothing checked again)."""
        return ExactStaticSettings.from_resolved(resolved)

    def run_settings(self, instance, settings: ExactStaticSettings) -> SolveResult:
        """Solve with the parameters :func:`~deplbench.solvers.run.solve` resolved once, under
        the one deadline it opened; never raises for an instance.

        The lattice's memory is estimated before anything is allocated and
        refused (status ``error``, naming ``memory_limit``) above the
        ``memory_limit`` budget that :func:`~deplbench.solvers.run.solve`
        opens; every phase reads the ``time_limit`` deadline and a stop
        is status ``time_limit`` with the bracket proven so far (never
        ``infeasible``)."""
        res = run_exact_static(instance, settings)
        res.algorithm = self.name
        return res


__all__ = ["MilpExact"]
