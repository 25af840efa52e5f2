"""Pyomo ``SolverFactory`` solvers as peers of HiGHS: the same model, the same cut loop.

What is solved, and what is guaranteed
--------------------------------------
``solver="pyomo:NAME"`` hands the formulation's model to ``SolverFactory(NAME)``
(CBC, GLPK, Gurobi, CPLEX, HiGHS through appsi, ...; :mod:`.peers` lists
the names): a matrix formulation (counts, enumeration, flow) as the Pyomo
model of :func:`.backends.pyomo_from_matrix`, the naive formulation as the
Pyomo model it already is. :func:`~.cutloop.cut_loop` drives it exactly as
it drives HiGHS: each exact λ cut is added as a Pyomo constraint, every plan
is re-costed with ``allocate``, and ``optimal`` means (UB − LB)/UB ≤ gap
with LB the solver's dual bound. So the exactness contract holds whichever
solver runs.

The dual bound is what the solver reports (Pyomo's
``results.problem.lower_bound``), never derived from the incumbent:

* a solver that reports none (``None``, ``-inf``; e.g. ``appsi_cbc``)
  leaves the bound unproven, and the cut loop can then never say ``optimal``
  (it says ``feasible``, with the plan);
* when the solver stops "optimal" at the relative gap g asked for, a shell
  interface (an executable whose log Pyomo parses) may report the
  incumbent's value as the bound (Pyomo's CBC parser does); for those the
  bound used is at most obj − g·|obj|, which is what an "optimal within g"
  proof guarantees. Solver-API interfaces (appsi, direct, persistent)
  report the solver's own dual bound, used as it is.

Not passed: MIP starts (the incumbent is kept by the cut loop instead, as
for the Pyomo route to HiGHS), so node counts differ from the highspy route;
``nodes`` is what the interface reports (0 when it reports nothing).
A HiGHS-family peer that ends in an error is retried with tighter row
tolerances, as the direct HiGHS backend is (HiGHS #2782, see
:func:`.backends.solver_tolerances`).

References
----------
Hart et al., "Pyomo — Optimization Modeling in Python", 3rd ed., Springer
(2021), Ch. 6 (solver interfaces); J. Forrest, R. Lougee-Heimer, "CBC user
guide" (ratioGap, allowableGap, sec).
"""

from __future__ import annotations

import math
import subprocess
from typing import cast

import numpy as np

from deplbench.formulations.milp.backends import (
    MasterOutcome,
    PyomoModelBackend,
    pyomo_from_matrix,
    quiet_stdout,
    solver_tolerances,
)
from deplbench.formulations.milp.peers import PYOMO_FAMILIES, PYOMO_PREFIX, pyomo_family, quiet_pyomo


