"""Solve a library file with HiGHS (highspy) or SCIP (pyscipopt), as any user would.

One job: read a library model from its file — nothing of deplbench's own
model objects is used, so what is measured is what a MILP solver sees — solve
it under a time limit and a relative gap, and report the outcome in one
solver-independent record (:class:`MpsOutcome`). Solver output never reaches
standard output: file descriptor 1 points at standard error while the solver
reads and runs (:func:`~deplbench.formulations.milp.backends.quiet_stdout`).

References
----------
T. Koch et al., "MIPLIB 2010", Math. Prog. Comp. 3 (2011) — the status and
gap conventions of MIP benchmark tables.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass

from deplbench.errors import SolverError
from deplbench.formulations.milp.backends import SOLVE_ERROR_RETRIES, quiet_stdout, solver_tolerances
from deplbench.params import Param

#: Solvers that can re-solve a library file.
MPS_SOLVERS = ("highs", "scip")

#: The library's numeric arguments, each declared once with its bounds (:mod:`deplbench.params`,
#: the one validation path). ``build_library`` and ``check_library`` check theirs through this
#: table with typed values (``strict``: a string or a bool is not a number here), each refusal
#: one line naming the argument and the bound; ``deplbench library`` names its option instead.
PARAMETERS: dict[str, Param] = {
    "time_limit": Param(60.0, float, "seconds per solve", low=0.0, low_inclusive=False, finite=True),
    "solve_time_limit": Param(None, float, "seconds per deplbench real-x solve and true-optimum solve "
                              "(none: time_limit)", low=0.0, low_inclusive=False, finite=True, nullable=True),
    "gap": Param(1e-6, float, "relative gap of the solves that give the .solu values", low=0.0,
                 low_inclusive=False, high=1.0, high_inclusive=False),
    "tolerance": Param(1e-5, float, "relative tolerance of the comparison with a .solu value", low=0.0,
                       low_inclusive=False, high=1.0, high_inclusive=False),
}
#: :func:`solve_mps`'s own: a gap of 0 asks the solver to prove the optimum exactly.
MPS_PARAMETERS: dict[str, Param] = {
    "time_limit": PARAMETERS["time_limit"],
    "gap": Param(1e-6, float, "relative gap at which the solve stops (0: prove the optimum)", low=0.0,
                 high=1.0, high_inclusive=False),
    "threads": Param(1, int, "solver threads", low=1),
}


@dataclass
class MpsOutcome:
    """What a MILP solver says about one MPS file.

    Attributes
    ----------
    solver, version : str
    status : str
        ``optimal`` (proven within the relative gap asked for), ``infeasible``,
        ``time_limit``, ``unbounded`` or ``error``.
    primal : float or None
        Objective of the best solution found (None: no solution).
    dual : float or None
        Proven lower bound on the optimum (minimisation); None if unknown.
    gap : float or None
        (primal − dual)/|primal| (0 when both are 0; None without a primal).
    seconds : float
        Wall time of the solve (reading the file excluded).
    nodes : int or None
        Branch-and-bound nodes.
    rows, cols, nonzeros, integers : int
        Size of the model as the solver read it.
    message : str
        Solver status text or the error.
    retries : int
        Extra HiGHS runs after a "Solve error" (:func:`_highs_runs`).
    """

    solver: str
    version: str
    status: str
    primal: float | None
    dual: float | None
    gap: float | None
    seconds: float
    nodes: int | None
    rows: int
    cols: int
    nonzeros: int
    integers: int
    message: str = ""
    retries: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def relative_gap(primal: float | None, dual: float | None) -> float | None:
    """(primal − dual)/|primal|, the MIP-style gap of a minimisation (0 when
    both are 0; None without a primal or a finite dual)."""
    if primal is None or dual is None or not math.isfinite(primal) or not math.isfinite(dual):
        return None
    if primal == 0:
        return 0.0 if dual >= 0 else math.inf
    return max(0.0, (primal - dual) / abs(primal))


def _check_args(path, solver, time_limit, gap, threads) -> None:
    """Raise :class:`SolverError` naming the first invalid argument."""
    if solver not in MPS_SOLVERS:
        raise SolverError(f"solver: must be one of {list(MPS_SOLVERS)}, got {solver!r}")
    if not os.path.isfile(path):
        raise SolverError(f"path: no MPS file {str(path)!r}")
    if _is_nl(path) and solver != "scip":
        raise SolverError(f"solver: {solver!r} reads no .nl file (its model has nonlinear rows); use 'scip'")
    for name, value in (("time_limit", time_limit), ("gap", gap), ("threads", threads)):
        MPS_PARAMETERS[name].convert(name, value, strict=True)


def solve_mps(path: str, solver: str = "highs", time_limit: float = 60.0, gap: float = 1e-6,
              threads: int = 1, seed: int = 0) -> MpsOutcome:
    """Read ``path`` and solve it with ``solver``.

    Parameters
    ----------
    path : str
        An MPS file (free or fixed format, optionally gzipped: both solvers
        read it), or for SCIP an AMPL ``.nl`` file (optionally ``.nl.gz``,
        decompressed to a temporary directory first: SCIP's AMPL reader
        takes no gzip).
    solver : {"highs", "scip"}
    time_limit : float, default 60
        Wall-clock seconds for the solve.
    gap : float, default 1e-6
        Relative MIP gap at which the solver stops with ``optimal``.
    threads : int, default 1
    seed : int, default 0
        The solver's random seed (same file, same seed: same run).

    Returns
    -------
    MpsOutcome

    Raises
    ------
    SolverError
        For an invalid argument, or when SCIP is asked for and pyscipopt is
        not installed. A file the solver cannot read is an outcome with
        status ``error``, not an exception.
    """
    _check_args(path, solver, time_limit, gap, threads)
    if solver == "highs":
        return _solve_highs(str(path), float(time_limit), float(gap), threads, seed)
    if _is_nl(path) and str(path).endswith(".gz"):
        # SCIP's AMPL reader takes no gzip: decompress beside the name files
        # (stub.col, stub.row) so that its columns keep their names.
        import gzip
        import shutil
        import tempfile

        plain = os.path.basename(str(path)[:-3])
        with tempfile.TemporaryDirectory() as tmp:
            with gzip.open(path, "rb") as fin, open(os.path.join(tmp, plain), "wb") as fout:
                shutil.copyfileobj(fin, fout)
            for ext in (".col", ".row"):
                side = str(path)[:-6] + ext
                if os.path.isfile(side):
                    shutil.copyfile(side, os.path.join(tmp, plain[:-3] + ext))
            return _solve_scip(os.path.join(tmp, plain), float(time_limit), float(gap), threads, seed)
    return _solve_scip(str(path), float(time_limit), float(gap), threads, seed)


def _is_nl(path) -> bool:
    return str(path).endswith((".nl", ".nl.gz"))


def _solve_highs(path, time_limit, gap, threads, seed) -> MpsOutcome:
    """HiGHS on the file; a "Solve error" is run again with tighter row
    tolerances (see :func:`_highs_runs`)."""
    import highspy

    with quiet_stdout(discard=True):   # the banner (output_flag is off for the solve)
        h = highspy.Highs()
        version = _highs_version(h)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", int(threads))
        h.setOptionValue("random_seed", int(seed))
        h.setOptionValue("mip_rel_gap", float(gap))
        h.setOptionValue("mip_abs_gap", 0.0)
        st = h.readModel(path)
    if st == highspy.HighsStatus.kError:
        return MpsOutcome("highs", version, "error", None, None, None, 0.0, None, 0, 0, 0, 0,
                          f"HiGHS could not read {path!r}")
    lp = h.getLp()
    integers = sum(1 for t in (lp.integrality_ or []) if t != highspy.HighsVarType.kContinuous)
    seconds, nodes, retries = _highs_runs(h, time_limit, gap)
    ms = h.getModelStatus()
    info = h.getInfo()
    S = highspy.HighsModelStatus
    text = h.modelStatusToString(ms)
    if retries:
        tol = solver_tolerances(gap, retries)["mip_feasibility_tolerance"]
        text += (f" (after {retries} {'retry' if retries == 1 else 'retries'} of a 'Solve error', the last "
                 f"with mip_feasibility_tolerance {tol:g})")
    status = {S.kOptimal: "optimal", S.kInfeasible: "infeasible", S.kTimeLimit: "time_limit",
              S.kUnbounded: "unbounded"}.get(ms, "error")
    has_x = info.primal_solution_status == 2
    primal = float(info.objective_function_value) if has_x else None
    dual = float(info.mip_dual_bound) if integers else primal
    if dual is not None and not math.isfinite(dual):
        dual = None
    if status == "optimal" and dual is None:
        dual = primal
    if status == "error" and not has_x:
        dual = None                      # a failed run proves nothing
    return MpsOutcome("highs", version, status, primal, dual, relative_gap(primal, dual),
                      seconds, nodes if integers else 0, int(lp.num_row_),
                      int(lp.num_col_), int(len(lp.a_matrix_.value_)), integers, text, retries)


def _highs_runs(h, time_limit: float, gap: float) -> tuple[float, int, int]:
    """Run ``h`` once, and again while it ends in "Solve error" (at most
    :data:`~deplbench.formulations.milp.backends.SOLVE_ERROR_RETRIES` times),
    each retry with the row tolerances ten times tighter
    (:func:`~deplbench.formulations.milp.backends.solver_tolerances`), within the
    one time limit. HiGHS ≥ 1.12 can end a MIP in "Solve error" when its
    final check on the un-presolved model sees a λ-cut row violated by the
    feasibility tolerance plus round-off, e.g. 1.00001e-6 > 1e-6
    (ERGO-Code/HiGHS issue #2782; the library's ``knapsack-weakly-n10``). A
    retry is a new solve whose result HiGHS proves afresh; nothing of the
    failed run is kept. The first run uses HiGHS's defaults, as any user's.

    Returns (seconds of all runs, nodes of all runs, retries).
    """
    import highspy

    t0 = time.perf_counter()
    nodes = 0
    retries = 0
    for attempt in range(SOLVE_ERROR_RETRIES + 1):
        left = float(time_limit) - (time.perf_counter() - t0)
        if attempt:
            if left <= 0:
                break
            h.clearSolver()              # start afresh: no state of the failed run
            for key, value in solver_tolerances(gap, attempt).items():
                h.setOptionValue(key, value)
            retries = attempt
        h.setOptionValue("time_limit", max(left, 1e-3))
        with quiet_stdout():
            h.run()
        nodes += max(0, int(h.getInfo().mip_node_count))
        if h.getModelStatus() != highspy.HighsModelStatus.kSolveError:
            break
    return time.perf_counter() - t0, nodes, retries


def _highs_version(h) -> str:
    try:
        return f"{h.versionMajor()}.{h.versionMinor()}.{h.versionPatch()}"
    except Exception:  # noqa: BLE001 - the version is informative only
        from importlib.metadata import version
        return version("highspy")


def _solve_scip(path, time_limit, gap, threads, seed) -> MpsOutcome:
    try:
        import pyscipopt
    except ImportError:
        raise SolverError("solver: 'scip' needs pyscipopt (pip install 'deplbench[peers]')") from None
    m = pyscipopt.Model()
    m.hideOutput()
    version = str(m.version()) if hasattr(m, "version") else pyscipopt.__version__
    try:
        with quiet_stdout():
            m.readProblem(path)
    except Exception as exc:  # noqa: BLE001 - an unreadable file is an outcome
        return MpsOutcome("scip", version, "error", None, None, None, 0.0, None, 0, 0, 0, 0,
                          f"SCIP could not read {path!r}: {exc}")
    m.setParam("limits/time", float(time_limit))
    m.setParam("limits/gap", float(gap))
    m.setParam("limits/absgap", 0.0)
    m.setParam("randomization/randomseedshift", int(seed))
    m.setParam("parallel/maxnthreads", int(threads))
    rows, cols = m.getNConss(), m.getNVars()
    integers = sum(1 for v in m.getVars() if v.vtype() in ("BINARY", "INTEGER", "IMPLINT"))
    nonzeros = _scip_nonzeros(m)
    t0 = time.perf_counter()
    with quiet_stdout():
        m.optimize()
    seconds = time.perf_counter() - t0
    text = m.getStatus()
    status = {"optimal": "optimal", "gaplimit": "optimal", "infeasible": "infeasible",
              "timelimit": "time_limit", "unbounded": "unbounded"}.get(text, "error")
    primal = float(m.getObjVal()) if m.getNSols() > 0 else None
    dual: float | None
    dual = float(m.getDualbound())
    if not math.isfinite(dual) or abs(dual) >= m.infinity():
        dual = None
    return MpsOutcome("scip", version, status, primal, dual, relative_gap(primal, dual), seconds,
                      int(m.getNTotalNodes()), rows, cols, nonzeros, integers, text)


def _scip_nonzeros(m) -> int:
    """Non-zeros of the linear constraints as read (0 when SCIP cannot say)."""
    total = 0
    try:
        for c in m.getConss():
            total += len(m.getValsLinear(c))
    except Exception:  # noqa: BLE001 - informative only
        return 0
    return total


__all__ = ["MPS_PARAMETERS", "MPS_SOLVERS", "PARAMETERS", "MpsOutcome", "relative_gap", "solve_mps"]
