"""Backends: hand a formulation's model to a MILP solver and read the outcome.

What is here
------------
* :class:`HighsBackend` — a :class:`~.matrix.MatrixModel` straight to
  highspy (no modelling layer), with MIP starts and cuts added in place.
* :class:`PyomoBackend` — a Pyomo model through Pyomo's persistent
  ``appsi_highs`` interface (the naive formulation, or a matrix model turned
  into Pyomo by :func:`pyomo_from_matrix` with ``backend="pyomo"``); what
  it shares with the ``SolverFactory`` peer (rows, cuts, files) is
  :class:`PyomoModelBackend`.
* The solver peers, built on these: SCIP (:mod:`.scip`) and any Pyomo
  ``SolverFactory`` solver (:mod:`.pyomo_peer`); which names exist:
  :mod:`.peers`; the choice between all of them for one built model:
  :func:`.routes.make_backend` (a module above the backends, so that no
  backend imports another back).

Every backend offers ``solve(time_left, rel_gap, node_limit)`` →
:class:`MasterOutcome`, ``add_cut(cols, vals, lo)``, ``set_start(x)``,
``write(path)`` and ``n_rows``; that is all the cut loop uses.

Clean stdout
------------
highspy ≥ 1.16 prints its banner when ``Highs()`` is constructed, before
``output_flag`` can be set, and Pyomo's appsi interface constructs a new
``Highs()`` on every solve. :func:`quiet_stdout` therefore points file
descriptor 1 at stderr around every construction, run and write (the CLI's
``--json`` contract: stdout carries only the requested output; the log with
``verbose=True`` goes to stderr too). The swap is process-wide, so output of
other threads during a solve also lands on stderr.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from deplbench.formulations.milp.matrix import MatrixModel

_LIBC = None


def _flush_c_stdio() -> None:
    """fflush(NULL): push out what C/C++ code buffered for fd 1."""
    global _LIBC
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None)
        _LIBC.fflush(None)
    except (OSError, AttributeError):  # pragma: no cover - no libc symbol table
        pass


@contextlib.contextmanager
def quiet_stdout(discard: bool = False):
    """Send everything written to file descriptor 1 to stderr (fd 2) meanwhile,
    or nowhere with ``discard=True``.

    Native solver code writes to fd 1 directly, so replacing ``sys.stdout``
    would not help; the descriptor itself is redirected and restored.
    ``discard`` is for output nobody asked for: HiGHS's banner, printed when
    a ``Highs()`` object is constructed (also when HiGHS only writes the MPS
    file SCIP reads), would otherwise break a progress bar on stderr.

    ``sys.stdout`` is a stream on file descriptor 1 meanwhile, so Python-level
    writes go where native ones go. Pyomo depends on this: its
    ``capture_output(capture_fd=True)`` (appsi_highs's every solve) redirects
    fds 1, 2 and the fds under ``sys.stdout`` and ``sys.stderr`` into its
    TeeStream's pipes. Under ``redirect_stdout(sys.stderr)`` (as
    :func:`deplbench.solvers.run.solve` runs every algorithm) both streams are
    fd 2, which it then redirects twice, so its record of "the original fd 2"
    is its own stdout pipe; a log handler writing to fd 2 (Pyomo's own, when
    Pyomo was first imported under that redirect, or a root handler on
    stderr) is pointed at a copy of that pipe and keeps it open after the
    TeeStream closes it: the reader thread never sees end-of-file, the join
    waits 100 s and the solve fails ("TeeStream: deadlock observed").
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    _flush_c_stdio()
    try:
        saved = os.dup(1)
    except OSError:                 # no fd 1 at all: nothing to protect
        yield
        return
    saved_stream = sys.stdout
    fd1 = None
    try:
        if discard:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            os.close(null)
        else:
            os.dup2(2, 1)
        fd1 = open(1, "w", encoding=getattr(saved_stream, "encoding", None) or "utf-8",
                   errors="backslashreplace", closefd=False)
        sys.stdout = fd1
        yield
    finally:
        if fd1 is not None:
            with contextlib.suppress(OSError, ValueError):
                fd1.flush()
        sys.stdout = saved_stream
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)


@dataclass
class MasterOutcome:
    """One master solve: status, solution, objective, dual bound, work counts."""

    status: str            # "optimal" | "time_limit" | "node_limit" | "infeasible" | "error"
    x: np.ndarray | None
    objective: float
    bound: float
    nodes: int
    lp_iterations: int
    message: str = ""
    #: extra runs after a HiGHS "Solve error" (see :func:`solver_tolerances`)
    retries: int = 0


