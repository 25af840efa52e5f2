"""Options of :func:`~deplbench.formulations.milp.solve_milp` and the MILP's constants.

One job: say which options exist, which values they take, and reject anything
else with a :class:`~deplbench.errors.SolverError` that names the option
(the style of ``scipy.optimize._milp._milp_iv``). Nothing here depends on an
instance: an option that is valid but cannot be used on a given instance
(a forced formulation whose structure is absent, a model that would not fit
in memory) is reported as a result with status ``error`` and the reason.
"""

from __future__ import annotations

import math
import os

import numpy as np

from deplbench.errors import SolverError
from deplbench.limits import MEMORY_BUDGET_GIB

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
#: N would hold more non-zeros than this (many clusters); see _Data.n_cuts.
MAX_CUT_NONZEROS = 1_000_000
#: Safety margin added to every big-M (absolute, times 1 + |ℓmax|).
BIGM_SLACK = 1e-6
#: Tolerance on ℓ_s(K) ≤ ℓmax when counting in-sample violations (the same
#: as ``Scenarios.violations``).
LOSS_TOL = 1e-9
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


def _positive_int(value, name: str, low: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        kind = "a positive" if low == 1 else "a non-negative"
        raise SolverError(f"{name}: must be {kind} integer, got {value!r}")


def _positive_real(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(value) or value <= 0:
        raise SolverError(f"{name}: must be a positive finite number, got {value!r}")


def check_options(scenarios, seed, time_limit, gap, threads, formulation, write_lp, backend,
                  formulations, node_limit=None, memory_limit=MEMORY_LIMIT_GIB, solver="highs",
                  heuristic_time=None) -> None:
    """Validate the options of :func:`solve_milp`.

    Parameters
    ----------
    formulations : sequence of str
        The formulation names accepted (``"fast"`` and every registered one,
        see :mod:`deplbench.formulations.milp.catalog`).

    Raises
    ------
    SolverError
        Naming the first invalid option.
    """
    _positive_int(scenarios, "scenarios")
    _positive_int(seed, "seed", low=0)
    if time_limit is not None:   # None: no wall-clock limit
        _positive_real(time_limit, "time_limit")
    if isinstance(gap, bool) or not isinstance(gap, (int, float, np.floating)) or not math.isfinite(gap) \
            or not 0 < gap < 1:
        raise SolverError(f"gap: must be a relative gap in (0, 1), got {gap!r}")
    _positive_int(threads, "threads")
    if formulation not in formulations:
        raise SolverError(f"formulation: must be one of {list(formulations)}, got {formulation!r}")
    if backend not in BACKENDS:
        raise SolverError(f"backend: must be one of {list(BACKENDS)}, got {backend!r}")
    if node_limit is not None:
        _positive_int(node_limit, "node_limit")
    _positive_real(memory_limit, "memory_limit")
    if heuristic_time is not None and (isinstance(heuristic_time, bool)
                                       or not isinstance(heuristic_time, (int, float, np.integer, np.floating))
                                       or not math.isfinite(heuristic_time) or heuristic_time < 0):
        raise SolverError(f"heuristic_time: must be a finite number of seconds ≥ 0 or None, got {heuristic_time!r}")
    if write_lp is not None:
        ext = os.path.splitext(str(write_lp))[1].lower()
        if ext not in (".lp", ".mps"):
            raise SolverError(f"write_lp: file name must end in .lp or .mps, got {write_lp!r}")
        parent = os.path.dirname(os.path.abspath(str(write_lp)))
        if not os.path.isdir(parent):
            raise SolverError(f"write_lp: directory {parent!r} does not exist")


__all__ = ["BACKENDS", "SOLVERS", "MAX_DATASETS", "CUT_RATIO", "CUT_SPAN", "MAX_CUT_NONZEROS", "BIGM_SLACK", "LOSS_TOL",
           "MAX_ROUNDS", "MEMORY_LIMIT_GIB", "BuildTimeout", "Verdict", "check_options"]
