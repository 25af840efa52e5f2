"""Options of :func:`~deplbench.formulations.milp.solve_milp` and the MILP's constants.

One job: say which options exist and which values they take
(:func:`option_table`, :class:`~deplbench.params.Param` declarations), and
reject anything else with a :class:`~deplbench.errors.SolverError` that
names the option, through :func:`deplbench.params.resolve` like every other
parameter. Nothing here depends on an
instance: an option that is valid but cannot be used on a given instance
(a forced formulation whose structure is absent, a model that would not fit
in memory) is reported as a result with status ``error`` and the reason.
"""

from __future__ import annotations

import os

from deplbench.formulations.model.last_block import LOSS_TOL
from deplbench.limits import MEMORY_BUDGET_GIB
from deplbench.params import Param, resolve

#: Backends for the matrix formulations ("highs": matrices straight to highspy).
BACKENDS = ("highs", "pyomo")
#: MILP solvers with a backend of their own: HiGHS always; SCIP through
#: pyscipopt (the ``[peers]`` extra) for the matrix formulations. Any Pyomo
#: SolverFactory solver is reached as ``"pyomo:NAME"`` (see .peers).
SOLVERS = ("highs", "scip")
#: Largest |D| handled exactly by enumerating each cluster's dataset subset.
MAX_DATASETS = 6
#: Ratio of consecutive λ values in the initial cut grid: the outer
#: approximation of F is then within 1 − (2ρ^{1/4} − ρ^{1/2}) ≈ 2.5e-5.
CUT_RATIO = 1.02
#: The cut grid spans λ_ref·[1/CUT_SPAN, CUT_SPAN].
CUT_SPAN = 1e3
#: The initial cut grid is made coarser when its dense rows over all counts
#: N would hold more non-zeros than this (many clusters); see Data.n_cuts.
MAX_CUT_NONZEROS = 1_000_000
#: Safety margin added to every big-M (absolute, times 1 + |ℓmax|).
BIGM_SLACK = 1e-6
#: Cut-loop iterations at most (each is a master re-solve).
MAX_ROUNDS = 50
#: Default memory budget (GiB) for the scenario arrays and the model; a build
#: estimated above it is refused with status ``error`` before anything large
#: is allocated (docs/DESIGN.md, "what every solver promises about time and
#: memory"); the suite's one budget, deplbench.limits).
MEMORY_LIMIT_GIB = MEMORY_BUDGET_GIB


class BuildTimeout(Exception):
    """The time limit passed while the model was being built (the message
    names the stage); :func:`solve_milp` turns it into status ``time_limit``."""


class Verdict:
    """A build stage's final word instead of a model (e.g. ``infeasible`` with
    the reason): the solve returns it as the result's status and message."""

    def __init__(self, status: str, message: str):
        self.status = status
        self.message = message

    def __repr__(self) -> str:
        return f"Verdict({self.status!r}, {self.message!r})"


def _lp_file(path: str) -> str:
    """Why ``write_lp`` cannot be written ("" when it can)."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in (".lp", ".mps"):
        return f"file name must end in .lp or .mps, got {path!r}"
    parent = os.path.dirname(os.path.abspath(path))
    return "" if os.path.isdir(parent) else f"directory {parent!r} does not exist"


def option_table(formulations) -> dict[str, Param]:
    """The options of :func:`solve_milp` as :class:`~deplbench.params.Param`
    declarations (the one validation path); ``formulations`` are the
    formulation names accepted (``"fast"`` and every registered one, see
    :mod:`deplbench.formulations.milp.catalog`)."""
    return {
        "scenarios": Param(1000, int, "S, in-sample scenarios", low=1),
        "seed": Param(0, int, "seed of the scenarios and of the solver", low=0),
        "time_limit": Param(60.0, float, "wall-clock seconds for everything (None: no limit)",
                            nullable=True, low=0.0, low_inclusive=False, finite=True),
        "gap": Param(1e-4, float, "relative MIP gap", low=0.0, low_inclusive=False, high=1.0,
                     high_inclusive=False),
        "threads": Param(1, int, "solver threads", low=1),
        "formulation": Param("fast", str, "formulation", choices=tuple(formulations)),
        "write_lp": Param(None, str, "write the first master model to this .lp or .mps file",
                          nullable=True, check=_lp_file),
        "backend": Param("highs", str, "route of the matrix formulations", choices=BACKENDS),
        "node_limit": Param(None, int, "branch-and-bound nodes per solve (None: no limit)", low=1,
                            nullable=True),
        "memory_limit": Param(MEMORY_LIMIT_GIB, float, "GiB for the scenario arrays and the model",
                              low=0.0, low_inclusive=False, finite=True),
        "solver": Param("highs", str, "MILP solver (names and availability: .peers.check_solver)"),
        "heuristic_time": Param(None, float, "seconds of the incumbent heuristic (None: no limit)",
                                low=0.0, finite=True, nullable=True),
    }


def check_options(scenarios, seed, time_limit, gap, threads, formulation, write_lp, backend,
                  formulations, node_limit=None, memory_limit=MEMORY_LIMIT_GIB, solver="highs",
                  heuristic_time=None) -> None:
    """Validate the options of :func:`solve_milp` against :func:`option_table`
    (strictly: the Python API passes typed values).

    Raises
    ------
    SolverError
        One line naming the first invalid option. Whether ``solver`` is
        installed and fits the formulation is :func:`.peers.check_solver`'s.
    """
    given = {"scenarios": scenarios, "seed": seed, "time_limit": time_limit, "gap": gap, "threads": threads,
             "formulation": formulation, "backend": backend, "node_limit": node_limit,
             "write_lp": os.fspath(write_lp) if isinstance(write_lp, os.PathLike) else write_lp,
             "memory_limit": memory_limit, "solver": solver, "heuristic_time": heuristic_time}
    resolve(option_table(formulations), given, owner="solve_milp", strict=True)


__all__ = ["BACKENDS", "SOLVERS", "MAX_DATASETS", "CUT_RATIO", "CUT_SPAN", "MAX_CUT_NONZEROS", "BIGM_SLACK", "LOSS_TOL",
           "MAX_ROUNDS", "MEMORY_LIMIT_GIB", "BuildTimeout", "Verdict", "check_options",
           "option_table"]
