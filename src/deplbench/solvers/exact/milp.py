"""The exact MILP as a registered solver (``deplbench solve INST --algo milp``).

A thin wrapper: the model lives in the package :mod:`deplbench.formulations.milp`
(imports flow downward only); this class declares its parameters for the
registry, the CLI (``--scenarios --seed --time-limit --gap --formulation
--write-lp``, the others through ``--param``) and the benchmark runner.

Examples
--------
>>> from deplbench.instances.generators import generate
>>> from deplbench.solvers.run import solve
>>> instance = generate("scaling", n_models=3, horizon=8, seed=0)
>>> res = solve(instance, "milp", scenarios=100, time_limit=30)
>>> res.status, round(res.cost, 2), res.gap
('optimal', 138.47, 0.0)
"""

from __future__ import annotations

from typing import ClassVar

from deplbench.formulations.general import MAX_DATASETS_GENERAL
from deplbench.formulations.milp import FORMULATIONS, MilpSettings, option_table, run_milp
from deplbench.formulations.model.result import SolveResult
from deplbench.solvers.base import Param, PlotStyle, Solver


class Milp(Solver):
    """Exact SAA optimum of problem (2)–(6) by HiGHS or SCIP (see ``formulations.milp``).

    ``status`` is ``optimal`` when (cost − bound)/cost ≤ ``gap``, otherwise
    ``time_limit`` (with the best plan and bound so far), ``feasible`` (a plan
    whose optimality is unproven for a reason said in the message, e.g. the
    node limit), ``infeasible`` (with the reason: no plan on the S scenarios,
    a proof about the SAA problem only, as the message says, unless every law
    is a point mass; :func:`~deplbench.formulations.milp.solve.saa_infeasible`)
    or ``error`` (never with a cost). Optimality refers to the S in-sample scenarios
    drawn with ``seed``; the returned plan is judged out-of-sample by
    :func:`deplbench.solvers.run.solve`.
    """

    name: ClassVar[str] = "milp"
    description: ClassVar[str] = "exact MILP of (2)-(6) with the scenario (SAA) quantile, HiGHS (or SCIP)"
    exact: ClassVar[bool] = True
    label: ClassVar[str] = "MILP"
    reference_priority: ClassVar[int] = 2
    reference: ClassVar[str] = "saa"
    style: ClassVar[PlotStyle] = PlotStyle("#1f77b4", "o", "--")
    #: The one table of the MILP's options (formulations.milp.options.option_table).
    parameters: ClassVar[dict[str, Param]] = option_table(FORMULATIONS)

    @classmethod
    def applies(cls, instance) -> tuple[bool, str]:
        """Not beyond :data:`MAX_DATASETS_GENERAL` datasets, where no formulation applies (every
        subset of datasets is a data class: ``fast`` and ``general`` enumerate them, the matrix
        formulations stop at fewer)."""
        if instance.n_datasets > MAX_DATASETS_GENERAL:
            return False, (f"datasets: {instance.n_datasets} datasets exceed the MILP's limit of "
                           f"{MAX_DATASETS_GENERAL} (every subset of datasets is enumerated)")
        return True, ""

    @classmethod
    def build_settings(cls, resolved) -> MilpSettings:
        """The solve's :class:`~deplbench.formulations.milp.MilpSettings`, from the
        resolved parameters (``general_settings`` parsed and the solver checked once)."""
        return MilpSettings.from_resolved(resolved)

    def run_settings(self, instance, settings: MilpSettings) -> SolveResult:
        """Solve within the deadline :func:`~deplbench.solvers.run.solve` opened;
        never raises for an instance."""
        return run_milp(instance, settings)


__all__ = ["Milp"]