class PyomoPeerBackend(PyomoModelBackend):
    """A model solved by ``SolverFactory(NAME)`` (same interface as ``HighsBackend``).

    Rows, non-zeros, files, cuts, MIP starts (none) and the retry of a
    HiGHS-family error are those of every Pyomo-model backend
    (:class:`.backends.PyomoModelBackend`); here are the solver's options,
    its run and how its result is read.

    Parameters
    ----------
    solver : str
        ``"pyomo:NAME"``.
    pyomo_model, xvars
        The Pyomo model and its variables in column order (solutions are
        arrays and cuts are (column, value) lists, as for the other backends).
    mm : MatrixModel, optional
        The matrix model, when there is one: :meth:`write` then writes the
        named MPS/LP file of the highspy route.
    """

    def __init__(self, solver: str, pyomo_model, xvars, threads: int, seed: int, verbose: bool = False,
                 mm=None):
        from pyomo.opt import SolverFactory

        self.name = solver[len(PYOMO_PREFIX):]
        # solve_milp checks the name first (peers.check_solver), so its family is known.
        self.family = cast(str, pyomo_family(self.name))
        self.spec = PYOMO_FAMILIES[self.family]
        with quiet_pyomo(), quiet_stdout(discard=not verbose):    # appsi_highs: HiGHS's banner
            self.opt = SolverFactory(self.name)
        self._attach(pyomo_model, xvars, threads, seed)
        self.objective = next(pyomo_model.component_data_objects(self.pe.Objective, active=True))
        self.verbose = bool(verbose)
        self._mm = mm
        # Shell interfaces (a solver executable, its log parsed by Pyomo) may
        # report the incumbent's value as the bound once the solver stops
        # "optimal" at the gap asked for (Pyomo's CBC parser does); the
        # solver-API interfaces (appsi, direct, persistent) report the
        # solver's own dual bound.
        from pyomo.opt.solver.shellcmd import SystemCallSolver

        self._parses_log = isinstance(self.opt, SystemCallSolver)
        #: why optimality could not be proven, when the solver gave no bound
        self.bound_note: str | None = None
        self._lb = np.array([-math.inf if v.lb is None else float(v.lb) for v in self.xvars])
        self._ub = np.array([math.inf if v.ub is None else float(v.ub) for v in self.xvars])

    @classmethod
    def from_model(cls, solver: str, model, threads: int, seed: int, verbose: bool = False):
        """The backend for a built formulation: its matrix (``mm``) as a Pyomo
        model, or its own Pyomo model (``pyomo_model``, ``xvars``: naive)."""
        mm = getattr(model, "mm", None)
        if mm is not None:
            pm, xs = pyomo_from_matrix(mm)
            return cls(solver, pm, xs, threads, seed, verbose, mm=mm)
        return cls(solver, model.pyomo_model, model.xvars, threads, seed, verbose)

    def _options(self, rel_gap: float, node_limit: int | None, tighten: int) -> dict | str:
        """The solver's options in its own names, or a message why it cannot run."""
        spec = self.spec
        opts = {spec["rel_gap"]: float(rel_gap)}
        if spec["abs_gap"]:
            opts[spec["abs_gap"]] = 0.0
        if spec["threads"]:
            opts[spec["threads"]] = self.threads
        if spec["seed"]:
            # CBC reads randomCbcSeed 0 as "seed from the clock": shift by one
            # so that the same seed gives the same run
            opts[spec["seed"]] = self.seed % (2**31 - 2) + (1 if self.family == "cbc" else 0)
        if node_limit is not None:
            if not spec["nodes"]:
                return f"{PYOMO_PREFIX}{self.name} takes no node limit (node_limit was given)"
            opts[spec["nodes"]] = int(node_limit)
        if self.family == "highs":
            opts.update({k: v for k, v in solver_tolerances(rel_gap, tighten).items() if k != "mip_abs_gap"})
        return opts

    def _run(self, time_left: float, rel_gap: float, node_limit: int | None,
             tighten: int) -> tuple[MasterOutcome, bool]:
        """One solve; (outcome, True when a HiGHS-family solver ended in an error)."""
        from pyomo.opt import TerminationCondition as TC

        opts = self._options(rel_gap, node_limit, tighten)
        label = f"{PYOMO_PREFIX}{self.name}"
        if isinstance(opts, str):
            return MasterOutcome("error", None, math.inf, -math.inf, 0, 0, message=opts), False
        limit = max(float(time_left), 1.0 if self.family == "cbc" else 1e-3) \
            if math.isfinite(time_left) else None
        try:
            # appsi constructs a Highs() (its banner) per solve; the log only when asked for (tee)
            with quiet_stdout(discard=not self.verbose), quiet_pyomo():
                res = self.opt.solve(self.model, load_solutions=False, tee=self.verbose, timelimit=limit,
                                     options=opts)
        except subprocess.TimeoutExpired:
            # Pyomo kills a solver executable that overruns its time limit
            return MasterOutcome("time_limit", None, math.inf, -math.inf, 0, 0,
                                  message=f"{label} overran the time limit and was stopped"), False
        except Exception as exc:  # noqa: BLE001 - a solver failure is an outcome, not a crash
            return MasterOutcome("error", None, math.inf, -math.inf, 0, 0,
                                  message=f"{label} failed: {type(exc).__name__}: {exc}"), False
        tc = res.solver.termination_condition
        x = self._load(res)
        obj = float(self.pe.value(self.objective.expr)) if x is not None else math.inf
        bound = self._bound(res, x is not None and tc == TC.optimal and self._parses_log, obj, rel_gap)
        if x is not None and not math.isfinite(bound) and tc in (TC.optimal, TC.maxTimeLimit):
            self.bound_note = (f"{label} reported no dual bound, so optimality cannot be proven "
                               "(the plan is exactly costed and SAA-feasible)")
        nodes = self._nodes(res)
        if tc == TC.optimal and x is not None:
            return MasterOutcome("optimal", x, obj, bound, nodes, 0), False
        if tc in (TC.infeasible, TC.infeasibleOrUnbounded):
            return MasterOutcome("infeasible", None, math.inf, math.inf, nodes, 0), False
        if tc == TC.maxTimeLimit:
            return MasterOutcome("time_limit", x, obj, bound, nodes, 0), False
        if tc in (TC.maxEvaluations, TC.maxIterations):
            return MasterOutcome("node_limit", x, obj, bound, nodes, 0), False
        return (MasterOutcome("error", x, obj, bound, nodes, 0,
                               message=f"{label} stopped with termination condition {tc}"),
                self.family == "highs" and tc in (TC.error, TC.solverFailure, TC.internalSolverError))

    def _load(self, res) -> np.ndarray | None:
        """The solution as an array in column order, or None without one.

        A variable that appears in no row is dropped by the file writers and
        comes back without a value; any value within its bounds is optimal
        for it, so the one closest to 0 is used."""
        if len(res.solution) == 0:
            return None
        for v in self.xvars:
            v.set_value(None, skip_validation=True)
        try:
            self.model.solutions.load_from(res)
        except Exception:  # noqa: BLE001 - a result without values is no solution
            return None
        vals = np.array([math.nan if v.value is None else float(v.value) for v in self.xvars])
        missing = np.isnan(vals)
        if missing.all():
            return None
        vals[missing] = np.clip(0.0, self._lb[missing], self._ub[missing])
        for i in np.nonzero(missing)[0]:
            self.xvars[i].set_value(float(vals[i]), skip_validation=True)
        return vals

    @staticmethod
    def _bound(res, optimal: bool, obj: float, rel_gap: float) -> float:
        """The solver's reported dual bound (module docstring); -inf when none."""
        lb = res.problem.lower_bound
        try:
            lb = float(lb)
        except (TypeError, ValueError):
            return -math.inf
        if not math.isfinite(lb):
            return -math.inf
        if optimal and math.isfinite(obj):
            lb = min(lb, obj - rel_gap * abs(obj))
        return lb

    @staticmethod
    def _nodes(res) -> int:
        try:
            n = res.solver.statistics.branch_and_bound.number_of_bounded_subproblems
            return max(0, int(n)) if n is not None else 0
        except (AttributeError, TypeError, ValueError):
            return 0


__all__ = ["PyomoPeerBackend"]
