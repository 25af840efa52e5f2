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

from deplbench import limits
from deplbench.formulations.milp import BACKENDS, FORMULATIONS, MEMORY_LIMIT_GIB, solve_milp
from deplbench.formulations.model.result import SolveResult
from deplbench.solvers.base import Param, PlotStyle, Solver


class Milp(Solver):
    """Exact SAA optimum of problem (2)–(6) by HiGHS or SCIP (see ``formulations.milp``).

    ``status`` is ``optimal`` when (cost − bound)/cost ≤ ``gap``, otherwise
    ``time_limit`` (with the best plan and bound so far), ``feasible`` (a plan
    whose optimality is unproven for a reason said in the message, e.g. the
    node limit), ``infeasible`` (with the reason) or ``error`` (never with a
    cost). Optimality refers to the S in-sample scenarios
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
    parameters: ClassVar[dict[str, Param]] = {
        "scenarios": Param(1000, int, "in-sample scenarios S of the SAA quantile", low=1),
        "seed": Param(0, int, "seed of the in-sample scenarios (ScenarioSampler)", low=0),
        "time_limit": Param(60.0, float, "wall-clock seconds for build and solve (none: no limit)", low=0.0,
                            low_inclusive=False, nullable=True),
        "gap": Param(1e-4, float, "relative optimality gap (UB − LB)/UB", low=0.0, low_inclusive=False,
                     high=0.999999),
        "threads": Param(1, int, "HiGHS threads", low=1, high=limits.MAX_THREADS),
        "formulation": Param("fast", str, "fast (picks by structure: counts for order-invariant losses, "
                             "sequence enumeration for acyclic switch graphs, else flow; general beyond 6 "
                             "datasets) or one of them forced; naive is the textbook model, general the block "
                             "branch-and-bound for any switch graph and up to 12 datasets", choices=FORMULATIONS),
        "write_lp": Param(None, str, "write the first master model to FILE (.lp or .mps)", nullable=True),
        "backend": Param("highs", str, "fast/flow model to HiGHS directly (highs) or through Pyomo (pyomo)",
                         choices=BACKENDS),
        "node_limit": Param(None, int, "branch-and-bound nodes over all master solves (a machine-independent "
                            "limit); none = unlimited", low=1, nullable=True),
        "solver": Param("highs", str, "MILP solver the cut loop drives: highs, scip (pyscipopt, the [peers] "
                        "extra; matrix formulations) or pyomo:NAME (a Pyomo SolverFactory solver, e.g. "
                        "pyomo:cbc); `deplbench solve --help` lists those available"),
        "heuristic_time": Param(None, float, "seconds the block heuristic may spend seeding the incumbent (0: off; "
                                "none: min(3, time_limit/10), unlimited without a time limit; matrix "
                                "formulations only)", low=0.0,
                                nullable=True),
        "general_settings": Param(None, str, "settings of the general formulation as NAME=VALUE[,NAME=VALUE...] "
                                  "(switches, tuning constants, work budgets; docs/DESIGN.md)", nullable=True),
        "memory_limit": Param(MEMORY_LIMIT_GIB, float, "GiB the scenarios and the model may take (estimated "
                              "before building; larger builds are refused)", low=0.0, low_inclusive=False),
    }

    def run(self, instance, **params) -> SolveResult:
        """Solve; never raises for an instance (bad options raise SolverError)."""
        return solve_milp(instance, **params)


__all__ = ["Milp"]