#: HiGHS's default row tolerance of the MIP solver (``mip_feasibility_tolerance``).
MIP_FEASIBILITY_TOL = 1e-6
#: Extra HiGHS runs of one master after a "Solve error", each with the row
#: tolerances ten times tighter (see :func:`solver_tolerances`).
SOLVE_ERROR_RETRIES = 2


def solver_tolerances(rel_gap: float, tighten: int = 0) -> dict:
    """HiGHS options that let the master prove ``rel_gap``.

    HiGHS stops at an absolute gap of 1e-6 and lets rows be violated by
    1e-6 (MIP) / 1e-7 (LP), so θ may sit that far below the cut it must
    satisfy; at a relative gap below 1e-6 (e.g. 1e-9 against brute force)
    the absolute gap is switched off and the tolerances are tightened to the
    gap (HiGHS accepts down to 1e-10).

    ``tighten`` = t divides both row tolerances by 10**t (floor 1e-10): the
    retry after a HiGHS "Solve error". HiGHS ≥ 1.12 can accept a point whose
    continuous θ sits exactly ``mip_feasibility_tolerance`` below a λ cut,
    and its final check on the original (un-presolved) model then sees that
    row violated by the tolerance plus round-off (e.g. 1.00001e-6 > 1e-6) and
    discards the solution and the bound (ERGO-Code/HiGHS issue #2782). A
    stricter tolerance moves that edge; the retry is a full solve whose
    optimality HiGHS proves again, never an acceptance of the failed one.
    Every value is set explicitly, so a retry never leaks into the next round.
    """
    feas, primal = MIP_FEASIBILITY_TOL, 1e-7
    if rel_gap < 1e-6:
        feas = primal = max(1e-10, float(rel_gap))
    scale = 10.0 ** -int(tighten)
    return {"mip_abs_gap": 0.0, "mip_feasibility_tolerance": max(1e-10, feas * scale),
            "primal_feasibility_tolerance": max(1e-10, min(primal, feas * scale))}


def _retry_solve_errors(run, time_left: float, rel_gap: float, node_limit: int | None,
                        before_retry=None) -> MasterOutcome:
    """``run(time_left, rel_gap, node_limit, tighten) -> (outcome, solve_error)``
    once, and again with ``tighten`` = 1, 2, ... (:func:`solver_tolerances`) while
    HiGHS ends in "Solve error", at most :data:`SOLVE_ERROR_RETRIES` times,
    within the same time and node budget. Nodes and LP iterations of every
    run are counted; ``retries`` says how many extra runs there were."""
    t0 = time.perf_counter()
    nodes = iters = 0
    out: Any = None                # the first attempt always runs
    for attempt in range(SOLVE_ERROR_RETRIES + 1):
        left = time_left - (time.perf_counter() - t0)
        nl = None if node_limit is None else node_limit - nodes
        if attempt and (left <= 0 or (nl is not None and nl <= 0)):
            break
        if attempt and before_retry is not None:
            before_retry()
        out, solve_error = run(left, rel_gap, nl, attempt)
        nodes += out.nodes
        iters += out.lp_iterations
        out.nodes, out.lp_iterations, out.retries = nodes, iters, attempt
        if not solve_error:
            return out
    if out.retries:
        tol = solver_tolerances(rel_gap, out.retries)["mip_feasibility_tolerance"]
        out.message += f" (also after {out.retries} retries, the last with mip_feasibility_tolerance {tol:g})"
    return out


_SCHEDULER_THREADS: list[int] = []


def use_threads(threads: int) -> None:
    """HiGHS keeps one global thread scheduler per process; a run asking for a
    different thread count fails ("Not Set") unless it is reset first."""
    import highspy

    if _SCHEDULER_THREADS and _SCHEDULER_THREADS[0] != threads:
        highspy.Highs.resetGlobalScheduler(True)
    _SCHEDULER_THREADS[:] = [threads]


