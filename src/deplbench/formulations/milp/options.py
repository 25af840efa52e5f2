"""Options of :func:`~deplbench.formulations.milp.solve_milp` and the MILP's constants.

One job: say which options exist and which values they take
(:func:`option_table`, :class:`~deplbench.params.Param` declarations: the
table :class:`~.settings.MilpSettings` is checked against), and reject
anything else with a :class:`~deplbench.errors.SolverError` that
names the option, through :func:`deplbench.params.resolve` like every other
parameter. Nothing here depends on an
instance: an option that is valid but cannot be used on a given instance
(a forced formulation whose structure is absent, a model that would not fit
in memory) is reported as a result with status ``error`` and the reason.
"""

from __future__ import annotations

import os

from deplbench.files import unwritable
from deplbench.formulations.model.scenarios import LOSS_TOL
from deplbench.limits import MAX_THREADS, MEMORY_BUDGET_GIB, MEMORY_LIMIT_PARAM
from deplbench.params import GAP, SEED, TIME_LIMIT, Param

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
    # asked before the build and the solve: a model file that cannot be
    # written must not cost the solve and then be lost (or silently missing)
    reason = unwritable(path)
    return f"cannot write ({reason})" if reason else ""


def option_table(formulations) -> dict[str, Param]:
    """The options of :func:`solve_milp` as :class:`~deplbench.params.Param`
    declarations: the one table, read by :class:`~.settings.MilpSettings` and declared
    by the registered ``milp`` solver as its parameters. ``formulations`` are
    the formulation names accepted (``"fast"`` and every registered one, see
    :mod:`deplbench.formulations.milp.catalog`). ``time_limit``, ``seed``,
    ``gap`` and ``memory_limit`` are the suite's shared declarations
    (:mod:`deplbench.params`, :mod:`deplbench.limits`)."""
    return {
        "scenarios": Param(1000, int, "in-sample scenarios S of the SAA quantile", low=1),
        "seed": SEED.but(help="seed of the in-sample scenarios (ScenarioSampler) and of the solver"),
        "time_limit": TIME_LIMIT.but(default=60.0, help="wall-clock seconds for build and solve (none: no limit)"),
        "gap": GAP,
        "threads": Param(1, int, "HiGHS threads", low=1, high=MAX_THREADS),
        "formulation": Param("fast", str, "fast (picks by structure: counts for order-invariant losses, "
                             "sequence enumeration for acyclic switch graphs, else flow; general beyond 6 "
                             "datasets) or one of them forced; naive is the textbook model, general the block "
                             "branch-and-bound for any switch graph and up to 12 datasets",
                             choices=tuple(formulations)),
        "write_lp": Param(None, str, "write the first master model to FILE (.lp or .mps)", nullable=True,
                          check=_lp_file),
        "backend": Param("highs", str, "fast/flow model to HiGHS directly (highs) or through Pyomo (pyomo)",
                         choices=BACKENDS),
        "node_limit": Param(None, int, "branch-and-bound nodes over all master solves (a machine-independent "
                            "limit); none = unlimited", low=1, nullable=True),
        "solver": Param("highs", str, "MILP solver the cut loop drives: highs, scip (pyscipopt, the [peers] "
                        "extra; matrix formulations) or pyomo:NAME (a Pyomo SolverFactory solver, e.g. "
                        "pyomo:cbc); `deplbench solve --help` lists those available"),
        "heuristic_time": Param(None, float, "seconds the block heuristic may spend seeding the incumbent (0: off; "
                                "none: min(3, time_limit/10), unlimited without a time limit; matrix "
                                "formulations only)", low=0.0, finite=True, nullable=True),
        "general_settings": Param(None, str, "settings of the general formulation as NAME=VALUE[,NAME=VALUE...] "
                                  "(switches, tuning constants, work budgets; docs/DESIGN.md)", nullable=True),
        "memory_limit": MEMORY_LIMIT_PARAM.but(help="GiB the scenarios and the model may take (estimated "
                                               "before building; larger builds are refused)"),
    }


__all__ = ["BACKENDS", "SOLVERS", "MAX_DATASETS", "CUT_RATIO", "CUT_SPAN", "MAX_CUT_NONZEROS", "BIGM_SLACK", "LOSS_TOL",
           "MAX_ROUNDS", "MEMORY_LIMIT_GIB", "BuildTimeout", "Verdict", "option_table"]