class HighsBackend:
    """The matrix model handed to highspy (no modelling layer in between)."""

    def __init__(self, mm: MatrixModel, threads: int, seed: int, verbose: bool = False,
                 options: dict | None = None):
        import highspy

        self.highspy = highspy
        with quiet_stdout(discard=not verbose):   # the banner, unless a log is wanted
            h = self.h = highspy.Highs()
        h.setOptionValue("output_flag", bool(verbose))
        h.setOptionValue("threads", int(threads))
        h.setOptionValue("random_seed", int(seed) % (2**31 - 1))
        # A formulation's own HiGHS settings (its ``highs_options``), e.g. the
        # enumeration model's light presolve (.enumeration.EnumModel).
        for key, value in (options or {}).items():
            h.setOptionValue(key, value)
        self.threads = int(threads)
        lp = highspy.HighsLp()
        lp.num_col_ = mm.ncol
        lp.num_row_ = mm.nrow
        lp.col_cost_ = mm.cost
        lp.col_lower_ = mm.lb
        lp.col_upper_ = mm.ub
        lp.row_lower_ = mm.row_lo
        lp.row_upper_ = mm.row_hi
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = mm.A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = mm.A.indices.astype(np.int32)
        lp.a_matrix_.value_ = mm.A.data
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in mm.integer]
        with quiet_stdout():
            h.passModel(lp)
        self.ncol = mm.ncol
        self._mm = mm
        self._named = False
        self._start: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.h.getNumRow())

    @property
    def n_nonzeros(self) -> int:
        return int(self.h.getNumNz())

    def name_rows_and_columns(self) -> None:
        """Give HiGHS the model's row and column names (only for files: the
        names of 100,000 columns cost seconds that a solve does not need)."""
        if self._named:
            return
        for i, name in enumerate(self._mm.col_names()):
            self.h.passColName(i, name)
        for i, name in enumerate(self._mm.row_names()):
            self.h.passRowName(i, name)
        self._named = True

    def write(self, path: str) -> None:
        """Write the model to ``path`` (.lp or .mps by its name).

        Raises
        ------
        OSError
            When HiGHS reports that it could not write the file, or the file is
            not there afterwards: the caller names the file to the user.
        """
        self.name_rows_and_columns()
        with quiet_stdout():
            status = self.h.writeModel(str(path))
        # HiGHS reports an unwritable file only through its status (a warning
        # is a written file with a remark, e.g. names it had to shorten)
        if status == self.highspy.HighsStatus.kError or not os.path.exists(path):
            raise OSError(f"HiGHS could not write the model (status {status.name})")

    def add_cut(self, cols, vals, lo) -> None:
        self.h.addRow(float(lo), self.highspy.kHighsInf, len(cols), np.asarray(cols, np.int32),
                      np.asarray(vals, float))

    def set_start(self, x: np.ndarray) -> None:
        self._start = np.asarray(x, float).copy()
        self._pass_start()

    def _pass_start(self) -> None:
        if self._start is None:
            return
        sol = self.highspy.HighsSolution()
        sol.col_value = list(map(float, self._start))
        sol.value_valid = True
        self.h.setSolution(sol)

    def solve(self, time_left: float, rel_gap: float, node_limit: int | None = None) -> MasterOutcome:
        """Run HiGHS on the master; after a "Solve error" run it again with
        tighter row tolerances (at most :data:`SOLVE_ERROR_RETRIES` times, see
        :func:`solver_tolerances`) within the same time and node budget."""
        return _retry_solve_errors(self._run, time_left, rel_gap, node_limit, self._pass_start)

    def _run(self, time_left: float, rel_gap: float, node_limit: int | None,
             tighten: int) -> tuple[MasterOutcome, bool]:
        """One HiGHS run; (outcome, True when HiGHS ended in "Solve error")."""
        h = self.h
        h.setOptionValue("time_limit", max(float(time_left), 1e-3))
        h.setOptionValue("mip_rel_gap", float(rel_gap))
        if node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(node_limit))
        for key, value in solver_tolerances(rel_gap, tighten).items():
            h.setOptionValue(key, value)
        use_threads(self.threads)
        with quiet_stdout():
            h.run()
        st = h.getModelStatus()
        S = self.highspy.HighsModelStatus
        if st == S.kNotset:
            # another HiGHS user in this process changed the global scheduler
            self.highspy.Highs.resetGlobalScheduler(True)
            with quiet_stdout():
                h.run()
            st = h.getModelStatus()
        info = h.getInfo()
        nodes = int(info.mip_node_count)
        iters = int(info.simplex_iteration_count)
        has_x = info.primal_solution_status == 2
        x = np.array(h.getSolution().col_value) if has_x else None
        obj = float(info.objective_function_value) if has_x else math.inf
        bound = float(info.mip_dual_bound)
        if st == S.kOptimal:
            return MasterOutcome("optimal", x, obj, bound, nodes, iters), False
        if st == S.kInfeasible:
            return MasterOutcome("infeasible", None, math.inf, math.inf, nodes, iters), False
        if st in (S.kTimeLimit, S.kInterrupt, S.kObjectiveBound):
            return MasterOutcome("time_limit", x, obj, bound, nodes, iters), False
        if st in (S.kIterationLimit, S.kSolutionLimit):   # mip_max_nodes reached
            return MasterOutcome("node_limit", x, obj, bound, nodes, iters), False
        return (MasterOutcome("error", x, obj, bound, nodes, iters,
                               message=f"HiGHS stopped with model status {h.modelStatusToString(st)!r}"),
                st == S.kSolveError)


class PyomoModelBackend:
    """What every backend on a Pyomo model shares: rows, non-zeros, files,
    cuts and (no) MIP starts; the solver and its run are the subclass's
    (:class:`PyomoBackend`, :class:`.pyomo_peer.PyomoPeerBackend`).

    ``xvars`` fixes the order of the columns so that solutions are arrays and
    cuts are (column, value) lists, exactly as for :class:`HighsBackend`.
    A subclass sets the solver up and defines ``_run(time_left, rel_gap,
    node_limit, tighten) -> (outcome, solve_error)``.
    """

    #: the matrix model the Pyomo model was built from, when the subclass
    #: keeps it: non-zeros are then read off its matrix and :meth:`write`
    #: writes the named file of the highspy route
    _mm: MatrixModel | None = None
    #: defined by each subclass: (time_left, rel_gap, node_limit, tighten) -> (outcome, solve_error)
    _run: Callable[..., tuple[MasterOutcome, bool]]

    def _attach(self, model, xvars, threads: int, seed: int) -> None:
        """Keep the model and its columns and give it the cut list."""
        import pyomo.environ as pe

        self.pe = pe
        self.model = model
        self.xvars = list(xvars)
        model.deplbench_cuts = pe.ConstraintList()
        self.threads, self.seed = int(threads), int(seed)
        self.ncol = len(self.xvars)

    @property
    def n_rows(self) -> int:
        return sum(1 for _ in self.model.component_data_objects(self.pe.Constraint, active=True))

    @property
    def n_nonzeros(self) -> int:
        """Variables appearing in each row, summed (the matrix's non-zeros)."""
        if self._mm is not None:
            return int(self._mm.A.nnz) + sum(
                len(c.body.linear_vars) for c in self.model.deplbench_cuts.values())
        from pyomo.repn import generate_standard_repn

        total = 0
        for con in self.model.component_data_objects(self.pe.Constraint, active=True):
            repn = generate_standard_repn(con.body, compute_values=True)
            total += sum(1 for c in repn.linear_coefs if c != 0)
        return total

    def write(self, path: str) -> None:
        if self._mm is not None:          # the named file of the highspy route
            HighsBackend(self._mm, self.threads, self.seed).write(path)
            return
        with quiet_stdout():
            self.model.write(str(path), io_options={"symbolic_solver_labels": True})

    def add_cut(self, cols, vals, lo) -> None:
        from pyomo.core.expr.numeric_expr import LinearExpression

        expr = LinearExpression(constant=0.0, linear_coefs=[float(v) for v in vals],
                                linear_vars=[self.xvars[int(c)] for c in cols])
        self.model.deplbench_cuts.add(expr >= float(lo))

    def set_start(self, x: np.ndarray) -> None:
        # Neither appsi_highs nor every SolverFactory interface passes MIP
        # starts; the incumbent is kept by the cut loop instead (documented
        # in solve_milp's Notes).
        return None

    def solve(self, time_left: float, rel_gap: float, node_limit: int | None = None) -> MasterOutcome:
        """One master solve, as :meth:`HighsBackend.solve`: a run that ends
        in a HiGHS "Solve error" (appsi_highs, or a HiGHS-family peer) is
        retried with tighter row tolerances within the same time and node
        budget (:func:`_retry_solve_errors`)."""
        return _retry_solve_errors(self._run, time_left, rel_gap, node_limit)


class PyomoBackend(PyomoModelBackend):
    """A Pyomo model solved through Pyomo's persistent ``appsi_highs`` interface.

    Rows, cuts and files as every Pyomo-model backend (:class:`PyomoModelBackend`).
    """

    def __init__(self, model, xvars, threads: int, seed: int, verbose: bool = False):
        from pyomo.contrib.appsi.solvers.highs import Highs

        self._attach(model, xvars, threads, seed)
        self.opt = Highs()
        self.opt.config.load_solution = False
        self.opt.config.stream_solver = bool(verbose)
        self.opt.highs_options = {"threads": int(threads), "random_seed": int(seed) % (2**31 - 1)}

    def _run(self, time_left: float, rel_gap: float, node_limit: int | None,
             tighten: int) -> tuple[MasterOutcome, bool]:
        """One solve; (outcome, True when HiGHS ended in "Solve error")."""
        import highspy
        from pyomo.contrib.appsi.base import TerminationCondition as TC

        self.opt.config.time_limit = max(float(time_left), 1e-3) if math.isfinite(time_left) else None
        self.opt.config.mip_gap = float(rel_gap)
        extra = solver_tolerances(rel_gap, tighten)
        if node_limit is not None:
            extra["mip_max_nodes"] = int(node_limit)
        self.opt.highs_options = {**self.opt.highs_options, **extra}
        use_threads(self.threads)
        # appsi constructs a new Highs() (and prints its banner) on every solve
        with quiet_stdout(discard=not self.opt.config.stream_solver):
            res = self.opt.solve(self.model)
        hi = self.opt._solver_model
        solve_error = hi.getModelStatus() == highspy.HighsModelStatus.kSolveError
        info = hi.getInfo()
        nodes, iters = int(info.mip_node_count), int(info.simplex_iteration_count)
        tc = res.termination_condition
        has_x = res.best_feasible_objective is not None
        x = None
        if has_x:
            res.solution_loader.load_vars()
            x = np.array([v.value if v.value is not None else 0.0 for v in self.xvars], dtype=float)
        obj = float(res.best_feasible_objective) if has_x else math.inf
        bound = res.best_objective_bound
        bound = float(bound) if bound is not None else -math.inf
        if tc == TC.optimal:
            return MasterOutcome("optimal", x, obj, bound, nodes, iters), False
        if tc == TC.infeasible:
            return MasterOutcome("infeasible", None, math.inf, math.inf, nodes, iters), False
        if tc in (TC.maxTimeLimit, TC.interrupted, TC.objectiveLimit):
            return MasterOutcome("time_limit", x, obj, bound, nodes, iters), False
        if tc == TC.maxIterations or (node_limit is not None and nodes >= node_limit):
            return MasterOutcome("node_limit", x, obj, bound, nodes, iters), False
        return (MasterOutcome("error", x, obj, bound, nodes, iters,
                               message=f"HiGHS (through Pyomo) stopped with {tc}"), solve_error)


def pyomo_from_matrix(mm: MatrixModel):
    """The fast formulation's matrix as a Pyomo model (one linear row per row)."""
    import pyomo.environ as pe
    from pyomo.core.expr.numeric_expr import LinearExpression

    m = pe.ConcreteModel(name="deplbench_milp_fast")
    m.I = pe.RangeSet(0, mm.ncol - 1)

    def dom(_, i):
        return pe.Integers if mm.integer[i] else pe.Reals

    def bnd(_, i):
        lo, hi = mm.lb[i], mm.ub[i]
        return (None if not math.isfinite(lo) else float(lo), None if not math.isfinite(hi) else float(hi))

    m.x = pe.Var(m.I, domain=dom, bounds=bnd)
    xs = [m.x[i] for i in range(mm.ncol)]
    m.obj = pe.Objective(expr=LinearExpression(
        constant=0.0, linear_coefs=[float(c) for c in mm.cost[mm.cost != 0]],
        linear_vars=[xs[i] for i in np.nonzero(mm.cost)[0]]), sense=pe.minimize)
    R = mm.A.tocsr()
    m.rows = pe.ConstraintList()
    for r in range(mm.nrow):
        lo, hi = mm.row_lo[r], mm.row_hi[r]
        a, b = R.indptr[r], R.indptr[r + 1]
        expr = LinearExpression(constant=0.0, linear_coefs=R.data[a:b].tolist(),
                                linear_vars=[xs[i] for i in R.indices[a:b]])
        m.rows.add((None if not math.isfinite(lo) else float(lo), expr,
                    None if not math.isfinite(hi) else float(hi)))
    return m, xs


def highs_version() -> str:
    """``"highspy X"`` as installed."""
    import importlib.metadata as md

    return f"highspy {md.version('highspy')}"


__all__ = ["quiet_stdout", "highs_version", "MasterOutcome", "HighsBackend", "PyomoBackend",
           "PyomoModelBackend",
           "pyomo_from_matrix", "use_threads", "solver_tolerances", "SOLVE_ERROR_RETRIES"]
